"""Attacks on the .cu harness's schedule of calls, run for real without a GPU: the A/B program's translation
units are compiled by g++ against the host stand-in for the CUDA runtime (tests/cuda/host_cuda), with the
solutions written as host code (as tests/cuda/test_harness_emulated.py does for honest and wrong ones).

The harness calls each side a fixed number of times, fixed by its command line (--seeds, --warmup,
--trials): a solution that counts its calls knows which of them are checked and which are only timed."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest
from speedpatch.targets.cuda.build import kit_units, write_units
from speedpatch.targets.cuda.results import parse_result

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")]

_spec = importlib.util.spec_from_file_location("hostcode", Path(__file__).parents[1] / "cuda" / "hostcode.py")
assert _spec is not None and _spec.loader is not None
hostcode = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hostcode)

SEEDS, WARMUP, TRIALS = 2, 1, 5
ARGS = ["--seeds", str(SEEDS), "--warmup", str(WARMUP), "--trials", str(TRIALS)]

# Right in the calls it knows are checked (one per seed, then the re-check after the timing loop) and in the
# warm-ups; in the timed calls it returns at once, leaving the output as it found it.
ONLY_RIGHT_WHEN_CHECKED = f"""
static int calls = 0;
void launch(const float* const* in, float* out) {{
  ++calls;
  bool timed = calls > {SEEDS + WARMUP} && calls <= {SEEDS + WARMUP + TRIALS};
  if (timed) return;
  for (int i = 0; i < N; ++i) out[i] = 2.0f * in[0][i] + in[1][i];
}}
"""


def run_pair(tmp_path: Path, candidate: str) -> dict:
    """The A/B program of `candidate` against the problem's right solution, run once: its result line."""
    write_units(kit_units(hostcode.PROBLEM + candidate, hostcode.PROBLEM + hostcode.RIGHT, "axpy.cu"), tmp_path)
    gxx = shutil.which("g++")
    assert gxx is not None
    for unit in ("main.cu", "baseline.cu", "candidate.cu"):
        subprocess.run([gxx, "-std=c++17", "-O0", "-x", "c++", f"-I{hostcode.HOST_CUDA}", "-I.", "-c", unit,
                        "-o", unit + ".o"], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run([gxx, "main.cu.o", "baseline.cu.o", "candidate.cu.o", "-o", "bench"], cwd=tmp_path, check=True)
    done = subprocess.run([str(tmp_path / "bench"), *ARGS], capture_output=True, text=True, timeout=60)
    return parse_result(done.stdout) or {"status": "no result", "output": done.stdout + done.stderr}


def test_a_solution_right_only_in_the_calls_the_harness_checks_is_incorrect(tmp_path: Path) -> None:
    result = run_pair(tmp_path, ONLY_RIGHT_WHEN_CHECKED)
    assert result["status"] == "incorrect", result
    assert "timing loop" in result["message"] and "timed call 1 of 5" in result["message"], result["message"]
