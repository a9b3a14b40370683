"""The one error type the emulator raises for kernels that would not compile or run on hardware."""


class NkiError(Exception):
    """A violated NKI/hardware rule. The runner adds the kernel source line from the traceback."""


class NotEmulated(NkiError, AttributeError):
    """A public NKI API the emulator does not implement (an AttributeError too, so hasattr() is False)."""
