"""nki.compiler: allocation hints and compiler switches, which the emulator accepts and ignores."""

from speedpatch.targets.nki.emulator.tensor import psum as _psum
from speedpatch.targets.nki.emulator.tensor import sbuf as _sbuf


class _Allocator:
    def __init__(self, buffer):
        self._speedpatch_buffer = buffer

    def mod_alloc(self, *args, **kwargs):
        return self

    def alloc(self, *args, **kwargs):
        return self


sbuf = _Allocator(_sbuf)
psum = _Allocator(_psum)


def skip_middle_end_transformations(fn):
    return fn


def enable_stack_allocator(*args, **kwargs):
    return args[0] if args and callable(args[0]) else (lambda fn: fn)
