"""nki.compiler: allocation control and compiler switches.

mod_alloc(base_addr=..., num_free_tiles=(n, ...)) is honoured: only n blocks of the leading (block) axes are
physical, block i is physical block i % n (its data and its dependencies are those of that memory). Explicit addresses are not checked for
overlap (the emulator places tiles itself). no_reorder() and skip_middle_end_transformations are
accepted: they only restrict the compiler's scheduling, which the model already keeps in program order.
"""

import contextlib
import math

from speedpatch.targets.nki.emulator.tensor import psum as _psum
from speedpatch.targets.nki.emulator.tensor import sbuf as _sbuf


class _Allocator:
    def __init__(self, buffer, blocks=0, free_tiles=()):
        self._speedpatch_buffer = buffer
        self._speedpatch_blocks = blocks
        self._speedpatch_free_tiles = free_tiles  # per block axis (tensor.Allocation aliases blocks modulo these)

    def __repr__(self):
        return f"nki.compiler.{self._speedpatch_buffer.name}"

    def mod_alloc(self, *args, base_addr=None, base_bank=None, num_free_tiles=None, **kwargs):
        free = tuple(int(n) for n in num_free_tiles) if num_free_tiles else ()
        return _Allocator(self._speedpatch_buffer, math.prod(free) if free else 0, free)

    def alloc(self, *args, **kwargs):
        return self

    def auto_alloc(self, *args, **kwargs):
        return self


sbuf = _Allocator(_sbuf)
psum = _Allocator(_psum)


def skip_middle_end_transformations(fn):
    return fn


def enable_stack_allocator(*args, **kwargs):
    return args[0] if args and callable(args[0]) else (lambda fn: fn)


def force_auto_alloc(*args, **kwargs):
    return args[0] if args and callable(args[0]) else (lambda fn: fn)


@contextlib.contextmanager
def no_reorder():
    """Instructions in this block keep their program order (the emulator's engines already do)."""
    yield
