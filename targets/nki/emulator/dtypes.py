"""NKI data types and hardware rounding.

Values are stored in NumPy arrays: float types as float32 already rounded to their precision (bf16 with
round-to-nearest-even on the float32 bit pattern, fp16 through NumPy's float16), integer types in their
own NumPy type. Compute happens in float32, as on the engines, and is rounded when written.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

import numpy as np
from speedpatch.targets.nki.emulator.errors import NkiError


def _optional_module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - the runner shipped to a bare Trainium host
        return None


# bf16 / fp8 host arrays (a dependency of speedpatch; optional for the standalone runner)
ml_dtypes = _optional_module("ml_dtypes")


@dataclass(frozen=True)
class DType:
    name: str
    itemsize: int  # bytes on the device
    storage: type  # NumPy type the emulator stores values in
    is_float: bool

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    def round(self, values: np.ndarray) -> np.ndarray:
        """Values converted to this type as the hardware writes them."""
        if self.name == "bfloat16":
            return round_bf16(values)
        if self.name.startswith("float8") and ml_dtypes is not None:
            kind = ml_dtypes.float8_e4m3fn if self.name == "float8_e4m3" else ml_dtypes.float8_e5m2
            return np.asarray(values, dtype=np.float32).astype(kind).astype(np.float32)
        if self.name == "float16":
            return np.asarray(values, dtype=np.float32).astype(np.float16).astype(np.float32)
        if self.name == "tfloat32":
            return round_tf32(values)
        if self.is_float:
            return np.asarray(values, dtype=np.float32)
        info = np.iinfo(self.storage)
        vals = np.asarray(values)
        if vals.dtype.kind == "f":
            vals = np.nan_to_num(np.trunc(vals), nan=0.0)
        return np.clip(vals, info.min, info.max).astype(self.storage)


def round_bf16(values: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 (round to nearest, ties to even), returned as float32."""
    if ml_dtypes is not None:
        return np.asarray(values, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)
    x = np.ascontiguousarray(values, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    bias = ((bits >> 16) & 1) + 0x7FFF
    rounded = ((bits + bias) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, rounded).astype(np.float32)


def round_tf32(values: np.ndarray) -> np.ndarray:
    """float32 -> tfloat32 (1 sign, 8 exponent, 10 mantissa bits: nki.language.tfloat32 docs "(1S,8E,10M)"),
    round to nearest, ties to even, as bf16; returned as float32. The Tensor engine multiplies tf32 at the
    16-bit rate (one pass, not fp32's four): without this rounding an fp32 matmul loaded as tf32 kept fp32's
    24-bit precision at a quarter of the cost (red-team: 512^3 fp32 matmul correct at 20.3 us against the
    honest 25.6 us)."""
    x = np.ascontiguousarray(values, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    bias = ((bits >> 13) & 1) + 0xFFF
    rounded = ((bits + bias) & 0xFFFFE000).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, rounded).astype(np.float32)


float32 = DType("float32", 4, np.float32, True)
bfloat16 = DType("bfloat16", 2, np.float32, True)
float16 = DType("float16", 2, np.float32, True)
tfloat32 = DType("tfloat32", 4, np.float32, True)
int32 = DType("int32", 4, np.int32, False)
int16 = DType("int16", 2, np.int16, False)
int8 = DType("int8", 1, np.int8, False)
uint32 = DType("uint32", 4, np.uint32, False)
uint16 = DType("uint16", 2, np.uint16, False)
uint8 = DType("uint8", 1, np.uint8, False)
bool_ = DType("bool_", 1, np.uint8, False)
float8_e4m3 = DType("float8_e4m3", 1, np.float32, True)
float8_e5m2 = DType("float8_e5m2", 1, np.float32, True)

ALL = {d.name: d for d in (float32, bfloat16, float16, tfloat32, int32, int16, int8, uint32, uint16, uint8, bool_,
                           float8_e4m3, float8_e5m2)}
_FROM_NUMPY = {
    np.dtype(np.float32): float32,
    np.dtype(np.float64): float32,  # host float64 inputs are passed as fp32, as the Neuron runtime does
    np.dtype(np.float16): float16,
    np.dtype(np.int32): int32,
    np.dtype(np.int64): int32,
    np.dtype(np.int16): int16,
    np.dtype(np.int8): int8,
    np.dtype(np.uint8): uint8,
    np.dtype(np.uint16): uint16,
    np.dtype(np.uint32): uint32,
    np.dtype(np.bool_): bool_,
}
if ml_dtypes is not None:
    _FROM_NUMPY[np.dtype(ml_dtypes.bfloat16)] = bfloat16
    _FROM_NUMPY[np.dtype(ml_dtypes.float8_e4m3fn)] = float8_e4m3
    _FROM_NUMPY[np.dtype(ml_dtypes.float8_e5m2)] = float8_e5m2


def as_dtype(value: object) -> DType:
    """Accept nl.<dtype>, a NumPy dtype/type, or a name such as "bfloat16"."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in ALL:
        return ALL[value]
    try:
        # any value at all (NumPy's stubs list what it accepts); what it cannot read raises TypeError
        np_dtype = np.dtype(value)  # type: ignore[call-overload]
    except TypeError:
        np_dtype = None
    if np_dtype is not None and np_dtype in _FROM_NUMPY:
        return _FROM_NUMPY[np_dtype]
    raise NkiError(f"unsupported dtype {value!r}; use nl.float32, nl.bfloat16, nl.float16 or an integer type")


def numpy_dtype(dtype: DType) -> np.dtype:
    """The host NumPy type for returning a tensor of this type (bf16 as ml_dtypes.bfloat16 when installed;
    tf32/fp8 come back as float32)."""
    if dtype is float16:
        return np.dtype(np.float16)
    if dtype is bfloat16 and ml_dtypes is not None:
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype.storage)


def promote(*dtypes: DType) -> DType:
    """Result type of an op on mixed inputs without an explicit dtype: the widest float, else int32."""
    floats = [d for d in dtypes if d.is_float]
    if not floats:
        return dtypes[0] if len(set(dtypes)) == 1 else int32
    return max(floats, key=lambda d: d.itemsize) if len(set(floats)) > 1 else floats[0]
