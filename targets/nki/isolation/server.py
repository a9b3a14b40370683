"""The trusted side of an isolated NKI evaluation: it starts the kernel process (kernel_side.py, sandboxed
where the machine allows), serves its requests against the real emulator, and launches its kernel.

Every request is hostile data. What the kernel process can reach is exactly what the allowlists below
name: the public nki.language / nki.isa / nki.compiler API, and a few attributes of the objects those
return (a tile's shape, dtype, reshape...). Tensor data, the emulator's modules, the cost model, the
inputs, the reference and the verdict are never reachable: a handle only ever refers to an object that
was handed out, and only allowlisted operations run on it. Handles other than module-level API objects
die at the start of every launch, so nothing computed for one input set can be reused for the next.
"""

from __future__ import annotations

import enum
import inspect
import operator
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from speedpatch.targets.nki.emulator import costmodel
from speedpatch.targets.nki.emulator import dtypes as E_dtypes
from speedpatch.targets.nki.emulator import isa as E_isa
from speedpatch.targets.nki.emulator import language as E_nl
from speedpatch.targets.nki.emulator import tensor as E_tensor
from speedpatch.targets.nki.isolation.kernel_side import NUMPY_OPS
from speedpatch.targets.nki.isolation.process import KernelProcess, ProtocolError

# The public API a kernel may use. Anything else in the emulator's modules (its NumPy, cost model, tile
# internals, helpers) is not served.
NL_FUNCTIONS = frozenset({
    "affine_range", "arange", "copy", "device_print", "ds", "full", "load", "load_transpose2d", "matmul",
    "ndarray", "num_programs", "ones", "program_id", "program_ndim", "sequential_range", "static_range", "store",
    "transpose", "where", "zeros", "zeros_like", "shared_constant", "spmd_dim", "nc", "finfo", "iinfo",
    "empty_like", "loop_reduce", "dropout", "softmax", "rms_norm", "broadcast_to", "shared_identity_matrix",
})
ISA_FUNCTIONS = frozenset({
    "activation", "activation_reduce", "bn_aggr", "bn_stats", "dma_copy", "iota", "memset", "nc_matmul",
    "nc_transpose", "reciprocal", "tensor_copy", "tensor_reduce", "tensor_scalar", "tensor_scalar_reduce",
    "tensor_tensor", "tensor_tensor_scan", "affine_select", "scalar_tensor_tensor",
    "max8", "nc_find_index8", "tensor_partition_reduce", "dma_transpose", "dropout", "range_select",
    "select_reduce", "tensor_copy_predicated", "dma_compute",
})
# nki.isa functions that return a plain value (answered at once, never deferred like the instructions)
ISA_VALUE_FUNCTIONS = frozenset({"get_nc_version"})
# API calls that always return a tile: the kernel process sends them without waiting for the answer.
NL_TILE_FUNCTIONS = frozenset({"copy", "full", "load", "load_transpose2d", "matmul", "ndarray", "ones", "store",
                               "transpose", "where", "zeros", "zeros_like", "empty_like", "loop_reduce",
                               "dropout", "broadcast_to", "shared_identity_matrix"})
# Creation functions: where their dtype argument is (shape is the first), for the kernel's own bookkeeping.
CREATION_DTYPE_ARG = {"ndarray": 1, "zeros": 1, "ones": 1, "full": 2}
API_VALUE_TYPES = (E_dtypes.DType, E_tensor.Buffer, E_nl.NkiOp, E_nl.Reduction, enum.Enum, E_nl._TileSize, E_nl._Fp32,
                   E_nl._TypeInfo, E_nl._MGrid)
ATTRIBUTES: dict[type, frozenset[str]] = {
    E_tensor.Tile: frozenset({"shape", "dtype", "ndim", "buffer", "name", "reshape", "broadcast_to", "ap",
                               *E_tensor.VIEW_METHODS}),
    E_dtypes.DType: frozenset({"name", "itemsize"}),
    E_nl._Fp32: frozenset({"min"}),
    E_nl._TypeInfo: frozenset({"bits", "min", "max", "eps", "tiny", "dtype"}),
    E_tensor.Buffer: frozenset({"name"}),
    E_nl.NkiOp: frozenset({"name"}),
    E_nl.Reduction: frozenset({"name"}),
    E_nl._Grid: frozenset({"p", "x", "y", "z"}),
    E_nl._TileSize: frozenset({"pmax", "gemm_stationary_fmax", "gemm_moving_fmax", "psum_fmax", "bn_stats_fmax",
                               "psum_partition_size", "sbuf_partition_size"}),
    np.ndarray: frozenset({"shape", "ndim", "size", "T", "reshape"}),
}
CALLABLE_ATTRIBUTES = frozenset({"reshape", "broadcast_to", "ap", "mod_alloc", "alloc", *E_tensor.VIEW_METHODS})
OPERATORS: dict[str, Callable[..., Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "and_": operator.and_,
    "or_": operator.or_, "xor": operator.xor, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
    "ge": operator.ge, "eq": operator.eq, "ne": operator.ne, "neg": operator.neg, "pos": operator.pos,
    "invert": operator.invert, "iadd": operator.iadd, "isub": operator.isub, "imul": operator.imul,
    "itruediv": operator.itruediv,
}
# Objects an operator may touch: their dunder methods are engine ops (tiles) or pure index arithmetic.
OPERAND_TYPES = (E_tensor.Tile, np.ndarray, np.generic, E_dtypes.DType, E_tensor.Buffer, E_nl.NkiOp,
                 E_nl.Reduction, enum.Enum, E_tensor.par_dim)
INDEX_ARRAY_LIMIT = 1 << 22
# Loop objects (nl.affine_range...): iterated on this side, so that the emulator sees each iteration.
LOOP_TYPES = (E_nl._LoopRange,)


DEFERRED = {"dcall": "call", "ditem": "item", "dop": "op", "dset": "setitem", "diter": "iter", "dnext": "next"}


class KernelError(Exception):
    """The kernel raised (or its module failed to load): status and what kernel_side described."""

    def __init__(self, status: str, info: dict[str, Any]) -> None:
        super().__init__(info.get("message", ""))
        self.status = status
        self.info = info


class Table:
    """Handles given to the kernel process. API objects keep one handle for the whole evaluation; others
    (tiles, index arrays, iterators) are dropped when released and at every launch."""

    def __init__(self) -> None:
        self.objects: dict[int, tuple[Any, bool]] = {}
        self.interned: dict[int, int] = {}  # id(obj) -> handle
        self.transient: set[int] = set()
        self.next = 1

    def add(self, obj: Any, callable_: bool = False, intern: bool = False) -> int:
        if intern:
            found = self.interned.get(id(obj))
            if found is not None:
                return found
        handle = self.next
        self.next += 1
        self.objects[handle] = (obj, callable_)
        if intern:
            self.interned[id(obj)] = handle
        else:
            self.transient.add(handle)
        return handle

    def add_at(self, handle: int, obj: Any) -> None:
        """A result under the (negative) handle the kernel process chose for it."""
        self.objects[handle] = (obj, False)
        self.transient.add(handle)

    def get(self, handle: Any) -> tuple[Any, bool]:
        try:
            return self.objects[handle]
        except (KeyError, TypeError):
            raise ValueError(
                "the kernel used a tile or object that no longer exists (one from an earlier launch, input set "
                "or SPMD program; kernels may not keep state between launches)"
            ) from None

    def release(self, handles: list[Any]) -> None:
        for h in handles:
            if h in self.transient:
                self.transient.discard(h)
                self.objects.pop(h, None)

    def clear_launch(self) -> None:
        for h in self.transient:
            self.objects.pop(h, None)
        self.transient.clear()


def served_modules() -> dict[str, dict[str, Any]]:
    """name -> {attribute: object} of the API modules a kernel sees."""
    import nki.compiler as compiler  # the emulator's package folder is on sys.path in the trusted runner

    language = {}
    for name, value in vars(E_nl).items():
        if name.startswith("_"):
            continue
        if name in NL_FUNCTIONS or isinstance(value, API_VALUE_TYPES) or value is E_tensor.par_dim:
            language[name] = value
    isa = {}
    for name, value in vars(E_isa).items():
        if name.startswith("_"):
            continue
        is_enum_class = isinstance(value, type) and issubclass(value, enum.Enum) and value is not enum.Enum
        if name in ISA_FUNCTIONS or name in ISA_VALUE_FUNCTIONS or isinstance(value, (enum.Enum, E_tensor.Buffer)) \
                or is_enum_class:
            isa[name] = value
    return {"language": language, "isa": isa, "compiler": {"sbuf": compiler.sbuf, "psum": compiler.psum}}


class Server:
    """One kernel process and the objects it holds handles to."""

    def __init__(self, process: KernelProcess) -> None:
        self.process = process
        self.filename = process.filename
        self.table = Table()
        self.modules = served_modules()
        self.printer = self.device_print  # one bound method, so that its handle is interned
        self.modules["language"]["device_print"] = self.printer
        self.api_callables = {id(v) for mod in self.modules.values() for v in mod.values()
                              if callable(v) and not isinstance(v, (enum.Enum, E_dtypes.DType, E_tensor.Buffer))}
        self.tile_callables = {id(v) for name, v in self.modules["language"].items()
                               if name in NL_TILE_FUNCTIONS or isinstance(v, (E_nl.NkiOp, E_nl.Reduction))}
        self.tile_callables |= {id(v) for name, v in self.modules["isa"].items() if name in ISA_FUNCTIONS}
        self.deferred_error: list[Any] | None = None  # [kind, message, line] of the first failed deferred op
        # [kind, message, line] of the first request that failed after it had written a tile: the kernel may
        # catch the error, but the launch is not measured (see _failed)
        self.partial_failure: list[Any] | None = None
        self._trampolines: dict[int, Callable[..., Any]] = {}
        self.requests = 0
        self._source_lines = -1
        self.last_trace: Any = None
        self.last_args: tuple[Any, ...] = ()
        self.last_kwargs: dict[str, Any] = {}
        self.last_result: Any = None

    def device_print(self, prefix: Any, x: Any = None, **_: Any) -> None:
        """nl.device_print: into the kernel's log (never onto the trusted process's output)."""
        shown = x.read() if isinstance(x, E_tensor.Tile) else x
        self.process.append_log(f"device_print: {str(prefix)[:200]} {np.array2string(np.asarray(shown), threshold=64)[:2000]}\n")

    # ---- values -----------------------------------------------------------------------------------
    def encode(self, value: Any) -> Any:
        kind = type(value)
        if value is None or kind in (bool, int, float, str):
            return value
        if kind is tuple:
            return ["t", [self.encode(v) for v in value]]
        if kind is list:
            return ["L", [self.encode(v) for v in value]]
        if kind is range:
            return ["r", value.start, value.stop, value.step]
        if kind is slice:
            return ["s", self.encode(value.start), self.encode(value.stop), self.encode(value.step)]
        if value is Ellipsis:
            return ["e"]
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.integer):
            return int(value)
        if isinstance(value, np.floating):  # only index arithmetic reaches here: tensor data never does
            return float(value)
        if isinstance(value, E_tensor.Tile):
            h = self.table.add(value)
            return ["h", h, {"T": 1, "shape": list(value.shape), "ndim": len(value.shape),
                             "dtype": self.encode(value.dtype)}]
        if isinstance(value, E_dtypes.DType):
            return ["h", self.table.add(value, intern=True), {"name": value.name, "itemsize": value.itemsize}]
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "iufb":
                raise TypeError(f"{value.dtype} arrays are not index expressions")
            return ["h", self.table.add(value), {"A": 1}]
        if isinstance(value, (Iterator, *LOOP_TYPES)):
            return ["h", self.table.add(value)]
        if isinstance(value, _Method):
            return ["h", self.table.add(value, callable_=True)]
        if isinstance(value, (E_nl._Grid, E_tensor.DynSlice, E_tensor.par_dim)):
            return ["h", self.table.add(value)]
        if id(value) in self.api_callables or isinstance(value, API_VALUE_TYPES) or value is E_tensor.par_dim:
            handle = self.table.add(value, callable_=callable(value), intern=True)
            if value is self.modules["language"].get("arange"):
                return ["h", handle, {"returns_array": 1}]
            if id(value) not in self.tile_callables:
                constants = self._constant_attributes(value)
                return ["h", handle, constants] if constants else ["h", handle]
            meta: dict[str, Any] = {"returns_tile": 1}
            creates = CREATION_DTYPE_ARG.get(getattr(value, "__name__", ""))
            if creates is not None and value is getattr(E_nl, value.__name__, None):
                meta["creates"] = creates
            return ["h", handle, meta]
        if isinstance(value, type) and issubclass(value, enum.Enum):
            return ["h", self.table.add(value, intern=True)]
        if type(value).__name__ == "_Allocator":  # nki.compiler.sbuf / psum
            return ["h", self.table.add(value, intern=True)]
        raise TypeError(f"the emulator returned a {type(value).__name__}, which kernels cannot hold")

    @staticmethod
    def _constant_attributes(value: Any) -> dict[str, Any]:
        """The allowed plain attributes of an API constant (nl.tile_size.pmax, nl.sbuf.name...), sent
        along with its handle so that reading them costs no round trip."""
        if isinstance(value, enum.Enum):
            return {k: v for k, v in (("name", value.name), ("value", value.value)) if type(v) in (int, str)}
        for kind, names in ATTRIBUTES.items():
            if isinstance(value, kind) and kind in (E_nl._TileSize, E_nl._Fp32, E_nl._TypeInfo, E_tensor.Buffer):
                found = {name: getattr(value, name, None) for name in names}
                return {k: v for k, v in found.items() if type(v) in (int, float, str)}
        return {}

    def decode(self, value: Any, depth: int = 0) -> Any:
        if not isinstance(value, list):
            if isinstance(value, dict):
                raise TypeError("malformed value")
            return value
        if depth > 16 or not value:
            raise TypeError("malformed value")
        tag = value[0]
        if tag == "h":
            return self.table.get(value[1])[0]
        if tag in ("t", "L"):
            items = [self.decode(v, depth + 1) for v in value[1]]
            return tuple(items) if tag == "t" else items
        if tag == "s":
            return slice(*(self.decode(v, depth + 1) for v in value[1:4]))
        if tag == "e":
            return Ellipsis
        if tag == "r":
            return range(int(value[1]), int(value[2]), int(value[3]))
        if tag == "d":
            return {str(k): self.decode(v, depth + 1) for k, v in value[1]}
        if tag == "np":
            return _numeric_dtype(value[1])
        if tag == "fn":  # a function of the kernel's own (its body stays in the kernel process)
            return KERNEL_FUNCTION
        if tag == "uf":  # a NumPy operator by name (op=np.add): only the ones kernels use as ALU ops
            if value[1] not in NUMPY_OPS:
                raise TypeError(f"numpy.{str(value[1])[:40]} is not an operator kernels can pass to nki")
            return getattr(np, value[1])
        if tag == "a":
            size = int(np.prod([int(d) for d in value[2]]))
            if size > INDEX_ARRAY_LIMIT or len(value[3]) != size:
                raise TypeError("malformed host array")
            return np.asarray(value[3], dtype=_numeric_dtype(value[1])).reshape([int(d) for d in value[2]])
        raise TypeError(f"malformed value tag {tag!r}")

    # ---- requests ---------------------------------------------------------------------------------
    def _at_line(self, line: int) -> Callable[..., Any]:
        """A caller whose frame is the kernel's source line, so the cost model credits the right line."""
        fn = self._trampolines.get(line)
        if fn is None:
            code = _call.__code__.replace(co_filename=self.filename, co_firstlineno=max(1, line))
            fn = self._trampolines[line] = types.FunctionType(code, {})
        return fn

    def handle(self, message: list[Any]) -> list[Any] | None:
        """The reply to one request; None for a deferred one (d*: its result is stored under the handle
        the kernel process chose, a failure is told at the next request that waits)."""
        op, line, released = message[0], message[1], message[2]
        self.table.release(released)
        self.requests += 1
        line = line if type(line) is int and 0 < line <= self.source_lines else 0
        writes = E_tensor.write_count()
        if op in DEFERRED:
            if self.deferred_error is None:
                try:
                    slot = message[3]
                    if type(slot) is not int or slot >= 0 or slot in self.table.objects:
                        raise TypeError("malformed deferred request")
                    result = self._dispatch(DEFERRED[op], line, message[4:])
                    if op not in ("dset", "dnext"):
                        if not isinstance(result, (E_tensor.Tile, Iterator, range, np.ndarray, *LOOP_TYPES)):
                            raise TypeError(f"{op[1:]} gave a {type(result).__name__}, not a tile")
                        if isinstance(result, np.ndarray) and result.dtype.kind not in "biuf":
                            raise TypeError(f"{result.dtype} arrays are not index expressions")
                        self.table.add_at(slot, result)
                except Exception as exc:  # noqa: BLE001
                    self.deferred_error = [type(exc).__name__, str(exc)[:2000], line]
                    self._failed(writes, self.deferred_error)
            return None
        if self.deferred_error is not None:
            failed, self.deferred_error = self.deferred_error, None
            return ["err", *failed]
        try:
            result = self._dispatch(op, line, message[3:])
            return ["ok", self.encode(result)]
        except Exception as exc:  # noqa: BLE001 - the kernel's error, told back to the kernel
            kind = type(exc).__name__
            self._failed(writes, [kind, str(exc)[:2000], line])
            return ["err", kind, str(exc)[:2000]]

    def _failed(self, writes_before: int, failure: list[Any]) -> None:
        """A request failed. If it had already written a tile, its instruction may have stored its result
        without being charged (the cost is issued after the write; an access to an evicted PSUM tile fails
        only then): a kernel that catches such errors got every instruction for free (red-team: a polynomial
        correct at 9.9 us against the honest 22.4 us). Such a launch is never measured, caught or not. A
        failure before any write (a wrong argument, an API probe) changed nothing and stays the kernel's
        to handle."""
        if self.partial_failure is None and E_tensor.write_count() != writes_before:
            self.partial_failure = failure

    def _dispatch(self, op: str, line: int, args: list[Any]) -> Any:
        if op == "call":
            fn, is_callable = self.table.get(args[0])
            if not is_callable:
                raise TypeError(f"{_describe(fn)} is not callable from a kernel")
            call_args = self.decode(["L", args[1]])
            kwargs = self.decode(["d", [[k, v] for k, v in dict(args[2]).items()]])
            if line:
                return self._at_line(line)(fn, call_args, kwargs)
            return fn(*call_args, **kwargs)
        if op == "get":
            obj, _ = self.table.get(args[0])
            return self._getattr(obj, str(args[1]))
        if op == "item":
            obj, _ = self.table.get(args[0])
            if not isinstance(obj, (E_tensor.Tile, np.ndarray, E_nl._MGrid, E_nl._Grid, *LOOP_TYPES)):
                raise TypeError(f"{_describe(obj)} cannot be indexed in a kernel")
            return obj[self.decode(args[1])]
        if op == "setitem":
            obj, _ = self.table.get(args[0])
            if not isinstance(obj, E_tensor.Tile):
                raise TypeError(f"{_describe(obj)} does not support item assignment in a kernel")
            if line:
                return self._at_line(line)(obj.__setitem__, (self.decode(args[1]), self.decode(args[2])), {})
            obj[self.decode(args[1])] = self.decode(args[2])
            return None
        if op == "op":
            fn = OPERATORS.get(str(args[0]))
            if fn is None:
                raise TypeError(f"operator {args[0]!r} is not available in a kernel")
            unary = args[0] in ("neg", "pos", "invert")
            operands = [self.decode(args[1])] if unary else [self.decode(args[1]), self.decode(args[2])]
            for value in operands:
                if not (type(value) in (bool, int, float) or isinstance(value, OPERAND_TYPES)):
                    raise TypeError(f"operator {args[0]} is not available on {_describe(value)} in a kernel")
            if line and any(isinstance(v, E_tensor.Tile) for v in operands):
                return self._at_line(line)(fn, operands, {})
            return fn(*operands)
        if op == "len":
            obj, _ = self.table.get(args[0])
            # not an index grid (nl.mgrid[...]): it has no len() in the emulator either
            if not isinstance(obj, (E_tensor.Tile, np.ndarray, *LOOP_TYPES)):
                raise TypeError(f"{_describe(obj)} has no len() in a kernel")
            return len(obj)
        if op == "iter":
            obj, _ = self.table.get(args[0])
            if isinstance(obj, E_nl._Grid):
                return tuple(obj.axes)
            if isinstance(obj, np.ndarray) and obj.size <= 4096:
                return tuple(obj)
            if isinstance(obj, types.GeneratorType):
                return obj
            if isinstance(obj, (range, *LOOP_TYPES)):
                return iter(obj)
            raise TypeError(f"{_describe(obj)} is not iterable in a kernel")
        if op == "next":
            obj, _ = self.table.get(args[0])
            if not isinstance(obj, Iterator):
                raise TypeError(f"{_describe(obj)} is not an iterator")
            try:
                return (next(obj),)
            except StopIteration:
                return None
        if op == "bool":
            obj, _ = self.table.get(args[0])
            return bool(obj)
        if op == "index":
            obj, _ = self.table.get(args[0])
            return operator.index(obj)
        if op == "mod":
            return [[module, [[name, value] for name, value in members.items()]]
                    for module, members in self.modules.items()]
        raise TypeError(f"unknown request {op!r}")

    def _getattr(self, obj: Any, name: str) -> Any:
        allowed = None
        for kind, names in ATTRIBUTES.items():
            if isinstance(obj, kind):
                allowed = names
                break
        if isinstance(obj, type) and issubclass(obj, enum.Enum):
            if name in obj.__members__:
                return obj.__members__[name]
            raise AttributeError(f"{obj.__name__} has no member {name!r}")
        if isinstance(obj, enum.Enum) and name in ("name", "value"):
            value = getattr(obj, name)
            return value if type(value) in (int, str) else str(value)
        if type(obj).__name__ == "_Allocator" and name in ("mod_alloc", "alloc"):
            return _Method(getattr(obj, name))
        if isinstance(obj, E_tensor.Tile) and name in E_tensor.VIEW_METHODS_NOT_EMULATED:
            raise AttributeError(E_tensor.not_emulated_view_message(name))
        if allowed is None or name not in allowed:
            offered = f" (it offers {', '.join(sorted(allowed))})" if allowed else ""
            raise AttributeError(f"{_describe(obj)} has no attribute {name!r} available to kernels{offered}")
        value = getattr(obj, name)
        if name in CALLABLE_ATTRIBUTES:
            return _Method(value)
        return value

    # ---- the kernel process -----------------------------------------------------------------------
    def serve(self) -> list[Any]:
        """Answer requests until the kernel process reports ready / return / error; that message."""
        while True:
            message = self.process.receive()
            if message[0] in ("ready", "return", "error"):
                if self.deferred_error is not None:  # the first failure is the kernel's error, at its line
                    kind, text, line = self.deferred_error
                    self.deferred_error = None
                    raise KernelError("runtime_error", {"type": kind, "message": text, "line": line,
                                                        "text": self.source_line(line)})
                failure, self.partial_failure = self.partial_failure, None
                if failure is not None and message[0] != "error":  # an error the kernel did not catch is its own
                    kind, text, line = failure
                    raise KernelError("runtime_error", {
                        "type": kind, "line": line, "text": self.source_line(line),
                        "message": f"{text} -- the kernel caught this error and went on, but the failed "
                                   f"instruction had already written its result, uncharged; a launch in which "
                                   f"an instruction failed is not measured: fix the instruction instead of "
                                   f"catching its error"})
                self.table.release(message[2])
                return message
            reply = self.handle(message)
            if reply is not None:
                self.process.send(reply)

    @property
    def source_lines(self) -> int:
        if self._source_lines < 0:
            self._source_lines = self.process.source.count("\n") + 1
        return self._source_lines

    def source_line(self, line: int) -> str:
        lines = self.process.source.splitlines()
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""

    def wait_ready(self) -> dict[str, Any]:
        message = self.serve()
        if message[0] == "error":
            raise KernelError(str(message[3]), dict(message[4]) if isinstance(message[4], dict) else {})
        kernels = message[3] if len(message) > 3 and isinstance(message[3], dict) else {}
        return kernels

    def launch(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run the kernel function once (one SPMD program) on these emulator objects; its return value."""
        self.table.clear_launch()
        self.last_trace = costmodel.current()  # the launch's trace (the emulator activated it)
        self.last_args, self.last_kwargs, self.last_result = args, kwargs, None
        self.process.send(["launch", name, [self.encode(a) for a in args], {k: self.encode(v) for k, v in kwargs.items()}])
        message = self.serve()
        if message[0] == "error":
            raise KernelError(str(message[3]), dict(message[4]) if isinstance(message[4], dict) else {})
        if message[0] != "return" or len(message) < 4:
            raise ProtocolError("the kernel process answered a launch with something else")
        self.last_result = self.decode(message[3])
        return self.last_result

    def remote_function(self, name: str, params: list[str]) -> Callable[..., Any]:
        """A function that stands for the kernel in the emulator's launcher (nki.jit): same name,
        parameters and file name, its body runs in the kernel process."""

        def kernel(*args: Any, **kwargs: Any) -> Any:
            return self.launch(name, args, kwargs)

        kernel.__name__ = kernel.__qualname__ = name
        # inspect.signature() reads __signature__ first; functions do not declare it, hence the ignore
        kernel.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params])
        kernel.__code__ = kernel.__code__.replace(co_filename=self.filename)
        return kernel

class _KernelFunction:
    """What the trusted side receives for a function the kernel defined: only its place. The nki.compiler
    allocators take one (`ncc.psum.alloc(mod_alloc(base_addr=0))`, the AWS doc example test_psum_modulo_alloc.py)
    and ignore it, as the emulator places tiles itself; any other API refuses it as it would any non-tile."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<a function of the kernel (only nki.compiler allocators accept one)>"


KERNEL_FUNCTION = _KernelFunction()


def _numeric_dtype(name: Any) -> np.dtype:
    """A NumPy dtype named by the kernel: numbers only (no object, string or structured arrays)."""
    dtype = np.dtype(str(name))
    if dtype.kind not in "biuf":
        raise TypeError(f"{dtype} values cannot be passed to nki")
    return dtype


# one line (noqa: E704): the line its frame reports is its first line, which _at_line sets to the kernel's
def _call(f: Callable[..., Any], a: Any, k: Any) -> Any: return f(*a, **k)  # noqa: E704


class _Method:
    """A bound method handed to the kernel (tile.reshape, nki.compiler.sbuf.mod_alloc)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _describe(obj: Any) -> str:
    if isinstance(obj, E_tensor.Tile):
        return f"tile {obj.name!r}"
    return f"a {type(obj).__name__.lstrip('_')}"


