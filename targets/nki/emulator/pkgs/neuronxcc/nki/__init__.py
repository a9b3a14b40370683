"""Emulated legacy `neuronxcc.nki` (speedpatch): the same emulator as `nki`."""

from nki import baremetal, benchmark, jit, profile, simulate, simulate_kernel, trace  # noqa: F401

from . import compiler, isa, language, typing  # noqa: F401, E402

SPEEDPATCH_EMULATOR = True
