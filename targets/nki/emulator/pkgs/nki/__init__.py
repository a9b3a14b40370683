"""Emulated `nki` (speedpatch). Only importable inside speedpatch's evaluation subprocess."""

from speedpatch.targets.nki.emulator.jit import (  # noqa: F401
    baremetal,
    benchmark,
    jit,
    profile,
    simulate,
    simulate_kernel,
    trace,
)

from . import compiler, isa, language, typing  # noqa: F401, E402

SPEEDPATCH_EMULATOR = True
