"""The untrusted side of an NKI evaluation: the process that executes the candidate's kernel module.

Run as `python -I -S kernel_side.py FILENAME ENDS_AT FD NUMPY_FOLDER` (stdlib only, so that it needs nothing from
speedpatch). Requests go to the trusted process on the fd named by the third argument, replies come back on stdin; stdout/stderr are
the candidate's own log. Here `nki`, `nki.language`, `nki.isa`, `nki.compiler` (and the legacy
`neuronxcc.nki.*`) are PROXIES: every attribute, call, index and operator on them or on the tiles they
return is forwarded to the trusted process, which holds all tensor data, runs the emulator and does the
cost accounting. This process only ever holds handles (numbers); shapes, dtypes names and ints come back
as plain values, tensor data never does. The decorators (nki.jit...) are local: they mark the function
the trusted side will launch.

The import allowlist below is hygiene, not the boundary: a candidate that escapes the interpreter here
still has no data, no cost model and no verdict to reach (see docs/threat-model.md, "NKI").
"""

from __future__ import annotations

import builtins
import contextlib
import faulthandler
import json
import os
import struct
import sys
import time
import traceback
import types
from collections.abc import Callable
from typing import Any

CANDIDATE_MODULE = "speedpatch_candidate"
# Top-level modules the kernel module may import (the nki names are served by the proxies).
ALLOWED_IMPORTS = frozenset({
    "nki", "neuronxcc", "torch_neuronx", "numpy", "math", "cmath", "functools", "itertools", "typing", "operator",
    "collections", "dataclasses", "enum", "abc", "__future__", "numbers", "string",
})
LOCAL_DECORATORS = ("jit", "baremetal", "benchmark", "profile", "trace")
_HEADER = struct.Struct(">I")
BATCH_BYTES = 32 * 1024  # deferred messages are written in batches of about this size
_DUMPS = json.JSONEncoder(separators=(",", ":")).encode  # one encoder (json.dumps with options builds one per call)


class NkiError(Exception):
    """An error the trusted emulator reported for the last operation (message only, never data)."""


_ERRORS: dict[str, type[BaseException]] = {
    "NkiError": NkiError, "TypeError": TypeError, "ValueError": ValueError, "AttributeError": AttributeError,
    "IndexError": IndexError, "KeyError": KeyError, "ZeroDivisionError": ZeroDivisionError,
    "StopIteration": StopIteration, "ImportError": ImportError,
}


class Channel:
    """Length-prefixed JSON messages: one request, one reply."""

    def __init__(self, rfd: int, wfd: int, filename: str) -> None:
        self.rfile = os.fdopen(rfd, "rb", buffering=1 << 16)
        self.wfd = wfd
        self.filename = filename
        self.released: list[int] = []  # handles whose proxies died; piggybacked on the next request
        self.next_id = 0  # handles this side names for deferred results are negative
        self.pending: list[bytes] = []  # deferred messages not written yet
        self.pending_bytes = 0

    def line(self) -> int:
        """The candidate line that issued the current operation (for the cost model's hot lines)."""
        frame: types.FrameType | None = sys._getframe(2)
        for _ in range(6):
            if frame is None:
                return 0
            if frame.f_code.co_filename == self.filename:
                return frame.f_lineno
            frame = frame.f_back
        return 0

    def request(self, op: str, *args: Any) -> Any:
        released, self.released = self.released, []
        data = _DUMPS([op, self.line(), released, *args]).encode()
        self._write_all(data)
        reply = self.receive()
        if reply[0] == "ok":
            return decode(reply[1])
        if reply[0] == "err":
            exc = _ERRORS.get(reply[1], NkiError)(reply[2])
            if len(reply) > 3 and reply[3]:  # an earlier deferred operation failed: its line, not this one
                # an attribute of our own on the exception, read where the failure is reported; no class declares it
                exc.speedpatch_line = reply[3]  # type: ignore[attr-defined]
            raise exc
        raise NkiError(f"unexpected reply from the emulator: {str(reply)[:200]}")

    def defer(self, op: str, *args: Any, kind: str = "T") -> Proxy:
        """An operation whose result is a tile (or a loop): sent without waiting for the reply (the trusted
        side keeps the result under a handle chosen here; an error is reported at the next request that
        waits)."""
        self.next_id -= 1
        released, self.released = self.released, []
        data = _DUMPS([op, self.line(), released, self.next_id, *args]).encode()
        self.queue(data)
        return Proxy(self.next_id, {kind: 1} if kind else {})  # T: a tile, A: an index array

    def queue(self, data: bytes) -> None:
        """A message that needs no answer: batched, so that the trusted process wakes once per batch."""
        self.pending.append(_HEADER.pack(len(data)))
        self.pending.append(data)
        self.pending_bytes += len(data) + 4
        if self.pending_bytes >= BATCH_BYTES:
            self._write_all(b"")

    def _write_all(self, data: bytes) -> None:
        """Everything queued, then `data` as one message (b"": only the queue)."""
        chunks = self.pending
        if data:
            chunks.append(_HEADER.pack(len(data)))
            chunks.append(data)
        self.pending, self.pending_bytes = [], 0
        view = memoryview(b"".join(chunks))
        while view:
            view = view[os.write(self.wfd, view):]

    def send(self, op: str, *args: Any) -> list[Any]:
        """A lifecycle message (ready / return / error); the reply is the next command."""
        released, self.released = self.released, []
        data = json.dumps([op, 0, released, *args], separators=(",", ":"), default=str).encode()
        self._write_all(data)
        return self.receive()

    def receive(self) -> list[Any]:
        head = self.rfile.read(4)
        if len(head) < 4:
            os._exit(3)  # the trusted side is gone
        (size,) = _HEADER.unpack(head)
        return json.loads(self.rfile.read(size))


CHANNEL: Channel


# ---- values on the wire (see server.py for the trusted side of the same encoding) -------------------


def encode(value: Any) -> Any:
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, Proxy):
        return ["h", value._h]
    if isinstance(value, tuple):
        return ["t", [encode(v) for v in value]]
    if isinstance(value, list):
        return ["L", [encode(v) for v in value]]
    if isinstance(value, slice):
        return ["s", encode(value.start), encode(value.stop), encode(value.step)]
    if value is Ellipsis:
        return ["e"]
    if isinstance(value, range):
        return ["r", value.start, value.stop, value.step]
    if isinstance(value, dict):
        return ["d", [[str(k), encode(v)] for k, v in value.items()]]
    if isinstance(value, bool) or isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    module = type(value).__module__ or ""
    if module == "numpy" or module.startswith("numpy."):
        return _encode_numpy(value)
    if isinstance(value, type) and (value.__module__ or "").startswith("numpy"):
        return ["np", value.__name__]
    if getattr(value, "__name__", "") in NUMPY_OPS:  # np.sum & co. (a function of another module's type)
        return _encode_numpy(value)
    if type(value).__name__ == "function" and module not in ("numpy",):
        # a function of the kernel's own (an allocation function for nki.compiler's alloc): only its place
        # travels, the trusted side receives a token no API but the allocators accepts
        return ["fn"]
    raise TypeError(f"cannot pass a {type(value).__name__} to nki (pass tiles, numbers, shapes or nki objects)")


# NumPy functions public kernels pass as ALU / reduction operators (op=np.add, op0=np.multiply...): they
# travel by name and the trusted side maps the name back to the same function (server.NUMPY_OPS).
NUMPY_OPS = frozenset({
    "add", "subtract", "multiply", "divide", "true_divide", "maximum", "minimum", "power", "exp", "log", "tanh",
    "sqrt", "negative", "abs", "absolute", "reciprocal", "sin", "cos", "square", "sign", "floor", "ceil",
    "greater", "greater_equal", "less", "less_equal", "equal", "not_equal", "logical_and", "logical_or",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "sum", "max", "min", "prod", "mean", "amax", "amin",
})


def _encode_numpy(value: Any) -> Any:
    import numpy as np

    name = getattr(value, "__name__", "")
    if name in NUMPY_OPS and getattr(np, name, None) is value:
        return ["uf", name]
    if isinstance(value, np.ndarray):
        if value.size > 1 << 20:
            raise TypeError(f"a host array of {value.size} elements cannot be passed to nki")
        return ["a", str(value.dtype), list(value.shape), value.reshape(-1).tolist()]
    if isinstance(value, np.dtype):
        return ["np", value.name]
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise TypeError(f"cannot pass a {type(value).__name__} to nki")


def decode(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    tag = value[0]
    if tag == "h":
        return Proxy(value[1], value[2] if len(value) > 2 else None)
    if tag == "t":
        return tuple(decode(v) for v in value[1])
    if tag == "L":
        return [decode(v) for v in value[1]]
    if tag == "r":
        return range(value[1], value[2], value[3])
    if tag == "s":
        return slice(decode(value[1]), decode(value[2]), decode(value[3]))
    if tag == "e":
        return Ellipsis
    raise NkiError(f"unknown value from the emulator: {tag!r}")


# ---- proxies ------------------------------------------------------------------------------------------


# Operators that, with a tile operand, always give a tile (engine ops): they need not wait for a reply.
_TILE_OPERATORS = frozenset({"add", "sub", "mul", "truediv", "iadd", "isub", "imul", "itruediv"})


# Operators that, on index arrays and numbers only, always give an index array.
_ARRAY_OPERATORS = frozenset({"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and_", "or_", "xor", "lt",
                              "le", "gt", "ge", "iadd", "isub", "imul", "itruediv"})


def _is_tile(value: Any) -> bool:
    return isinstance(value, Proxy) and value._meta is not None and "T" in value._meta


def _is_array(value: Any) -> bool:
    return isinstance(value, Proxy) and value._meta is not None and "A" in value._meta


def _op(name: str, reflected: bool = False) -> Callable[[Proxy, Any], Any]:
    """A dunder method of Proxy for the operator `name` (reflected: the __r*__ form, operands swapped)."""
    def method(self: Proxy, other: Any) -> Any:
        a, b = (other, self) if reflected else (self, other)
        number = other is None or type(other) in (int, float, bool)
        if name in _TILE_OPERATORS and (_is_tile(self) and (number or isinstance(other, Proxy)) or _is_tile(other)):
            return CHANNEL.defer("dop", name, encode(a), encode(b))
        if name in _ARRAY_OPERATORS and _is_array(self) and (number or _is_array(other)):
            return CHANNEL.defer("dop", name, encode(a), encode(b), kind="A")
        return CHANNEL.request("op", name, encode(a), encode(b))

    return method


def _slicing(key: Any) -> bool:
    """Whether indexing an array with `key` certainly gives an array (slices, None, ...)."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(p is None or p is Ellipsis or isinstance(p, slice) for p in parts)


class Proxy:
    """A handle to an object that lives in the trusted process (a tile, a dtype, an nki function...)."""

    __slots__ = ("_h", "_meta", "__weakref__")
    __array_ufunc__ = None  # NumPy operators defer to ours instead of converting the proxy

    def __init__(self, handle: int, meta: dict[str, Any] | None = None) -> None:
        self._h = handle
        self._meta = meta

    def __del__(self) -> None:
        try:
            CHANNEL.released.append(self._h)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __getattr__(self, name: str) -> Any:
        meta = self._meta
        if meta is not None and name in meta:
            value = meta[name]
            if isinstance(value, list):  # as it came over the wire: decode once
                value = meta[name] = decode(value) if value and value[0] == "h" else tuple(value)
            return value
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = CHANNEL.request("get", self._h, name)
        if meta is not None and "T" in meta and name in ("shape", "ndim", "dtype"):  # fixed for a tile's life
            meta[name] = value
        return value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        encoded = ([encode(a) for a in args], {k: encode(v) for k, v in kwargs.items()})
        meta = self._meta
        if meta is not None and meta.get("returns_tile"):
            result = CHANNEL.defer("dcall", self._h, *encoded)
            if "creates" in meta:  # nl.ndarray / zeros / ones / full: shape and dtype are the arguments
                _creation_meta(result, meta["creates"], args, kwargs)
            return result
        if meta is not None and meta.get("returns_array"):
            return CHANNEL.defer("dcall", self._h, *encoded, kind="A")
        return CHANNEL.request("call", self._h, *encoded)

    def __getitem__(self, key: Any) -> Any:
        if _is_tile(self):
            return CHANNEL.defer("ditem", self._h, encode(key))
        if _is_array(self) and _slicing(key):
            return CHANNEL.defer("ditem", self._h, encode(key), kind="A")
        return CHANNEL.request("item", self._h, encode(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        if _is_tile(self):
            self_handle = self._h
            CHANNEL.next_id -= 1  # unused result slot keeps the deferred message layout uniform
            released, CHANNEL.released = CHANNEL.released, []
            data = _DUMPS(["dset", CHANNEL.line(), released, CHANNEL.next_id, self_handle, encode(key),
                           encode(value)]).encode()
            CHANNEL.queue(data)
            return
        CHANNEL.request("setitem", self._h, encode(key), encode(value))

    def __len__(self) -> int:
        return CHANNEL.request("len", self._h)

    def __iter__(self) -> Any:
        items = CHANNEL.request("iter", self._h)
        return iter(items) if isinstance(items, tuple) else _RemoteIterator(items)

    def __bool__(self) -> bool:
        return CHANNEL.request("bool", self._h)

    def __index__(self) -> int:
        return CHANNEL.request("index", self._h)

    __int__ = __index__

    def __neg__(self) -> Any:
        return CHANNEL.request("op", "neg", encode(self), None)

    def __pos__(self) -> Any:
        return CHANNEL.request("op", "pos", encode(self), None)

    def __invert__(self) -> Any:
        return CHANNEL.request("op", "invert", encode(self), None)

    def __eq__(self, other: Any) -> Any:
        if isinstance(other, Proxy) and other._h == self._h:
            return True
        return CHANNEL.request("op", "eq", encode(self), encode(other))

    def __ne__(self, other: Any) -> Any:
        if isinstance(other, Proxy) and other._h == self._h:
            return False
        return CHANNEL.request("op", "ne", encode(self), encode(other))

    def __hash__(self) -> int:
        return hash(("proxy", self._h))

    def __repr__(self) -> str:
        meta = self._meta or {}
        return f"<nki object {meta.get('repr', self._h)}>"

    __add__, __radd__ = _op("add"), _op("add", True)
    __sub__, __rsub__ = _op("sub"), _op("sub", True)
    __mul__, __rmul__ = _op("mul"), _op("mul", True)
    __truediv__, __rtruediv__ = _op("truediv"), _op("truediv", True)
    __floordiv__, __rfloordiv__ = _op("floordiv"), _op("floordiv", True)
    __mod__, __rmod__ = _op("mod"), _op("mod", True)
    __pow__, __rpow__ = _op("pow"), _op("pow", True)
    __and__, __rand__ = _op("and_"), _op("and_", True)
    __or__, __ror__ = _op("or_"), _op("or_", True)
    __xor__, __rxor__ = _op("xor"), _op("xor", True)
    __lt__, __le__, __gt__, __ge__ = _op("lt"), _op("le"), _op("gt"), _op("ge")
    __iadd__, __isub__, __imul__, __itruediv__ = _op("iadd"), _op("isub"), _op("imul"), _op("itruediv")


def _creation_meta(result: Proxy, dtype_at: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """What a new tensor's shape and dtype are, when the call says so plainly (saves a round trip)."""
    shape = args[0] if args else kwargs.get("shape")
    dtype = args[dtype_at] if len(args) > dtype_at else kwargs.get("dtype")
    meta = result._meta
    if meta is None:
        return
    if isinstance(shape, tuple) and all(type(d) is int for d in shape):
        meta["shape"], meta["ndim"] = shape, len(shape)
    if isinstance(dtype, Proxy) and dtype._meta is not None and "itemsize" in dtype._meta:
        meta["dtype"] = dtype


class _LocalLoop:
    """nl.affine_range / static_range / sequential_range: the indices are counted here, and each
    iteration boundary is sent (without waiting) to the emulator's own loop object, which scopes the tiles
    allocated in an iteration to it."""

    def __init__(self, remote: Proxy, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.remote, self.args, self.kwargs = remote, args, kwargs

    def __len__(self) -> int:
        return len(range(*[int(a) for a in self.args]))

    def __iter__(self) -> Any:
        indices = range(*[int(a) for a in self.args])
        loop = CHANNEL.defer("dcall", self.remote._h, [encode(a) for a in self.args],
                             {k: encode(v) for k, v in self.kwargs.items()}, kind="")
        steps = CHANNEL.defer("diter", loop._h, kind="")
        for i in indices:
            CHANNEL.defer("dnext", steps._h, kind="")
            yield i
        CHANNEL.defer("dnext", steps._h, kind="")  # the emulator's loop ends (and closes its scope)


def _dynamic_slice(remote: Proxy) -> Any:
    """nl.ds(start, size, step=1) with plain ints is the slice start:start+size*step:step (no round trip)."""

    def ds(start: Any, size: Any, step: Any = 1) -> Any:
        if type(start) is int and type(size) is int and type(step) is int:
            return slice(start, start + size * step, step)
        return remote(start, size, step)

    return ds


def _loop_function(remote: Proxy) -> Any:
    def make(*args: Any, **kwargs: Any) -> _LocalLoop:
        return _LocalLoop(remote, args, kwargs)

    return make


class _RemoteIterator:
    def __init__(self, handle: Proxy) -> None:
        self.handle = handle

    def __iter__(self) -> _RemoteIterator:
        return self

    def __next__(self) -> Any:
        value = CHANNEL.request("next", self.handle._h)  # (item,), or None at the end
        if value is None:
            raise StopIteration
        return value[0]


# ---- the nki modules as this process sees them ------------------------------------------------------


class LocalKernel:
    """What nki.jit & co. return here: the function, and its SPMD grid when launched as kernel[g](...)."""

    def __init__(self, fn: Any, grid: tuple[int, ...] = ()) -> None:
        self.fn = fn
        self.grid = grid
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__wrapped__ = fn

    def __getitem__(self, grid: Any) -> LocalKernel:
        dims = grid if isinstance(grid, tuple) else (grid,)
        return LocalKernel(self.fn, tuple(int(d) for d in dims))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _decorator(fn: Any = None, *_: Any, **__: Any) -> Any:
    """Bare (@nki.jit) or with arguments (@nki.jit(mode=...), @nki.baremetal(save_neff_name=...))."""
    if isinstance(fn, LocalKernel):
        return fn
    if callable(fn):
        return LocalKernel(fn)
    return lambda f: f if isinstance(f, LocalKernel) else LocalKernel(f)


@contextlib.contextmanager
def _no_reorder() -> Any:
    """nki.compiler.no_reorder(): the emulator's engines keep program order already, so a plain block."""
    yield


def _identity_decorator(*args: Any, **_: Any) -> Any:
    return args[0] if args and callable(args[0]) else (lambda fn: fn)


class _Anything:
    """nki.typing annotations (nt.tensor[...], nt.mutable_tensor): accepted and meaningless here."""

    def __getattr__(self, name: str) -> _Anything:
        return self

    def __getitem__(self, key: Any) -> _Anything:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> _Anything:
        return self


# The ignores below set attributes on modules built here (mypy knows only ModuleType's own); setattr() with a
# constant name would hide the same thing from mypy and is what ruff's B010 asks to write this way.
def _remote_module(name: str, members: list[Any]) -> types.ModuleType:
    module = types.ModuleType(name)
    for attr, value in members:
        setattr(module, attr, value)
    module.__all__ = [a for a in vars(module) if not a.startswith("_")]  # type: ignore[attr-defined]
    return module


def install_nki_modules() -> None:
    served = dict(CHANNEL.request("mod"))  # one round trip for the whole API
    language = _remote_module("nki.language", served["language"])
    for name in ("affine_range", "static_range", "sequential_range"):
        remote = getattr(language, name, None)
        if isinstance(remote, Proxy):
            setattr(language, name, _loop_function(remote))
    if isinstance(getattr(language, "ds", None), Proxy):
        language.ds = _dynamic_slice(language.ds)  # type: ignore[attr-defined]
    isa = _remote_module("nki.isa", served["isa"])
    compiler = _remote_module("nki.compiler", served["compiler"])
    compiler.skip_middle_end_transformations = _identity_decorator  # type: ignore[attr-defined]
    compiler.enable_stack_allocator = _identity_decorator  # type: ignore[attr-defined]
    compiler.no_reorder = _no_reorder  # type: ignore[attr-defined]
    typing_mod = types.ModuleType("nki.typing")
    typing_mod.__getattr__ = lambda _name: _Anything()  # type: ignore[method-assign]
    for root_name in ("nki", "neuronxcc.nki"):
        root = types.ModuleType(root_name)
        root.__path__ = []  # a package, so that `import nki.language` works
        for deco in LOCAL_DECORATORS:
            setattr(root, deco, _decorator)
        root.simulate_kernel = lambda kernel, *a, **k: kernel(*a, **k)  # type: ignore[attr-defined]
        root.simulate = lambda kernel: kernel  # type: ignore[attr-defined]
        root.language, root.isa, root.compiler, root.typing = language, isa, compiler, typing_mod  # type: ignore[attr-defined]
        sys.modules[root_name] = root
        for sub, mod in (("language", language), ("isa", isa), ("compiler", compiler), ("typing", typing_mod)):
            sys.modules[f"{root_name}.{sub}"] = mod
    legacy = types.ModuleType("neuronxcc")
    legacy.__path__ = []
    legacy.nki = sys.modules["neuronxcc.nki"]  # type: ignore[attr-defined]
    sys.modules["neuronxcc"] = legacy
    # `from torch_neuronx import nki_jit` (older NKI documentation examples): only the decorator, no torch
    torch_neuronx = types.ModuleType("torch_neuronx")
    torch_neuronx.nki_jit = _decorator  # type: ignore[attr-defined]
    sys.modules["torch_neuronx"] = torch_neuronx


_real_import = builtins.__import__


def _guarded_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    """Imports written in the candidate's code must be on the allowlist; library internals are not checked."""
    caller = sys._getframe(1).f_globals.get("__name__", "")
    if caller == CANDIDATE_MODULE or caller == "builtins":
        top = name.split(".")[0]
        if level or top not in ALLOWED_IMPORTS:
            raise ImportError(f"import of {name!r} is not allowed in an NKI kernel (allowed: nki, numpy, math, "
                              f"functools, itertools, typing...)", name=name)
    return _real_import(name, globals, locals, fromlist, level)


def load_candidate(source: str, filename: str) -> types.ModuleType:
    module = types.ModuleType(CANDIDATE_MODULE)
    module.__file__ = filename
    sys.modules[CANDIDATE_MODULE] = module
    code = compile(source, filename, "exec")
    exec(code, module.__dict__)  # noqa: S102 - this whole process is the sandboxed candidate
    return module


SOURCE_LINES: list[str] = []


def _describe(exc: BaseException, filename: str) -> dict[str, Any]:
    line, text = 0, ""
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        line, text = exc.lineno or 0, (exc.text or "").strip()
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            line, text = frame.lineno or 0, (frame.line or "").strip()
    deferred = getattr(exc, "speedpatch_line", 0)
    if isinstance(deferred, int) and deferred > 0:
        line = deferred
        text = SOURCE_LINES[line - 1].strip() if line <= len(SOURCE_LINES) else ""
    if not text and 0 < line <= len(SOURCE_LINES):
        text = SOURCE_LINES[line - 1].strip()
    return {"type": type(exc).__name__, "message": str(exc)[:2000], "line": line, "text": text[:200],
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]}


def _kernels(module: types.ModuleType) -> dict[str, Any]:
    found = {}
    for name, value in vars(module).items():
        fn = value.fn if isinstance(value, LocalKernel) else value
        if isinstance(fn, types.FunctionType) and getattr(fn, "__module__", "") == CANDIDATE_MODULE:
            code = fn.__code__
            params = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
            found[name] = {"params": params, "grid": list(getattr(value, "grid", ())),
                           "jit": isinstance(value, LocalKernel)}
    return found


def main(argv: list[str]) -> int:
    global CHANNEL
    filename, ends_at, request_fd = argv[0], float(argv[1]), int(argv[2])
    if len(argv) > 3 and argv[3]:
        sys.path.append(argv[3])  # NumPy's folder (this interpreter runs without site directories)
    if ends_at > 0:
        deadline = max(0.1, ends_at - time.time())
        # On a hang, print where the kernel is: the trusted side names the line.
        faulthandler.dump_traceback_later(deadline, exit=True)
    CHANNEL = Channel(0, request_fd, filename)
    first = CHANNEL.receive()
    source = first[1]
    SOURCE_LINES.extend(source.splitlines())
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the candidate reads nothing from us
    try:
        install_nki_modules()
        builtins.__import__ = _guarded_import
        module = load_candidate(source, filename)
    except BaseException as exc:  # noqa: BLE001 - reported, with its line, as the candidate's error
        what = "compile_error" if isinstance(exc, (SyntaxError, ImportError)) else "runtime_error"
        CHANNEL.send("error", what, _describe(exc, filename))
        return 0
    command = CHANNEL.send("ready", _kernels(module))
    while command and command[0] == "launch":
        _, name, args, kwargs = command
        try:
            value = getattr(module, name)
            fn = value.fn if isinstance(value, LocalKernel) else value
            result = fn(*[decode(a) for a in args], **{k: decode(v) for k, v in kwargs.items()})
            payload = encode(result)
        except BaseException as exc:  # noqa: BLE001
            command = CHANNEL.send("error", "runtime_error", _describe(exc, filename))
            continue
        command = CHANNEL.send("return", payload)  # `result` stays alive until its handle has been read
        result = None
    return 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # a TextIOWrapper when run as a script
    os._exit(main(sys.argv[1:]) or 0)
