"""Real timing on a local GPU. Skipped (with the reason) on machines without one, like this project's
development machines; run them where a GPU is lent (scripts/gpu_check.py does the end-to-end part)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from speedpatch.model import INCORRECT, OK
from speedpatch.targets.cuda.backends.local import CudaLocalBackend

from .conftest import EXAMPLES, MATMUL_FP16, context, needs_gpu

pytestmark = [pytest.mark.slow, needs_gpu]
QUICK = {"trials": 20, "warmup": 2, "seeds": 2}


def test_matmul_is_timed_with_a_full_receipt(tmp_path: Path, matmul_source: str, compile_cache: Path) -> None:
    slower = matmul_source.replace("#define BLOCK 16", "#define BLOCK 8")
    ev = CudaLocalBackend().evaluate(slower, context(tmp_path, settings={**QUICK, "cache_dir": str(compile_cache)},
                                                     baseline=matmul_source))
    assert ev.status == OK, ev.message + ev.log
    assert ev.unit == "ms" and ev.value > 0 and ev.spread is not None
    r = ev.receipt
    assert r["trials"] == 20 and r["warmups"] == 2 and r["inputs"]["seeds"] == 2 and r["device"]["name"]
    assert r["ci"]["low_ms"] <= ev.value <= r["ci"]["high_ms"]
    assert ev.feedback["kernels"]["matmul_kernel"]["registers"] > 0


def test_kernel_writing_a_constant_is_incorrect(tmp_path: Path, matmul_source: str, compile_cache: Path) -> None:
    constant = matmul_source.replace("C[row * n + col] = acc;", "C[row * n + col] = 1.0f;")
    ev = CudaLocalBackend().evaluate(constant, context(tmp_path, settings={**QUICK, "cache_dir": str(compile_cache)},
                                                       baseline=matmul_source))
    assert ev.status == INCORRECT and "differ from the reference" in ev.message


def test_kernel_that_skips_part_of_the_output_is_incorrect(tmp_path: Path, matmul_source: str,
                                                           compile_cache: Path) -> None:
    partial = matmul_source.replace("if (row < n && col < n) {", "if (row < n - 1 && col < n) {")
    ev = CudaLocalBackend().evaluate(partial, context(tmp_path, settings={**QUICK, "cache_dir": str(compile_cache)},
                                                      baseline=matmul_source))
    assert ev.status == INCORRECT  # the output starts as NaN: unwritten rows cannot pass


def test_fp16_matmul_passes_on_the_device_with_fp16_in_the_receipt(tmp_path: Path, compile_cache: Path) -> None:
    # The device's __half2float / __float2half and the harness's own host conversions must agree.
    source = MATMUL_FP16.read_text()
    slower = source.replace("#define BLOCK 16", "#define BLOCK 8")
    ev = CudaLocalBackend().evaluate(slower, context(tmp_path, source_path=MATMUL_FP16, baseline=source,
                                                     settings={**QUICK, "cache_dir": str(compile_cache)}))
    assert ev.status == OK, ev.message + ev.log
    assert (ev.receipt["inputs"]["element"], ev.receipt["inputs"]["element_bytes"]) == ("fp16", 2)


def test_fp16_kernel_writing_fp32_results_into_half_buffers_is_incorrect(tmp_path: Path, compile_cache: Path) -> None:
    source = MATMUL_FP16.read_text()
    wrong = source.replace("C[row * n + col] = __float2half(acc);",
                           "if (row * n + col < n * n / 2) reinterpret_cast<float*>(C)[row * n + col] = acc;")
    ev = CudaLocalBackend().evaluate(wrong, context(tmp_path, source_path=MATMUL_FP16, baseline=source,
                                                    settings={**QUICK, "cache_dir": str(compile_cache)}))
    assert ev.status == INCORRECT and "differ from the reference" in ev.message


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
def test_kernelbench_problem_runs_with_torch(tmp_path: Path, compile_cache: Path) -> None:
    path = EXAMPLES / "kernelbench_relu.py"
    ev = CudaLocalBackend().evaluate(path.read_text(), context(tmp_path, source_path=path,
                                                               settings={**QUICK, "cache_dir": str(compile_cache)}))
    assert ev.status == OK, ev.message + ev.log
    assert ev.feedback["pytorch_reference_ms"] > 0
