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

# Keeps every input set it is given with its output, and on a call whose inputs it has seen copies the kept
# output: correct in every call, and at copy speed where the harness repeats inputs. It says on stderr where it
# served a kept output (a real one would not), so that the test reads which calls it could have cheated on.
MEMOIZES = """
#include <cstdio>
#include <cstring>
#include <vector>
static int calls = 0;
static std::vector<std::vector<float>> kept;  // x, y, output of each input set seen
void launch(const float* const* in, float* out) {
  ++calls;
  for (const std::vector<float>& k : kept)
    if (std::memcmp(k.data(), in[0], N * 4) == 0 && std::memcmp(k.data() + N, in[1], N * 4) == 0) {
      std::memcpy(out, k.data() + 2 * N, N * 4);
      std::fprintf(stderr, "memo hit on call %d\\n", calls);
      return;
    }
  for (int i = 0; i < N; ++i) out[i] = 2.0f * in[0][i] + in[1][i];
  std::vector<float> k(in[0], in[0] + N);
  k.insert(k.end(), in[1], in[1] + N);
  k.insert(k.end(), out, out + N);
  kept.push_back(k);
}
"""


def run_pair(tmp_path: Path, candidate: str) -> dict:
    """The A/B program of `candidate` against the problem's right solution, run once: its result line, with
    the program's stderr under "stderr"."""
    write_units(kit_units(hostcode.PROBLEM + candidate, hostcode.PROBLEM + hostcode.RIGHT, "axpy.cu"), tmp_path)
    gxx = shutil.which("g++")
    assert gxx is not None
    for unit in ("main.cu", "baseline.cu", "candidate.cu"):
        subprocess.run([gxx, "-std=c++17", "-O0", "-x", "c++", f"-I{hostcode.HOST_CUDA}", "-I.", "-c", unit,
                        "-o", unit + ".o"], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run([gxx, "main.cu.o", "baseline.cu.o", "candidate.cu.o", "-o", "bench"], cwd=tmp_path, check=True)
    done = subprocess.run([str(tmp_path / "bench"), *ARGS], capture_output=True, text=True, timeout=60)
    result = parse_result(done.stdout) or {"status": "no result", "output": done.stdout + done.stderr}
    return {**result, "stderr": done.stderr}


def test_a_solution_right_only_in_the_calls_the_harness_checks_is_incorrect(tmp_path: Path) -> None:
    result = run_pair(tmp_path, ONLY_RIGHT_WHEN_CHECKED)
    assert result["status"] == "incorrect", result
    assert "timing loop" in result["message"] and "timed call 1 of 5" in result["message"], result["message"]


def test_a_solution_that_keeps_outputs_by_input_content_never_meets_a_timed_call_it_has_seen(tmp_path: Path) -> None:
    result = run_pair(tmp_path, MEMOIZES)
    assert result["status"] == "ok", result  # it is correct: what must not happen is a timed call it could copy
    hits = [int(line.rsplit(" ", 1)[1]) for line in result["stderr"].splitlines() if line.startswith("memo hit on call")]
    timed = range(SEEDS + WARMUP + 1, SEEDS + WARMUP + TRIALS + 1)
    assert not [call for call in hits if call in timed], f"kept outputs served in timed calls: {hits}"
    assert hits, "the warm-ups repeat a seed's inputs: the solution's cache must be seen to work"
