"""The one error type the emulator raises for kernels that would not compile or run on hardware."""


class NkiError(Exception):
    """A violated NKI/hardware rule. The runner adds the kernel source line from the traceback."""
