"""Emulated `nki.isa` (nisa): one function per engine instruction.

Both calling conventions work: the current one with the destination first (`nc_matmul(dst, stationary,
moving)`, `activation(dst=..., op=..., data=...)`) and the legacy one that returns a new tile
(`res = nisa.nc_matmul(stationary, moving)`).
"""

from __future__ import annotations

import math
import weakref
from enum import Enum, IntEnum
from typing import Any

import numpy as np
from speedpatch.targets.nki.emulator import costmodel, ops
from speedpatch.targets.nki.emulator import language as nl
from speedpatch.targets.nki.emulator import params as P
from speedpatch.targets.nki.emulator.arguments import refuse_unknown, refuse_unmodeled
from speedpatch.targets.nki.emulator.errors import NkiError
from speedpatch.targets.nki.emulator.errors import NotEmulated as NotEmulatedError
from speedpatch.targets.nki.emulator.tensor import Tile, fit_mask, new_tile, psum, sbuf


class engine(Enum):  # noqa: N801 - NKI's public name
    tensor = "tensor"
    vector = "vector"
    scalar = "scalar"
    gpsimd = "gpsimd"
    unknown = "unknown"


tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown


class dge_mode(Enum):  # noqa: N801 - NKI's public name
    """How a DMA's descriptors are generated (nisa.dma_copy(dge_mode=)): accepted; the cost model charges every
    DMA the same descriptor cost (params.py), software or hardware generated."""

    unknown = 0
    none = 1
    swdge = 2
    hwdge = 3


class oob_mode(Enum):  # noqa: N801 - NKI's public name
    """What an out-of-bounds DMA access does (nisa.dma_copy(oob_mode=)): error (the default) fails the DMA,
    skip moves nothing for the out-of-bounds elements of an indirect view (data[idx_tile, i_f]); elements
    out of bounds by the kernel's own static indices stay an error."""

    error = 0
    skip = 1


class reduce_cmd(Enum):  # noqa: N801
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3


def _split_dst(args: tuple, kwargs: dict, first_is_dst: bool, what: str) -> tuple[Tile | None, tuple]:
    """(dst, the other positional arguments) of a call in either form. The destination-first form documents no
    mask= and no dtype= (its result takes dst's dtype; current nki.isa pages); those belong to the legacy form
    that returns its result, so with a destination they are refused rather than ignored or half applied."""
    dst = kwargs.pop("dst", None)
    rest = args
    if dst is None and first_is_dst and args:
        dst, rest = args[0], args[1:]
    if dst is not None:
        for legacy in ("dtype", "mask"):
            if legacy in kwargs:
                raise NkiError(f"nisa.{what}: {legacy}= is an argument of the legacy form that returns its result "
                               f"(`t = nisa.{what}(...)`); the destination-first form documents no {legacy} (its "
                               f"result takes dst's dtype and has no mask)")
    return dst, rest


# Every parameter each emulated instruction's NKI API reference documents (awsdocs-neuron.readthedocs-hosted.com,
# nki.isa.<name>: the legacy pages (v2.21-v2.26, `general/nki/api/generated/nki.isa.*`, `(data, ..., *, mask=None,
# dtype=None, engine=..., **kwargs)`) and the current ones (v2.28-v2.33 and latest, `nki/api/generated/nki.isa.*`,
# destination first, `name=None`)), by the form of the call; "dst" is the destination of the current form. A keyword
# not listed is refused (arguments.refuse_unknown): NKI's **kwargs are not a licence to pass anything.
_PARAMS: dict[str, tuple[str, ...]] = {
    "nc_matmul": ("dst", "stationary", "moving", "is_stationary_onezero", "is_moving_onezero", "is_transpose",
                  "accumulate", "tile_position", "tile_size", "perf_mode", "mask", "name"),
    "nc_transpose": ("dst", "data", "mask", "dtype", "engine", "name"),
    "activation": ("dst", "op", "data", "bias", "scale", "reduce_op", "reduce_res", "reduce_cmd", "mask", "dtype",
                   "engine", "name"),
    "activation_reduce": ("dst", "op", "data", "reduce_op", "reduce_res", "bias", "scale", "mask", "dtype", "name"),
    "affine_select": ("pred", "on_true_tile", "on_false_value", "mask", "dtype", "name"),
    "affine_select/pattern": ("dst", "pattern", "offset", "channel_multiplier", "on_true_tile", "on_false_value",
                              "cmp_op", "name"),
    "tensor_scalar": ("dst", "data", "op0", "operand0", "reverse0", "op1", "operand1", "reverse1", "dtype", "mask",
                      "engine", "name"),
    # v2.33 adds a fused reduction (reduce_cmd, reduce_op, reduce_res)
    "scalar_tensor_tensor": ("dst", "data", "op0", "operand0", "op1", "operand1", "reverse0", "reverse1", "dtype",
                             "mask", "reduce_cmd", "reduce_op", "reduce_res", "name"),
    "max8": ("dst", "src", "mask", "dtype", "name"),
    "nc_find_index8": ("dst", "data", "vals", "mask", "dtype", "name"),
    "tensor_tensor": ("dst", "data1", "data2", "op", "dtype", "mask", "engine", "name"),
    "tensor_reduce": ("dst", "op", "data", "axis", "mask", "dtype", "negate", "keepdims", "name"),
    "tensor_partition_reduce": ("dst", "op", "data", "mask", "dtype", "name"),
    "tensor_copy": ("dst", "src", "mask", "dtype", "engine", "name"),
    "tensor_copy_predicated": ("dst", "src", "predicate", "reverse_pred", "mask", "dtype", "name"),
    # the v2.21 page gives reciprocal an engine (Scalar or Vector); later pages run it on VectorE only
    "reciprocal": ("dst", "data", "dtype", "mask", "engine", "name"),
    "memset": ("dst", "value", "mask", "engine", "name"),
    "memset/shape": ("shape", "value", "dtype", "mask", "engine", "name"),
    "dma_copy": ("dst", "src", "mask", "dst_rmw_op", "oob_mode", "dge_mode", "unique_indices", "engine", "name"),
    "dma_compute": ("dst", "srcs", "scales", "reduce_op", "name"),
    "dropout": ("dst", "data", "prob", "mask", "dtype", "name"),
    "range_select": ("dst", "on_true_tile", "comp_op0", "comp_op1", "bound0", "bound1", "reduce_cmd", "reduce_res",
                     "reduce_op", "range_start", "on_false_value", "mask", "dtype", "name"),
    "select_reduce": ("dst", "predicate", "on_true", "on_false", "reduce_res", "reduce_cmd", "reduce_op",
                      "reverse_pred", "mask", "dtype", "name"),
    "dma_transpose": ("dst", "src", "axes", "mask", "dtype", "dge_mode", "oob_mode", "priority", "indices", "name"),
    "iota": ("dst", "expr", "dtype", "mask", "name"),
    "iota/pattern": ("dst", "pattern", "offset", "channel_multiplier", "name"),
    "bn_stats": ("dst", "data", "mask", "dtype", "name"),
    "bn_aggr": ("dst", "data", "mask", "dtype", "name"),
    # v2.30+ add reduce_cmd / reduce_init, v2.33 reduce_res_negate
    "tensor_scalar_reduce": ("dst", "data", "op0", "operand0", "reduce_op", "reduce_res", "reverse0", "reduce_cmd",
                             "reduce_init", "reduce_res_negate", "dtype", "mask", "name"),
    "tensor_tensor_scan": ("dst", "data0", "data1", "initial", "op0", "op1", "reverse0", "reverse1", "dtype", "mask",
                           "name"),
}

_NOT_USED = (None,)
# Documented parameters whose effect the emulator does not model: any value but the listed "not used" ones
# (the first is the documented default) is NotEmulated (arguments.refuse_unmodeled).
_UNMODELED: dict[str, dict[str, tuple[tuple[Any, ...], str]]] = {
    "nc_matmul": {
        "is_stationary_onezero": ((False,), "the Tensor engine's 0/1-operand hint"),
        "is_moving_onezero": ((False,), "the Tensor engine's 0/1-operand hint"),
        # is_transpose=True with an identity moving tile is checked and modeled in nc_matmul (a hint on the modeled core)
        "is_transpose": ((False, True), "the PE-array transpose mode; use nisa.nc_transpose"),
        "tile_position": (((), [], None), "row/column tiling of the PE array, concurrent matmuls"),
        "tile_size": (((), [], None), "row/column tiling of the PE array, concurrent matmuls"),
    },
    "activation": {
        # without reduce_cmd the emulator reduces this instruction's result into reduce_res (reset_reduce)
        "reduce_cmd": ((None, "reset_reduce"), "the Scalar engine's reduction registers across instructions"),
        "engine": ((None, "unknown", "scalar"), "activation on GpSimd, NeuronCore-v4+"),
    },
    "scalar_tensor_tensor": {
        "reduce_cmd": (_NOT_USED, "the fused reduction of NeuronCore-v3+"),
        "reduce_op": (_NOT_USED, "the fused reduction of NeuronCore-v3+"),
        "reduce_res": (_NOT_USED, "the fused reduction of NeuronCore-v3+"),
    },
    "tensor_copy_predicated": {"dtype": (_NOT_USED, "a cast in a predicated copy (src and dst share their type)")},
    "reciprocal": {
        "engine": ((None, "unknown", "vector"), "reciprocal on the Scalar engine (other precision)"),
    },
    "dma_copy": {
        "unique_indices": ((True, None), "DMA with repeated indices"),
        "engine": ((None, "unknown"), "the choice of DMA queue"),
    },
    "bn_aggr": {"mask": (_NOT_USED, "a predicated bn_aggr")},
    # the pages give the scan's pseudo code without the reversed operand orders
    "tensor_tensor_scan": {
        "reverse0": ((False,), "the reversed operand order of op0 in a scan"),
        "reverse1": ((False,), "the reversed operand order of op1 in a scan"),
    },
    "tensor_scalar_reduce": {
        "reduce_cmd": ((None, "reset_reduce"), "the Vector engine's reduction registers across instructions"),
        "reduce_init": (_NOT_USED, "an initial value of the reduction registers"),
        "reduce_res_negate": ((False,), "a negated reduction result"),
    },
}


def _bind(names: list[str], args: tuple, kwargs: dict, what: str, form: str | None = None) -> dict[str, Any]:
    """The call's arguments by name: positional ones in the order of `names` (the documented order of the
    destination-first form after dst, or of the legacy form's positional parameters; the legacy extras are
    keyword-only in its docs), keywords checked against the documented parameters of the instruction
    (_PARAMS[form or what]) and against _UNMODELED."""
    key = form or what
    refuse_unknown(f"nisa.{what}", kwargs, _PARAMS[key])
    if len(args) > len(names):
        raise NkiError(f"nisa.{what}: too many positional arguments")
    bound = dict(zip(names, args, strict=False))
    for k, value in kwargs.items():
        if k in bound:
            raise NkiError(f"nisa.{what}: argument {k!r} given twice")
        bound[k] = value
    unmodeled = _UNMODELED.get(key)
    if unmodeled:
        refuse_unmodeled(f"nisa.{what}", {k: _plain(v) for k, v in bound.items() if k in unmodeled}, unmodeled)
    return bound


def _plain(value: Any) -> Any:
    """An engine / reduce_cmd enum member as its name, for the "not used" lists of _UNMODELED."""
    return value.name if isinstance(value, Enum) else value


class matmul_perf_mode(Enum):  # noqa: N801 - NKI's public name
    """nc_matmul(perf_mode=): only `none` exists on the modeled NeuronCore-v2 (nc_matmul docs)."""

    none = "none"
    double_row = "double_row"


def nc_matmul(*args: Any, **kwargs: Any) -> Tile:
    """psum (+)= stationary.T @ moving. With a destination it accumulates into it (PSUM accumulation)."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 3, what="nc_matmul")
    a = _bind(["stationary", "moving", "is_stationary_onezero", "is_moving_onezero", "is_transpose", "accumulate",
               "tile_position", "tile_size", "perf_mode"], rest, kwargs, "nc_matmul")
    perf = a.get("perf_mode")
    if perf is not None and perf not in ("none", matmul_perf_mode.none):
        # nki.isa.nc_matmul docs, "Performance mode": "On NeuronCore-v2, performance mode is not supported. On
        # NeuronCore-v3 and NeuronCore-v4, Tensor Engine supports FP8 double performance mode"
        raise NkiError(f"nisa.nc_matmul(perf_mode={getattr(perf, 'value', perf)!r}): the Tensor engine of "
                       f"NeuronCore-v2 (trn1, the modeled core) has no performance mode; the FP8 double-row mode "
                       f"is NeuronCore-v3/v4 (trn2/trn3) only -- drop perf_mode and use plain 2-D tiles")
    if a.get("is_transpose") is True:
        _transpose_hint(a["stationary"], a["moving"])
    # accumulate= (nki >= 0.3): True adds into dst, False overwrites it, None (the default) accumulates into a
    # destination, as the legacy `psum += nc_matmul(...)` / destination-first calls always did here
    accumulate = a.get("accumulate")
    execute = not ops.never_executed(a.get("mask"))
    return ops.matmul(dst, a["stationary"], a["moving"],
                      accumulate=dst is not None if accumulate is None else bool(accumulate) and dst is not None,
                      execute=execute, mask=a.get("mask") if execute else None)


def _transpose_hint(stationary: Any, moving: Any) -> None:
    """nc_matmul(is_transpose=True): the legacy page (v2.21-v2.26), which covers NeuronCore-v2, the modeled core,
    calls it a hint "that this is a transpose operation with moving as an identity matrix" (the current one: a
    transpose mode "starting NeuronCore-v3"). With an identity moving tile stationary.T @ moving is that transpose,
    so the instruction is the matmul it names (the reference allocated_fused_rms_norm_qkv transposes this way).
    Any other moving tile would need NeuronCore-v3's transpose mode: NotEmulated."""
    values = moving.read() if isinstance(moving, Tile) else None
    n = moving.shape[0] if isinstance(moving, Tile) else 0
    if (values is None or values.ndim != 2 or values.shape != (n, n) or not isinstance(stationary, Tile)
            or stationary.shape[0] != n or not np.array_equal(values, np.eye(n, dtype=values.dtype))):
        raise NotEmulatedError("nisa.nc_matmul(is_transpose=True) is part of NKI but not of the speedpatch emulator "
                               "(the PE-array transpose mode of NeuronCore-v3; on the modeled NeuronCore-v2 it is a "
                               "hint that moving is an identity matrix, and this moving tile is not one); leave "
                               "is_transpose at its default False or use nisa.nc_transpose")


def nc_transpose(*args: Any, **kwargs: Any) -> Tile:
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 2, what="nc_transpose")
    a = _bind(["data", "engine"], rest, kwargs, "nc_transpose")
    if ops.never_executed(a.get("mask")) and isinstance(a.get("data"), Tile) and a["data"].ndim == 2:
        # not executed (ops.never_executed): the legacy form's result, marked so that assigning it writes nothing
        out = new_tile((a["data"].shape[1], a["data"].shape[0]), "float32", psum, name="nc_transpose")
        out.alloc.implicit_buffer = True
        out.alloc.not_executed = True
        return out
    if a.get("engine") is not None and ops.engine_name(a["engine"], "tensor", ("tensor", "vector"),
                                                       "nisa.nc_transpose") == "vector":
        if a.get("mask") is not None and not (isinstance(a["mask"], (bool, np.bool_)) and a["mask"]):
            raise NotEmulatedError("nisa.nc_transpose(engine=vector, mask=...) is part of NKI but not of the "
                                   "speedpatch emulator (a mask is modeled on the Tensor engine's transpose); "
                                   "leave engine at its default")
        return ops.vector_transpose(dst, a["data"], dtype=a.get("dtype"))
    return ops.transpose(dst, a["data"], dtype=a.get("dtype"), mask=a.get("mask"))


def activation(*args: Any, **kwargs: Any) -> Tile:
    """op(data * scale + bias) on the Scalar engine; scale/bias (scalars or (P, 1) tiles) are free."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=bool(args) and isinstance(args[0], Tile), what="activation")
    a = _bind(["op", "data", "bias", "scale", "reduce_op", "reduce_res", "reduce_cmd"], rest, kwargs, "activation")
    return _activation(dst, a)


def activation_reduce(*args: Any, **kwargs: Any) -> Tile:
    dst, rest = _split_dst(args, kwargs, first_is_dst=bool(args) and isinstance(args[0], Tile), what="activation_reduce")
    a = _bind(["op", "data", "reduce_op", "reduce_res", "bias", "scale"], rest, kwargs, "activation_reduce")
    return _activation(dst, a)


def _activation(dst: Tile | None, a: dict[str, Any]) -> Tile:
    fn = nl.np_unary(a.get("op"))
    data, bias, scale = a["data"], a.get("bias"), a.get("scale", 1.0)
    for name, value in (("bias", bias), ("scale", scale)):
        if isinstance(value, Tile) and value.free_size != 1:
            raise NkiError(f"nisa.activation: {name} must be a scalar or a (partitions, 1) vector, got shape "
                           f"{value.shape}; apply full-tile operands with tensor_tensor")
    operands = [data, 1.0 if scale is None else scale, 0.0 if bias is None else bias]
    res = a.get("reduce_res")
    out = ops.elementwise("activation", "scalar", lambda x, s, b: fn(x * s + b), operands, dst=dst,
                          dtype=ops.out_dtype(a.get("dtype"), data), mask=a.get("mask"),
                          extra_writes=[res] if isinstance(res, Tile) else [],
                          extra_cycles=P.FUSED_REDUCTION_CYCLES if res is not None else 0.0)
    if res is not None:
        red = nl.reduce_fn(a.get("reduce_op") or np.add)
        values = red(out.read(), axis=tuple(range(1, out.ndim)), keepdims=True)
        res.write(values.reshape(res.shape) if values.size == np.prod(res.shape) else values)
    return out


def affine_select(*args: Any, **kwargs: Any) -> Tile:
    """on_true_tile where an affine predicate holds, else the scalar on_false_value. GpSimd engine.

    Both documented forms: the legacy `affine_select(pred, on_true_tile, on_false_value, mask=, dtype=)`
    whose pred is a comparison of index expressions (nl.arange / nl.mgrid, e.g. the causal mask
    `q_pos >= k_pos` of the flash-attention kernel), and the current `affine_select(dst, pattern, offset,
    channel_multiplier, on_true_tile, on_false_value, cmp_op=nl.equal)` whose predicate is
    cmp_op(offset + partition * channel_multiplier + sum(index * step), 0) over the [step, num] pattern
    (as nisa.iota). The docs give its cost as 150 + N GpSimd cycles for N elements per partition; the
    model charges the GpSimd streaming rate (N cycles for 32-bit data, at least 100)."""
    legacy = "pred" in kwargs or (bool(args) and not isinstance(args[0], Tile) and "dst" not in kwargs)
    if legacy:
        a = _bind(["pred", "on_true_tile", "on_false_value"], args, kwargs, "affine_select")
        dst = None
        data = a["on_true_tile"]
        if not isinstance(data, Tile):
            raise NkiError("nisa.affine_select: on_true_tile must be a tile")
        pred = np.asarray(a["pred"])
        if pred.dtype != bool:
            raise NkiError(f"nisa.affine_select: pred must be a comparison of index expressions (nl.arange / "
                           f"nl.mgrid), got values of type {pred.dtype}")
        try:
            pred = np.broadcast_to(pred, data.shape)
        except ValueError:
            raise NkiError(f"nisa.affine_select: pred of shape {pred.shape} does not fit on_true_tile "
                           f"{data.shape}") from None
    else:
        dst, rest = _split_dst(args, kwargs, first_is_dst=True, what="affine_select")
        a = _bind(["pattern", "offset", "channel_multiplier", "on_true_tile", "on_false_value", "cmp_op"],
                  rest, kwargs, "affine_select", form="affine_select/pattern")
        data = a["on_true_tile"]
        if not isinstance(data, Tile) or not isinstance(dst, Tile):
            raise NkiError("nisa.affine_select: dst and on_true_tile must be tiles")
        pred = _affine_predicate(dst, a)
    value = np.float32(a["on_false_value"])
    data = _psum_operand_to_sbuf(data)
    return ops.elementwise("affine_select", "gpsimd", lambda x: np.where(pred, x, value), [data], dst=dst,
                           dtype=ops.out_dtype(a.get("dtype"), data), mask=a.get("mask"))


def _psum_operand_to_sbuf(data: Tile) -> Tile:
    """affine_select runs on GpSimd only (it takes no engine), and GpSimd cannot access PSUM (nki.isa.tensor_copy
    docs; [ARCH]), yet its docs set no memory for on_true_tile, and public kernels validated on trn1 select
    straight from the PSUM scores of a matmul (nki-samples reference flash attention: the causal mask on
    `qk_psum`). The compiler must move such an operand to SBUF first: a VectorE copy is charged (as for a
    PSUM matmul operand, ops._sbuf_operand), and GpSimd then reads SBUF, sharing VectorE's SBUF port. A
    GpSimd instruction the kernel put on PSUM by choice (engine=nisa.gpsimd_engine) stays an error."""
    if data.buffer.kind != "psum":
        return data
    return ops.elementwise("copy", "vector", lambda v: v, [data], dtype=data.dtype)


def _affine_predicate(dst: Tile, a: dict[str, Any]) -> np.ndarray:
    """cmp_op(affine value, 0) per element of dst, the affine value as in nisa.iota's pseudo code."""
    try:
        pairs = [(int(step), int(num)) for step, num in a["pattern"]]
    except (TypeError, ValueError):
        raise NkiError(f"nisa.affine_select: pattern must be a list of [step, num] pairs, got {a['pattern']!r}") \
            from None
    free = int(np.prod([num for _, num in pairs])) if pairs else 1
    if free != dst.free_size:
        raise NkiError(f"nisa.affine_select: the pattern {pairs} covers {free} elements per partition, dst has "
                       f"{dst.free_size}")
    values = np.zeros([num for _, num in pairs] or [1], dtype=np.int64)
    for axis, (step, num) in enumerate(pairs):
        shape = [1] * len(pairs)
        shape[axis] = num
        values = values + (np.arange(num, dtype=np.int64) * step).reshape(shape)
    channel = np.arange(dst.partitions, dtype=np.int64).reshape(-1, 1) * int(a.get("channel_multiplier") or 0)
    affine = int(a.get("offset") or 0) + channel + values.reshape(1, -1)
    cmp = nl.np_binary(a.get("cmp_op") or np.equal)
    return np.asarray(cmp(affine, 0), dtype=bool).reshape(dst.shape)


class nc_version(IntEnum):  # noqa: N801 - NKI's public name
    """NeuronCore generations (gen2: trn1 / inf2, gen3: trn2, gen4: trn3); ordered, as kernels compare them."""

    gen2 = 2
    gen3 = 3
    gen4 = 4


def get_nc_version() -> nc_version:
    """The modeled NeuronCore's generation: gen2, the trn1 NeuronCore-v2 params.py describes."""
    return nc_version.gen2


def tensor_scalar(*args: Any, **kwargs: Any) -> Tile:
    """op1(op0(data, operand0), operand1); operands are scalars or (P, 1) tiles. Vector engine."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 2 and isinstance(args[1], Tile), what="tensor_scalar")
    a = _bind(["data", "op0", "operand0", "reverse0", "op1", "operand1", "reverse1", "engine"], rest, kwargs,
              "tensor_scalar")
    op0, op1 = nl.np_binary(a["op0"]), a.get("op1")
    rev0, rev1 = bool(a.get("reverse0", False)), bool(a.get("reverse1", False))
    operands = [a["data"], _vector_operand("nisa.tensor_scalar", "operand0", a["operand0"], a["data"])]
    if op1 is not None:
        operands.append(_vector_operand("nisa.tensor_scalar", "operand1", a["operand1"], a["data"]))
        f1 = nl.np_binary(op1)

    def run(x: Any, s0: Any, s1: Any = None) -> Any:
        y = op0(s0, x) if rev0 else op0(x, s0)
        if op1 is None:
            return y
        return f1(s1, y) if rev1 else f1(y, s1)

    engine = ops.engine_name(a.get("engine"), "vector")
    bitvec = _bitvec_instruction("tensor_scalar", [a["op0"]] + ([op1] if op1 is not None else []), engine,
                                 [a["data"], a["operand0"], a.get("operand1"), dst], a.get("dtype"))
    return ops.elementwise("tensor_scalar", engine, run, operands, dst=dst,
                           dtype=ops.out_dtype(a.get("dtype"), a["data"]), mask=a.get("mask"), integer=bitvec)


def _vector_operand(what: str, name: str, value: Any, data: Any) -> Any:
    """A scalar operand of tensor_scalar / tensor_scalar_reduce / scalar_tensor_tensor: a number, or a tile of
    one element per partition of data's partitions (their API pages: "SBUF or PSUM tiles of shape
    (data.shape[0], 1), i.e., vectors, or compile-time constant scalars"). A full tile there was a second
    streamed input the instruction's cost does not read (red-team: tensor_scalar(engine=scalar) as a
    tensor-tensor add at ScalarE's one-input cost, correct at 36.2 us against the honest 47.2 us)."""
    if isinstance(value, Tile) and (value.free_size != 1 or (isinstance(data, Tile)
                                                              and value.partitions != data.partitions)):
        parts = data.partitions if isinstance(data, Tile) else "P"
        raise NkiError(f"{what}: {name} must be a scalar or a ({parts}, 1) vector, got shape {value.shape}; "
                       f"apply full-tile operands with tensor_tensor")
    return value


def _bitvec_instruction(what: str, ops_used: list[Any], engine: str, tiles: list[Any], dtype: Any) -> bool:
    """Whether the instruction's operators are bitvec ones, with the rules of the nki.isa.tensor_scalar /
    tensor_tensor docs checked: both operators of one kind ("The two operators ... must be of the same type
    (both bitvec or both arithmetic)"), on the Vector engine, integer inputs and output."""
    kinds = [nl.is_bitvec(op) for op in ops_used]
    if not any(kinds):
        return False
    if not all(kinds):
        raise NkiError(f"nisa.{what}: op0 and op1 must both be bitvec operators or both arithmetic, got "
                       f"{', '.join(repr(op) for op in ops_used)}")
    if engine != "vector":
        raise NkiError(f"nisa.{what}: bitvec operators run on the Vector engine only, not {engine}")
    nl.check_bitvec(f"nisa.{what}", tiles, dtype)
    return True


def scalar_tensor_tensor(*args: Any, **kwargs: Any) -> Tile:
    """(data op0 operand0) op1 operand1 on the Vector engine: operand0 a scalar or (P, 1) vector, operand1 a tile
    of data's shape (nki.isa.scalar_tensor_tensor). Costed 2N cycles for N elements per partition, as its docs
    give for every case but bf16 data and operand1 with op0=subtract, op1=multiply and even N (N; not modeled,
    the model stays on the slow side)."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=bool(args), what="scalar_tensor_tensor")
    a = _bind(["data", "op0", "operand0", "op1", "operand1", "reverse0", "reverse1"], rest, kwargs,
              "scalar_tensor_tensor")
    data, operand1 = a.get("data"), a.get("operand1")
    if not isinstance(data, Tile) or not isinstance(operand1, Tile):
        raise NkiError("nisa.scalar_tensor_tensor: data and operand1 must be tiles")
    if data.buffer.kind == "psum" and operand1.buffer.kind == "psum":
        raise NkiError("nisa.scalar_tensor_tensor: data and operand1 cannot both be in PSUM")
    if tuple(operand1.shape) != tuple(data.shape):
        raise NkiError(f"nisa.scalar_tensor_tensor: operand1 {operand1.shape} must have data's shape {data.shape}")
    op0, op1 = nl.np_binary(a["op0"]), nl.np_binary(a["op1"])
    rev0, rev1 = bool(a.get("reverse0", False)), bool(a.get("reverse1", False))

    def run(x: Any, s0: Any, t1: Any) -> Any:
        y = op0(s0, x) if rev0 else op0(x, s0)
        return op1(t1, y) if rev1 else op1(y, t1)

    operand0 = _vector_operand("nisa.scalar_tensor_tensor", "operand0", a["operand0"], data)
    return ops.elementwise("scalar_tensor_tensor", "vector", run, [data, operand0, operand1], dst=dst,
                           dtype=ops.out_dtype(a.get("dtype"), data), mask=a.get("mask"))


def max8(*args: Any, **kwargs: Any) -> Tile:
    """The 8 largest values of each partition, descending, as a (P, 8) tile (nki.isa.max8; both forms). The
    docs give N engine cycles for N elements per partition: VectorE streaming the source once."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 2, what="max8")
    a = _bind(["src"], rest, kwargs, "max8")
    src = a.get("src")
    if not isinstance(src, Tile):
        raise NkiError("nisa.max8: src must be a tile")
    n = src.free_size
    if not 8 <= n <= 16384:
        raise NkiError(f"nisa.max8: src has {n} elements per partition; it must have 8 to 16384")

    def top8(x: Any) -> Any:
        flat = np.asarray(x, dtype=np.float32).reshape(x.shape[0], -1)
        return -np.sort(-flat, axis=1)[:, :8]

    return ops.elementwise("max8", "vector", top8, [src], dst=dst, dtype=ops.out_dtype(a.get("dtype"), src),
                           mask=a.get("mask"))


def nc_find_index8(*args: Any, **kwargs: Any) -> Tile:
    """Per partition, the index of the first occurrence of each of 8 values in data (nki.isa.nc_find_index8; both
    forms), uint32 unless dtype / dst says uint16. N engine cycles (VectorE) for N data elements per partition.
    A value absent from data is undefined in the legacy docs (an all-ones sentinel in the current ones): refused."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 3, what="nc_find_index8")
    a = _bind(["data", "vals"], rest, kwargs, "nc_find_index8")
    data, vals = a.get("data"), a.get("vals")
    if not isinstance(data, Tile) or not isinstance(vals, Tile):
        raise NkiError("nisa.nc_find_index8: data and vals must be tiles")
    if vals.free_size != 8:
        raise NkiError(f"nisa.nc_find_index8: vals must hold 8 values per partition, it holds {vals.free_size}")

    def find(x: Any, v: Any) -> Any:
        flat = np.asarray(x, dtype=np.float32).reshape(x.shape[0], -1)
        want = np.asarray(v, dtype=np.float32).reshape(v.shape[0], 8)
        hits = flat[:, None, :] == want[:, :, None]
        if not hits.any(axis=2).all():
            raise NkiError("nisa.nc_find_index8: a value of vals does not occur in data in some partition "
                           "(undefined on hardware; the emulator refuses it)")
        return hits.argmax(axis=2).astype(np.float32)

    return ops.elementwise("nc_find_index8", "vector", find, [data, vals], dst=dst,
                           dtype=a.get("dtype") or (dst.dtype if dst is not None else "uint32"), mask=a.get("mask"))


def tensor_tensor(*args: Any, **kwargs: Any) -> Tile:
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 3 and isinstance(args[2], Tile), what="tensor_tensor")
    a = _bind(["data1", "data2", "op", "engine"], rest, kwargs, "tensor_tensor")
    for key in ("data1", "data2"):
        if not isinstance(a[key], Tile):
            raise NkiError(f"nisa.tensor_tensor: {key} must be a tile")
    engine = ops.engine_name(a.get("engine"), "vector", ("vector", "gpsimd"), "nisa.tensor_tensor")
    bitvec = _bitvec_instruction("tensor_tensor", [a["op"]], engine, [a["data1"], a["data2"], dst], a.get("dtype"))
    return ops.elementwise("tensor_tensor", engine, nl.np_binary(a["op"]),
                           [a["data1"], a["data2"]], dst=dst, dtype=ops.out_dtype(a.get("dtype"), a["data1"], a["data2"]),
                           mask=a.get("mask"), integer=bitvec)


def tensor_reduce(*args: Any, **kwargs: Any) -> Tile:
    dst, rest = _split_dst(args, kwargs, first_is_dst=bool(args) and isinstance(args[0], Tile), what="tensor_reduce")
    a = _bind(["op", "data", "axis", "negate", "keepdims"], rest, kwargs, "tensor_reduce")
    return nl.reduce_tile(nl.reduce_fn(a["op"]), a["data"], a["axis"], dtype=a.get("dtype"),
                          keepdims=bool(a.get("keepdims", False)), dst=dst, negate=bool(a.get("negate", False)),
                          mask=a.get("mask"), what="tensor_reduce")


def _partition_reducer(op: Any, data: Tile) -> Any:
    """The NumPy reduction along axis `axis` for a tensor_partition_reduce op (its docs: add, max, mean /
    average, bitwise_or, bitwise_and, bitwise_xor; the bitwise ones on integer data only)."""
    name = getattr(op, "name", None) or getattr(op, "__name__", "")
    table = {"add": np.sum, "sum": np.sum, "maximum": np.max, "max": np.max, "amax": np.max, "mean": np.mean,
             "average": np.mean}
    bitwise = {"bitwise_or": np.bitwise_or, "bitwise_and": np.bitwise_and, "bitwise_xor": np.bitwise_xor}
    if name in table and (op is getattr(nl, name, None) or op is getattr(np, name, None)):
        return table[name]
    if name in bitwise and op is bitwise[name]:
        if data.dtype.is_float:
            raise NkiError(f"nisa.tensor_partition_reduce: {name} needs integer data, {data.name!r} is "
                           f"{data.dtype!r}")
        ufunc = bitwise[name]
        return lambda v, axis, keepdims: ufunc.reduce(v.astype(np.int64), axis=axis, keepdims=keepdims)
    raise NkiError(f"nisa.tensor_partition_reduce: op {op!r} is not one of its reduction operators (nl.add, "
                   f"nl.maximum, nl.mean, np.bitwise_or, np.bitwise_and, np.bitwise_xor)")


def tensor_partition_reduce(*args: Any, **kwargs: Any) -> Tile:
    """Reduce across the partitions of data on the GpSimd engine (nki.isa.tensor_partition_reduce; both forms:
    `dst = tensor_partition_reduce(op, data, mask=, dtype=)` and `tensor_partition_reduce(dst, op, data)`).
    A (128, 32, 4) tile reduces to (1, 32, 4); a block tile (b, p, f...) to (b, 1, f...), its partition
    axis reduced. GpSimd cannot access PSUM ([ARCH]), so data and dst are SBUF tiles.

    Cost: the docs give none. Each of the 8 GpSimd cores holds 16 partitions and reads their elements with
    16 lanes ([ARCH]), so streaming the input once takes N cycles for N elements per partition (32-bit;
    2 or 4 per cycle for 16 / 8-bit types): the model charges that pass, the engine's usual streaming rate
    (ops.engine_cost_ns), and not the combination of the cores' partial results -- a floor, never a
    figure below what the data's size allows."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=bool(args) and isinstance(args[0], Tile), what="tensor_partition_reduce")
    a = _bind(["op", "data"], rest, kwargs, "tensor_partition_reduce")
    data = a.get("data")
    if not isinstance(data, Tile):
        raise NkiError("nisa.tensor_partition_reduce: data must be a tile")
    for t, role in ((data, "data"), (dst, "dst")):
        if isinstance(t, Tile) and t.buffer.kind != "sbuf":
            raise NkiError(f"nisa.tensor_partition_reduce: {role} {t.name!r} is in {t.buffer.name}; the GpSimd "
                           f"engine reads and writes SBUF only (copy a PSUM tile to SBUF first)")
    reduce = _partition_reducer(a.get("op"), data)
    axis = data.par_axis
    out_shape = tuple(1 if i == axis else n for i, n in enumerate(data.shape))
    if dst is None:
        shape = tuple(nl.par_dim(1) if i == axis else n for i, n in enumerate(out_shape))
        dst = nl.ndarray(shape, a.get("dtype") or data.dtype, buffer=sbuf, name="tensor_partition_reduce")
    elif dst.partitions != 1 or int(np.prod(dst.shape)) != int(np.prod(out_shape)):
        raise NkiError(f"nisa.tensor_partition_reduce: dst {dst.shape} must hold one partition of data's free "
                       f"elements, {out_shape} for data {data.shape}")
    return ops.elementwise("tensor_partition_reduce", "gpsimd",
                           lambda v: np.reshape(reduce(v, axis=axis, keepdims=True), dst.shape), [data], dst=dst,
                           dtype=ops.out_dtype(a.get("dtype"), data), mask=a.get("mask"))


def tensor_copy(*args: Any, **kwargs: Any) -> Tile:
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 2, what="tensor_copy")
    a = _bind(["src", "engine"], rest, kwargs, "tensor_copy")
    return ops.elementwise("tensor_copy", ops.engine_name(a.get("engine"), "vector"), lambda v: v, [a["src"]], dst=dst,
                           dtype=ops.out_dtype(a.get("dtype"), a["src"]), mask=a.get("mask"))


def tensor_copy_predicated(*args: Any, **kwargs: Any) -> Tile:
    """Copy src (a tile or a number) into dst where predicate is nonzero (zero with reverse_pred), leaving dst's
    other elements as they were, on the Vector engine (nki.isa.tensor_copy_predicated; both forms, legacy
    keyword-only and destination first). Checked as documented: src (a tile), dst and predicate of the same
    partitions and elements per partition; predicate an unsigned 8/16/32-bit integer tile (or bool, one byte:
    the page's own example passes the NumPy comparison `np.less_equal(a, 0.8)`); src and dst of one dtype; not
    both src and predicate in PSUM. Cost (the legacy page's table): max(MIN_II, 2N) VectorE cycles with src and
    predicate in SBUF, N with one of them in PSUM (two streamed inputs, as tensor_tensor); a number as src streams
    the predicate only."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=bool(args) and isinstance(args[0], Tile),
                           what="tensor_copy_predicated")
    a = _bind(["src", "predicate", "reverse_pred"], rest, kwargs, "tensor_copy_predicated")
    src, pred = a.get("src"), a.get("predicate")
    what = "nisa.tensor_copy_predicated"
    if not isinstance(dst, Tile) or not isinstance(pred, Tile):
        raise NkiError(f"{what}: dst and predicate must be tiles")
    if pred.dtype.name not in ("uint8", "uint16", "uint32", "bool_", "bool"):
        raise NkiError(f"{what}: predicate must be uint8, uint16 or uint32, it is {pred.dtype!r}")
    if isinstance(src, Tile):
        if src.dtype != dst.dtype:
            raise NkiError(f"{what}: src is {src.dtype!r} but dst is {dst.dtype!r}; they must share the data type")
        if src.buffer.kind == "psum" and pred.buffer.kind == "psum":
            raise NkiError(f"{what}: src and predicate cannot both be in PSUM")
    elif not isinstance(src, (int, float, np.integer, np.floating)) or isinstance(src, bool):
        raise NkiError(f"{what}: src must be a tile or a number, got {src!r}")
    for t, role in ((pred, "predicate"), (src, "src")):
        if isinstance(t, Tile) and (t.partitions != dst.partitions or t.free_size != dst.free_size):
            raise NkiError(f"{what}: {role} {t.shape} and dst {dst.shape} must have the same partitions and "
                           f"elements per partition")
    selected = (np.asarray(pred.read()) != 0).reshape(dst.shape)
    if a.get("reverse_pred"):
        selected = ~selected
    shape = dst.shape

    def run(_p: Any, s: Any) -> Any:
        return np.broadcast_to(np.asarray(s).reshape(shape) if np.size(s) > 1 else np.asarray(s), shape)

    return ops.elementwise("tensor_copy_predicated", "vector", run, [pred, src], dst=dst, mask=a.get("mask"),
                           write_mask=selected)


def reciprocal(*args: Any, **kwargs: Any) -> Tile:
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 2, what="reciprocal")
    a = _bind(["data"], rest, kwargs, "reciprocal")
    return ops.elementwise("reciprocal", "vector", lambda v: 1.0 / v, [a["data"]], dst=dst,
                           dtype=ops.out_dtype(a.get("dtype"), a["data"]), mask=a.get("mask"))


def memset(*args: Any, **kwargs: Any) -> Tile:
    if args and isinstance(args[0], Tile) or "dst" in kwargs:
        dst, rest = _split_dst(args, kwargs, first_is_dst=True, what="memset")
        a = _bind(["value", "engine"], rest, kwargs, "memset")
    else:
        a = _bind(["shape", "value", "dtype"], args, kwargs, "memset", form="memset/shape")
        dst = nl.ndarray(a["shape"], a["dtype"], buffer=sbuf, name="memset")
    return ops.elementwise("memset", ops.engine_name(a.get("engine"), "vector", ("vector", "gpsimd"), "nisa.memset"),
                           lambda: np.float32(a["value"]), [], dst=dst, mask=a.get("mask"))


def dma_copy(*args: Any, **kwargs: Any) -> Tile:
    """nisa.dma_copy; dst_rmw_op=nl.add (np.add) is the read-modify-write DMA dst = dst + src of the nki <= 0.2
    pages ("Currently only np.add is supported"; "If dst_rmw_op is specified, only oob_mode=oob_mode.error is
    allowed"), which NKI 0.3 moved to nisa.dma_compute."""
    a = _bind(["dst", "src"], args, kwargs, "dma_copy")
    rmw = a.get("dst_rmw_op")
    if rmw is not None:
        if rmw is not nl.add and rmw is not np.add:
            raise NkiError(f"nisa.dma_copy: dst_rmw_op {getattr(rmw, '__name__', rmw)!r} is not supported; the "
                           f"read-modify-write DMA adds only (dst_rmw_op=nl.add)")
        if a.get("oob_mode") not in (None, oob_mode.error):
            raise NkiError("nisa.dma_copy: with dst_rmw_op only oob_mode=oob_mode.error is allowed")
    return ops.dma(a["dst"], a["src"], mask=a.get("mask"), what="nisa.dma_copy",
                   oob_skip=a.get("oob_mode") is oob_mode.skip, accumulate=rmw is not None)


def dma_compute(*args: Any, **kwargs: Any) -> Tile:
    """nisa.dma_compute(dst, srcs, scales, reduce_op) (NKI 0.3, the successor of dma_copy's dst_rmw_op):
    dst = srcs[0] * scales[0] + srcs[1] * scales[1] + ..., computed by the DMA engines in float32 and cast
    to dst's type once. The page's limits: reduce_op nl.add only, every scale 1.0, at most 16 sources, each
    with dst's element count, in HBM or SBUF. One DMA instruction reading every source (ops.dma)."""
    a = _bind(["dst", "srcs", "scales", "reduce_op"], args, kwargs, "dma_compute")
    dst, srcs, scales, op = a.get("dst"), a.get("srcs"), a.get("scales"), a.get("reduce_op")
    if not isinstance(dst, Tile):
        raise NkiError("nisa.dma_compute: dst must be a kernel tensor or tile")
    if not isinstance(srcs, (list, tuple)) or not 1 <= len(srcs) <= 16 or not all(isinstance(t, Tile) for t in srcs):
        raise NkiError("nisa.dma_compute: srcs must be a list of 1 to 16 tensors or tiles")
    if op is not nl.add and op is not np.add:
        raise NkiError("nisa.dma_compute: reduce_op must be nl.add (the only reduction the page supports)")
    if (not isinstance(scales, (list, tuple)) or len(scales) != len(srcs)
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x == 1.0 for x in scales)):
        raise NkiError("nisa.dma_compute: scales must list one 1.0 per source (the page: 'all values in scales "
                       "must be 1.0')")
    for t in srcs:
        if math.prod(t.shape) != math.prod(dst.shape):
            raise NkiError(f"nisa.dma_compute: source {t.name!r} has {math.prod(t.shape)} elements, dst "
                           f"{math.prod(dst.shape)}; the element counts must match")
        if t.buffer.kind == "psum":
            raise NkiError(f"nisa.dma_compute: source {t.name!r} is in PSUM; DMA cannot access PSUM -- copy it to "
                           f"SBUF first (nisa.tensor_copy)")
    return ops.dma(dst, srcs[0], what="nisa.dma_compute", extra_srcs=tuple(srcs[1:]))


def dropout(*args: Any, **kwargs: Any) -> Tile:
    """nki.isa.dropout, both forms: `t = dropout(data, prob, mask=, dtype=)` and `dropout(dst, data, prob)`;
    see ops.dropout (VectorE, no rescaling of the kept elements, deterministic per launch)."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 3 or (len(args) == 2 and "prob" in kwargs), what="dropout")
    a = _bind(["data", "prob"], rest, kwargs, "dropout")
    if dst is not None and not isinstance(dst, Tile):
        raise NkiError("nisa.dropout: dst must be a tile")
    if dst is not None and isinstance(a.get("data"), Tile) and dst.dtype != a["data"].dtype:
        raise NkiError(f"nisa.dropout: dst.dtype {dst.dtype!r} must match data.dtype {a['data'].dtype!r}")
    return ops.dropout("nisa.dropout", a.get("data"), a.get("prob"), dst=dst, dtype=a.get("dtype"),
                       mask=a.get("mask"))


# The Vector engine's reduction registers (reduce_cmd of range_select / select_reduce): per launch, the
# running reduction of each partition, carried from one instruction to the next.
_vector_accumulators: weakref.WeakKeyDictionary[Any, np.ndarray] = weakref.WeakKeyDictionary()


_REDUCTION_BINARY: dict[Any, Any] = {np.max: np.maximum, np.amax: np.maximum, np.min: np.minimum,
                                     np.amin: np.minimum, np.sum: np.add, np.prod: np.multiply}


def _accumulate(what: str, out: Tile, reduce_res: Any, cmd: Any, op: Any) -> None:
    """reduce_cmd semantics: reset clears the registers, reset_reduce starts them from this instruction's
    reduction (along the free axes of its result), reduce adds this reduction to them with reduce_op; idle
    leaves them as they are (with a reduce_res and no earlier state it starts from this instruction, as
    the API without reduce_cmd did). reduce_res, when given, receives the registers."""
    # a NumPy reduction as reduce_op (np.max: the nki.isa.range_select page's own examples) combines the registers
    # with its element-wise operator; called as np.max(state, here), `here` would be taken for an axis
    binary = _REDUCTION_BINARY.get(op) or nl.np_binary(op)
    trace = costmodel.current()
    name = getattr(cmd, "name", "reset_reduce" if cmd is None else str(cmd))
    values = np.asarray(out.read(), dtype=np.float32).reshape(out.partitions, -1)
    here = nl.reduce_fn(op)(values, axis=1)
    state = _vector_accumulators.get(trace)
    if state is not None and state.shape != here.shape:
        state = None  # another partition count: registers of other lanes
    if name == "reset":
        _vector_accumulators.pop(trace, None)
        state = None
    elif name == "reset_reduce" or (name in ("reduce", "idle") and state is None and reduce_res is not None):
        state = here
    elif name == "reduce":
        state = binary(state, here)
    elif name != "idle":
        raise NkiError(f"{what}: reduce_cmd {cmd!r} is not one of nisa.reduce_cmd's idle, reset, reduce, reset_reduce")
    if state is not None:
        _vector_accumulators[trace] = np.asarray(state, dtype=np.float32)
    if reduce_res is not None:
        if state is None:
            raise NkiError(f"{what}: reduce_res asks for the reduction registers, which reduce_cmd=reset cleared")
        reduce_res.write(np.asarray(state, dtype=np.float32).reshape(reduce_res.shape))


def _lanes(value: Any, x: np.ndarray) -> Any:
    """A (P, 1) per-partition operand's values shaped to broadcast over every free axis of x."""
    v = np.asarray(value)
    return v.reshape((x.shape[0],) + (1,) * (x.ndim - 1)) if v.size == x.shape[0] and v.size > 1 else v


def _check_reduce_res(what: str, res: Any, partitions: int) -> None:
    if res is None:
        return
    if not isinstance(res, Tile) or res.partitions != partitions or res.free_size != 1:
        raise NkiError(f"{what}: reduce_res must be a ({partitions}, 1) tile, one value per partition, got "
                       f"{getattr(res, 'shape', res)!r}")
    if not res.dtype.is_float:
        raise NkiError(f"{what}: reduce_res must have a float dtype, it is {res.dtype!r}")


def range_select(*args: Any, **kwargs: Any) -> Tile:
    """on_true_tile where comp_op0(i + range_start, bound0) and comp_op1(i + range_start, bound1) hold for the
    free-axis index i, else on_false_value, on the Vector engine, with a reduction of the result (reduce_op,
    max by default) into reduce_res as reduce_cmd says (nki.isa.range_select; both forms: keyword-only with
    a returned tile, and `range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, ...)`). The
    bounds are numbers or (P, 1) tiles. The docs mark it NeuronCore-v3+; the model runs it on its VectorE
    at one pass over on_true_tile (N cycles; the bounds are per-lane scalars)."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 2 and isinstance(args[1], Tile), what="range_select")
    a = _bind(["on_true_tile", "comp_op0", "comp_op1", "bound0", "bound1", "reduce_cmd", "reduce_res", "reduce_op",
               "range_start", "on_false_value"], rest, kwargs, "range_select")
    data = a.get("on_true_tile")
    if not isinstance(data, Tile):
        raise NkiError("nisa.range_select: on_true_tile must be a tile")
    for key in ("bound0", "bound1"):
        bound = a.get(key)
        if isinstance(bound, Tile) and (bound.free_size != 1 or bound.partitions != data.partitions):
            raise NkiError(f"nisa.range_select: {key} must be a number or a ({data.partitions}, 1) tile, got shape "
                           f"{bound.shape}")
        if bound is None:
            raise NkiError(f"nisa.range_select: {key} is required")
    res = a.get("reduce_res")
    _check_reduce_res("nisa.range_select", res, data.partitions)
    cmp0, cmp1 = nl.np_binary(a["comp_op0"]), nl.np_binary(a["comp_op1"])
    start = float(a.get("range_start") or 0.0)
    fill = a.get("on_false_value")
    fill = np.float32(nl.fp32.min if fill is None else fill)  # the fp32.min default of the earlier API
    if data.par_axis != 0:
        raise NkiError(f"nisa.range_select: on_true_tile {data.shape} must have its partitions on axis 0")

    def run(x: np.ndarray, b0: Any, b1: Any) -> np.ndarray:
        index = np.arange(x[0].size, dtype=np.float32).reshape((1,) + x.shape[1:]) + start
        keep = (np.asarray(cmp0(index, _lanes(b0, x)), dtype=bool)
                & np.asarray(cmp1(index, _lanes(b1, x)), dtype=bool))
        return np.where(keep, x, fill)

    out = ops.elementwise("range_select", "vector", run, [data, a["bound0"], a["bound1"]], dst=dst,
                          dtype=ops.out_dtype(a.get("dtype"), data), mask=a.get("mask"),
                          extra_writes=[res] if res is not None else [])
    _accumulate("nisa.range_select", out, res, a.get("reduce_cmd"), a.get("reduce_op") or np.maximum)
    return out


def select_reduce(*args: Any, **kwargs: Any) -> Tile:
    """np.where(predicate, on_true, on_false) (predicate negated with reverse_pred), with an optional max
    reduction along the free axes into reduce_res as reduce_cmd says, on the Vector engine
    (nki.isa.select_reduce). The documented constraints are checked: predicate, on_true and dst of one
    shape; predicate an 8/16-bit integer tile; on_true not tfloat32/int32/uint32; on_false a float32
    number or a (P, 1) tile; not both on_true and predicate in PSUM; reduce_res (P, 1) float; reduce_op
    max only. The docs give no cost: it streams two tiles (predicate and on_true), charged as
    tensor_tensor (2N VectorE cycles, N with one of them in PSUM and the other in SBUF)."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=bool(args) and isinstance(args[0], Tile) and len(args) >= 3, what="select_reduce")
    a = _bind(["predicate", "on_true", "on_false", "reduce_res", "reduce_cmd", "reduce_op", "reverse_pred"], rest,
              kwargs, "select_reduce")
    pred, data, on_false = a.get("predicate"), a.get("on_true"), a.get("on_false")
    if not isinstance(pred, Tile) or not isinstance(data, Tile):
        raise NkiError("nisa.select_reduce: predicate and on_true must be tiles")
    if pred.dtype.name not in ("int8", "uint8", "int16", "uint16"):
        raise NkiError(f"nisa.select_reduce: predicate must be int8, uint8, int16 or uint16, it is {pred.dtype!r}")
    if data.dtype.name in ("tfloat32", "int32", "uint32"):
        raise NkiError(f"nisa.select_reduce: on_true cannot be {data.dtype!r} (not tfloat32, int32, uint32)")
    if pred.partitions != data.partitions or pred.free_size != data.free_size or (
            dst is not None and (dst.partitions != data.partitions or dst.free_size != data.free_size)):
        raise NkiError(f"nisa.select_reduce: predicate {pred.shape}, on_true {data.shape} and dst "
                       f"{getattr(dst, 'shape', None)} must have the same partitions and elements per partition")
    if pred.buffer.kind == "psum" and data.buffer.kind == "psum":
        raise NkiError("nisa.select_reduce: on_true and predicate cannot both be in PSUM")
    if isinstance(on_false, Tile):
        if on_false.free_size != 1 or on_false.partitions != data.partitions:
            raise NkiError(f"nisa.select_reduce: on_false must be a number or a ({data.partitions}, 1) tile, got "
                           f"shape {on_false.shape}")
    elif not isinstance(on_false, (int, float, np.integer, np.floating)) or isinstance(on_false, bool):
        raise NkiError(f"nisa.select_reduce: on_false must be a number or a (P, 1) tile, got {on_false!r}")
    op = a.get("reduce_op") or np.maximum
    if getattr(op, "__name__", getattr(op, "name", "")) not in ("maximum", "max", "amax"):
        raise NkiError(f"nisa.select_reduce: reduce_op {op!r} is not supported; it only reduces with max")
    res = a.get("reduce_res")
    _check_reduce_res("nisa.select_reduce", res, data.partitions)
    reverse = bool(a.get("reverse_pred", False))

    def run(p: np.ndarray, x: np.ndarray, f: Any) -> np.ndarray:
        chosen = np.asarray(p).reshape(x.shape) != 0
        return np.where(~chosen if reverse else chosen, x, _lanes(f, x))

    out = ops.elementwise("select_reduce", "vector", run, [pred, data, on_false], dst=dst,
                          dtype=ops.out_dtype(a.get("dtype"), data), mask=a.get("mask"),
                          extra_writes=[res] if res is not None else [])
    if res is not None or a.get("reduce_cmd") is not None:
        _accumulate("nisa.select_reduce", out, res, a.get("reduce_cmd"), np.maximum)
    return out


# nki.isa.dma_transpose: the permutation for each source rank (axis i of the result is axis axes[i] of src)
DMA_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def dma_transpose(*args: Any, **kwargs: Any) -> Tile:
    """src transposed by the DMA engines (nki.isa.dma_transpose; both forms: `t = dma_transpose(src, axes=,
    mask=, dtype=)` into a new SBUF tile, and `dma_transpose(dst, src, axes=, dge_mode=, oob_mode=)`). The
    permutation is fixed by the rank, as documented: 2-D (1, 0), 3-D (2, 1, 0), 4-D (3, 1, 2, 0); src is in
    HBM or SBUF. Charged as a DMA whose every element is its own descriptor (ops.dma, as
    nl.load_transpose2d): a transposed access has no contiguous run longer than one element. The indirect
    (gather) transpose with indices= is not emulated."""
    legacy = "dst" not in kwargs and (len(args) == 1 or (not args and "src" in kwargs))
    if legacy:
        a = _bind(["src", "axes", "mask", "dtype", "dge_mode", "oob_mode", "priority", "name"], args, kwargs,
                  "dma_transpose")
        dst = None
    else:
        a = _bind(["dst", "src", "axes", "dge_mode", "oob_mode", "priority", "name", "mask", "dtype"], args, kwargs,
                  "dma_transpose")
        dst = a["dst"]
    if a.get("indices") is not None:
        raise NotEmulatedError("nisa.dma_transpose(indices=...) (the indirect gather transpose) is part of NKI but "
                               "not of the speedpatch emulator; transpose without indices")
    src = a.get("src")
    if not isinstance(src, Tile) or (dst is not None and not isinstance(dst, Tile)):
        raise NkiError("nisa.dma_transpose: src (and dst) must be tiles")
    if src.buffer.kind not in ("hbm", "sbuf"):
        raise NkiError(f"nisa.dma_transpose: src {src.name!r} is in {src.buffer.name}; it must be in HBM or SBUF")
    axes = DMA_TRANSPOSE_AXES.get(src.ndim)
    if axes is None:
        raise NkiError(f"nisa.dma_transpose: src is {src.ndim}-D {src.shape}; it transposes 2-D, 3-D and 4-D tiles")
    given = a.get("axes")
    if given is not None and tuple(int(x) for x in given) != axes:
        raise NkiError(f"nisa.dma_transpose: axes {tuple(given)} are not supported for a {src.ndim}-D source; the "
                       f"supported axes are (1, 0), (2, 1, 0) and (3, 1, 2, 0), here {axes}")
    mode = a.get("dge_mode")
    if mode is dge_mode.hwdge and not (src.shape[0] == 16 and src.shape[-1] % 128 == 0 and src.dtype.itemsize == 2):
        raise NkiError(f"nisa.dma_transpose(dge_mode=hwdge) needs src.shape[0] == 16, src.shape[-1] a multiple of "
                       f"128 and a 2-byte dtype; src is {src.shape} {src.dtype!r}")
    if mode is dge_mode.swdge:
        raise NkiError("nisa.dma_transpose: dge_mode=swdge is the indirect transpose (with indices); a direct "
                       "transpose takes dge_mode unknown or hwdge")
    shape = tuple(src.shape[i] for i in axes)
    if dst is None:
        dst = nl.ndarray(shape, a.get("dtype") or src.dtype, buffer=sbuf, name="dma_transpose")
    elif tuple(dst.shape) != shape:
        raise NkiError(f"nisa.dma_transpose: dst shape {tuple(dst.shape)} != {shape}, src {tuple(src.shape)} "
                       f"permuted by {axes}")
    return ops.dma(dst, src, mask=a.get("mask"), what="nisa.dma_transpose", permute=axes)


def iota(*args: Any, **kwargs: Any) -> Tile:
    """Values of an index expression (e.g. nl.arange(128)[:, None] * 4 + nl.arange(8)[None, :]), or the
    current form iota(dst, pattern, offset, channel_multiplier=0) (_iota_pattern)."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=bool(args) and isinstance(args[0], Tile), what="iota")
    if "pattern" in kwargs or (rest and _is_pattern(rest[0])):
        return _iota_pattern(dst, rest, kwargs)
    a = _bind(["expr", "dtype"], rest, kwargs, "iota")
    values = np.asarray(a["expr"], dtype=np.float32)
    grid = nl.dense_shape(a["expr"])
    if grid is not None and values.shape != grid:
        # an expression of nl.mgrid axes has the grid's dense shape (nki.language.mgrid): iota(3 * g.x + g.y)
        # fills every partition of the grid, not one
        try:
            values = np.broadcast_to(values, grid)
        except ValueError:
            pass
    if values.ndim == 1:
        values = values[:, None]
    return ops.elementwise("iota", "gpsimd", lambda: values, [], dst=dst, dtype=a.get("dtype") or "int32",
                           mask=a.get("mask")) if dst is not None else _iota_new(values, a)


def _is_pattern(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(
        isinstance(p, (list, tuple)) and len(p) == 2 for p in value)


def _iota_pattern(dst: Tile | None, rest: tuple, kwargs: dict) -> Tile:
    """nki.isa.iota(dst, pattern, offset, channel_multiplier=0) (nki >= 0.3 API reference): on GpSimd, every
    partition c of dst gets offset + c * channel_multiplier + sum(i_k * step_k) over the [step, num] pairs of
    pattern (outermost first, up to 4), computed in 32-bit integer arithmetic and cast to dst's dtype; dst in
    SBUF, its elements per partition the product of the nums."""
    a = _bind(["pattern", "offset", "channel_multiplier"], rest, kwargs, "iota", form="iota/pattern")
    if dst is None:
        raise NkiError("nisa.iota(pattern=...): the destination tile dst is required")
    if dst.buffer.kind != "sbuf":
        raise NkiError(f"nisa.iota: dst must be in SBUF (GpSimd writes SBUF only), {dst.name!r} is in "
                       f"{dst.buffer.name}")
    pattern = a["pattern"]
    if not _is_pattern(pattern) or len(pattern) > 4:
        raise NkiError(f"nisa.iota: pattern must be a list of at most 4 [step, num] pairs, got {pattern!r}")
    try:
        pairs = [(int(step), int(num)) for step, num in pattern]
        offset, multiplier = int(a.get("offset", 0)), int(a.get("channel_multiplier", 0))
    except (TypeError, ValueError):
        raise NkiError(f"nisa.iota: steps, nums, offset and channel_multiplier must be ints, got pattern "
                       f"{pattern!r}") from None
    if any(num <= 0 for _, num in pairs):
        raise NkiError(f"nisa.iota: every num of the pattern must be positive, got {pairs}")
    per_partition = math.prod(num for _, num in pairs)
    if per_partition != dst.free_size:
        raise NkiError(f"nisa.iota: the pattern {pairs} makes {per_partition} values per partition, dst "
                       f"{dst.name!r} {dst.shape} has {dst.free_size}")
    free = np.zeros((1,), dtype=np.int64)
    for step, num in pairs:  # outermost first: each pair's index varies slower than the next one's
        free = (free[:, None] + step * np.arange(num, dtype=np.int64)[None, :]).reshape(-1)
    channel = np.arange(dst.partitions, dtype=np.int64)[:, None] * multiplier
    values = (offset + channel + free[None, :]).reshape(dst.shape)
    return ops.elementwise("iota", "gpsimd", lambda: values, [], dst=dst, integer=True)


def _iota_new(values: np.ndarray, a: dict[str, Any]) -> Tile:
    dst = nl.ndarray(values.shape, a.get("dtype") or "int32", buffer=sbuf, name="iota")
    return ops.elementwise("iota", "gpsimd", lambda: values, [], dst=dst, mask=a.get("mask"))


def bn_stats(*args: Any, **kwargs: Any) -> Tile:
    """Per-partition [mean, variance, count] of data (padded to 6 values), for bn_aggr. Vector engine."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 2, what="bn_stats")
    a = _bind(["data"], rest, kwargs, "bn_stats")
    data = a["data"]
    if data.ndim != 2:
        raise NkiError("nisa.bn_stats: data must be 2-D (partition, free)")
    if data.shape[1] > P.BN_STATS_FMAX:
        raise NkiError(f"nisa.bn_stats: free size {data.shape[1]} > {P.BN_STATS_FMAX} (nl.tile_size.bn_stats_fmax); "
                       f"split the free axis and combine the chunks with bn_aggr")

    mask = fit_mask(a.get("mask"), [data])
    weights = (np.ones(data.shape, dtype=np.float32) if mask is None
               else np.broadcast_to(np.asarray(mask, dtype=bool), data.shape).astype(np.float32))

    def run(x: np.ndarray) -> np.ndarray:
        # statistics over the elements the mask selects (masked-out elements do not count)
        count = weights.sum(axis=1)
        safe = np.maximum(count, 1.0)
        mean = (x * weights).sum(axis=1) / safe
        var = (((x - mean[:, None]) ** 2) * weights).sum(axis=1) / safe
        out = np.zeros((x.shape[0], 6), dtype=np.float32)
        out[:, 0], out[:, 1], out[:, 2] = mean, var, count
        return out

    return ops.elementwise("bn_stats", "vector", run, [data], dst=dst, dtype=a.get("dtype") or "float32", mask=mask)


def bn_aggr(*args: Any, **kwargs: Any) -> Tile:
    """Combine bn_stats chunks (P, 6*k) into (P, 2) = [mean, variance]."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 2, what="bn_aggr")
    a = _bind(["data"], rest, kwargs, "bn_aggr")

    def run(stats: np.ndarray) -> np.ndarray:
        chunks = stats.reshape(stats.shape[0], -1, 6)
        mean, var, count = chunks[..., 0], chunks[..., 1], chunks[..., 2]
        total = count.sum(axis=1, keepdims=True)
        m = (mean * count).sum(axis=1, keepdims=True) / total
        v = ((var + (mean - m) ** 2) * count).sum(axis=1, keepdims=True) / total
        return np.concatenate([m, v], axis=1)

    return ops.elementwise("bn_aggr", "vector", run, [a["data"]], dst=dst, dtype=a.get("dtype") or "float32")


def tensor_scalar_reduce(*args: Any, **kwargs: Any) -> Tile:
    """op0(data, operand0), also reduced along the free axis with reduce_op into reduce_res. Vector engine."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 2 and isinstance(args[1], Tile), what="tensor_scalar_reduce")
    a = _bind(["data", "op0", "operand0", "reduce_op", "reduce_res", "reverse0"], rest, kwargs,
              "tensor_scalar_reduce")
    op0, rev0 = nl.np_binary(a["op0"]), bool(a.get("reverse0", False))
    res = a["reduce_res"]
    if not isinstance(res, Tile):
        raise NkiError("nisa.tensor_scalar_reduce: reduce_res must be a tile")
    out = ops.elementwise("tensor_scalar_reduce", "vector", lambda x, s: op0(s, x) if rev0 else op0(x, s),
                          [a["data"], _vector_operand("nisa.tensor_scalar_reduce", "operand0", a["operand0"], a["data"])],
                          dst=dst, dtype=ops.out_dtype(a.get("dtype"), a["data"]), mask=a.get("mask"), extra_writes=[res],
                          extra_cycles=P.FUSED_REDUCTION_CYCLES)
    values = nl.reduce_fn(a["reduce_op"])(out.read(), axis=tuple(range(1, out.ndim)), keepdims=True)
    res.write(values.reshape(res.shape))
    return out


def tensor_tensor_scan(*args: Any, **kwargs: Any) -> Tile:
    """Along the free axis: out[:, i] = op1(op0(data0[:, i], out[:, i-1]), data1[:, i]), out[:, -1] = initial.
    A sequential scan on the Vector engine (cost as one pass over the tile)."""
    dst, rest = _split_dst(args, kwargs, first_is_dst=len(args) >= 3 and isinstance(args[2], Tile), what="tensor_tensor_scan")
    a = _bind(["data0", "data1", "initial", "op0", "op1", "reverse0", "reverse1"], rest, kwargs, "tensor_tensor_scan")
    op0, op1 = nl.np_binary(a["op0"]), nl.np_binary(a["op1"])

    def run(d0: np.ndarray, d1: np.ndarray, init: Any) -> np.ndarray:
        d0, d1 = np.atleast_2d(d0), np.atleast_2d(d1)
        # annotated: NumPy's stubs give np.empty of a tuple[Any, ...] shape the shape (), so out.shape[1]
        # would read as out of range
        out: np.ndarray = np.empty(np.broadcast_shapes(d0.shape, d1.shape), dtype=np.float32)
        prev = np.broadcast_to(np.asarray(init, dtype=np.float32), (out.shape[0], 1))[:, 0]
        for i in range(out.shape[1]):
            prev = op1(op0(d0[:, i], prev), d1[:, i])
            out[:, i] = prev
        return out

    return ops.elementwise("tensor_tensor_scan", "vector", run, [a["data0"], a["data1"], a["initial"]], dst=dst,
                           dtype=ops.out_dtype(a.get("dtype"), a["data0"]), mask=a.get("mask"))


# The public nki.isa names the emulator implements (for proxies that serve only the public API).
PUBLIC_FUNCTIONS = frozenset({
    "nc_matmul", "nc_transpose", "activation", "activation_reduce", "tensor_scalar", "tensor_tensor",
    "tensor_reduce", "tensor_copy", "tensor_copy_predicated", "reciprocal", "memset", "dma_copy", "dma_compute",
    "iota", "bn_stats",
    "bn_aggr",
    "tensor_scalar_reduce", "tensor_tensor_scan", "affine_select", "get_nc_version", "scalar_tensor_tensor",
    "max8", "nc_find_index8", "tensor_partition_reduce", "dma_transpose", "dropout", "range_select",
    "select_reduce",
})
PUBLIC_VALUES = frozenset({"engine", "tensor_engine", "vector_engine", "scalar_engine", "gpsimd_engine",
                           "unknown_engine", "reduce_cmd", "nc_version", "dge_mode",
                           "oob_mode", "matmul_perf_mode"})


def __getattr__(name: str) -> Any:
    raise nl.not_emulated("nisa", name)
