"""The hardware's own bound: no correct kernel runs faster than its problem's minimum DRAM traffic over the
device's peak bandwidth, or its FLOPs over the device's peak rate at the precision the problem allows.

The problem (trusted harness) states `flops` and `bytes` per call; the device comes from the harness's
result (name, SM count, and the peaks it computed from device attributes). Peaks are taken from the
vendor's datasheets where the device is in the table below (dense figures: the datasheets' tensor-core
numbers "with sparsity" are halved), else from the attributes the harness read (DRAM bandwidth, fp32 FMA
rate; tensor-core peaks are then estimated generously as 16x the fp32 rate).

The bound charges HALF of the ideal time (SLACK): the harness's `bytes` count the output too, which may
still sit in L2 when the stop event completes, and a problem's FLOP count may be beaten by an algorithm
with fewer operations (Strassen). A figure below even half the ideal is not a kernel doing the work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SLACK = 0.5


@dataclass(frozen=True)
class Peaks:
    gbps: float  # DRAM bandwidth, GB/s
    tflops: dict[str, float]  # dense peak by arithmetic: fp32 (CUDA cores), tf32/fp16/bf16/fp8 (tensor cores)
    source: str


# Matched by substring of the device name, most specific first.
DEVICES: list[tuple[str, Peaks]] = [
    ("H200", Peaks(4800, {"fp32": 67, "tf32": 494.5, "fp16": 989.5, "bf16": 989.5, "fp8": 1979},
                   "NVIDIA H200 datasheet (SXM): 4.8 TB/s HBM3e; FP32 67 TFLOPS; TF32/FP16/BF16/FP8 989/1979/1979/3958 "
                   "TFLOPS with sparsity (halved here)")),
    ("H100 PCIe", Peaks(2000, {"fp32": 51, "tf32": 378, "fp16": 756, "bf16": 756, "fp8": 1513},
                        "NVIDIA H100 datasheet (PCIe): 2 TB/s; FP32 51 TFLOPS; tensor figures with sparsity halved")),
    ("H100", Peaks(3350, {"fp32": 67, "tf32": 494.5, "fp16": 989.5, "bf16": 989.5, "fp8": 1979},
                   "NVIDIA H100 datasheet (SXM5): 3.35 TB/s HBM3; FP32 67 TFLOPS; tensor figures with sparsity halved")),
    ("A100-SXM4-80GB", Peaks(2039, {"fp32": 19.5, "tf32": 156, "fp16": 312, "bf16": 312},
                             "NVIDIA A100 datasheet (80GB SXM): 2,039 GB/s; FP32 19.5, TF32 156, FP16/BF16 312 TFLOPS")),
    ("A100", Peaks(1935, {"fp32": 19.5, "tf32": 156, "fp16": 312, "bf16": 312},
                   "NVIDIA A100 datasheet (80GB PCIe 1,935 GB/s; 40GB 1,555 GB/s: the larger is used)")),
    ("L40S", Peaks(864, {"fp32": 91.6, "tf32": 183, "fp16": 366, "bf16": 366, "fp8": 733},
                   "NVIDIA L40S datasheet: 864 GB/s; FP32 91.6 TFLOPS; tensor figures with sparsity halved")),
    ("RTX 4090", Peaks(1008, {"fp32": 82.6, "tf32": 82.6, "fp16": 165.2, "bf16": 165.2, "fp8": 330.3},
                       "NVIDIA Ada GPU architecture whitepaper, RTX 4090: 1,008 GB/s; FP32 82.6 TFLOPS; FP16/BF16 tensor "
                       "165.2 TFLOPS (FP32 accumulate), TF32 82.6")),
]
TENSOR_ESTIMATE = 16.0  # unknown device: tensor-core peak assumed at most 16x its fp32 FMA rate
# The arithmetic a problem's precision allows its kernels to use (guards.PERMITTED plus itself).
ARITHMETIC = {"fp32": ["fp32"], "tf32": ["fp32", "tf32"], "fp16": ["fp32", "tf32", "fp16"],
              "bf16": ["fp32", "tf32", "bf16"]}


def peaks_for(device: dict[str, Any]) -> Peaks | None:
    name = str(device.get("name", ""))
    for key, peaks in DEVICES:
        if key.lower() in name.lower():
            return peaks
    gbps, gflops = device.get("peak_gbps"), device.get("peak_gflops_fp32")
    if not isinstance(gbps, (int, float)) or not isinstance(gflops, (int, float)) or gbps <= 0 or gflops <= 0:
        return None
    tf = gflops / 1e3
    return Peaks(float(gbps), {"fp32": tf, "tf32": tf * TENSOR_ESTIMATE, "fp16": tf * TENSOR_ESTIMATE,
                               "bf16": tf * TENSOR_ESTIMATE},
                 f"device attributes read by the harness ({gbps:.0f} GB/s, {gflops:.0f} GFLOP/s fp32; tensor cores "
                 f"estimated at {TENSOR_ESTIMATE:.0f}x)")


def bound_ms(device: dict[str, Any], flops: float, nbytes: float, precision: str) -> tuple[float, str] | None:
    """(the fastest time the device allows for the problem, in ms, with how it was computed), or None."""
    peaks = peaks_for(device)
    if peaks is None or (flops <= 0 and nbytes <= 0):
        return None
    kinds = ARITHMETIC.get(precision, ["fp32"])
    rate = max(peaks.tflops.get(k, 0.0) for k in kinds)
    memory_ms = nbytes / (peaks.gbps * 1e9) * 1e3 if nbytes > 0 else 0.0
    compute_ms = flops / (rate * 1e12) * 1e3 if flops > 0 and rate > 0 else 0.0
    if memory_ms >= compute_ms:
        how = f"{nbytes:.4g} bytes at {peaks.gbps:.0f} GB/s = {memory_ms:.4g} ms"
    else:
        how = f"{flops:.4g} FLOPs at {rate:.4g} TFLOP/s ({precision} problem) = {compute_ms:.4g} ms"
    return max(memory_ms, compute_ms), f"{how}; peaks: {peaks.source}"


def violation(data: dict[str, Any], precision: str) -> str:
    """'' when the candidate's median is physically possible, else why not (with the numbers)."""
    median = (data.get("candidate_ms") or {}).get("median")
    flops, nbytes = data.get("flops"), data.get("bytes")
    if not isinstance(median, (int, float)) or not isinstance(flops, (int, float)) or not isinstance(nbytes, (int, float)):
        return ""
    found = bound_ms(data.get("device") or {}, float(flops), float(nbytes), precision)
    if found is None:
        return ""
    ideal, how = found
    if median >= SLACK * ideal:
        return ""
    device = (data.get("device") or {}).get("name", "this device")
    return (f"the candidate's median {median:.4g} ms is below what {device} allows for this problem "
            f"({how}; even half of that, {SLACK * ideal:.4g} ms, is more): it cannot have done the work")
