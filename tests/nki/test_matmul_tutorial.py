"""The matmul tutorial's four versions rank on the cost model as they do on trn1 (published 51.80, 42.96,
22.07, 6.97 ms at the tutorial's shape; benchmarks/nki_matmul_tutorial.py compares the ratios there).
Here, at a shape small enough for a unit test, each version must be correct and clearly faster than the
one before it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from speedpatch.targets.nki.emulator.jit import last_report

KERNELS = Path(__file__).resolve().parent / "kernels" / "matmul_tutorial.py"


def _tutorial() -> object:
    spec = importlib.util.spec_from_file_location("matmul_tutorial_kernels", KERNELS)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.slow
def test_each_tutorial_version_is_correct_and_faster_than_the_one_before():
    tutorial = _tutorial()
    rng = np.random.default_rng(0)
    k, m, n = 2048, 512, 1024
    lhs_t = rng.standard_normal((k, m), dtype=np.float32).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((k, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
    expected = lhs_t.astype(np.float32).T @ rhs.astype(np.float32)
    latencies = []
    versions = (("tiled", {}), ("hoisted", {}), ("block_free", {}), ("optimized", {"tiles_m": 4}))
    for name, params in versions:
        out = tutorial.KERNELS[name](lhs_t, rhs, **params)  # type: ignore[attr-defined]
        assert out.dtype == np.dtype(ml_dtypes.bfloat16)
        # bf16 output of a K=2048 fp32-accumulated sum: within bf16 rounding of the largest values
        np.testing.assert_allclose(out.astype(np.float32), expected, rtol=2e-2, atol=2e-2 * np.abs(expected).max())
        latencies.append(last_report()["latency_us"])
    for (slower, _), (faster, _), before, after in zip(versions, versions[1:], latencies, latencies[1:], strict=False):
        assert after < 0.9 * before, f"{faster} ({after} us) is not clearly faster than {slower} ({before} us)"

