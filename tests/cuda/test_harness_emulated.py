"""The harness kit's logic, run for real without a GPU: the generated A/B translation units are compiled
by g++ against a host stand-in for the CUDA runtime (host_cuda/cuda_runtime.h), with solutions written
as host code. What a GPU adds (real kernels, real timing) is covered by test_gpu.py where a GPU exists."""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
from speedpatch.targets.cuda.build import kit_units, write_units
from speedpatch.targets.cuda.results import parse_result

from .hostcode import HOST_CUDA, PROBLEM, RIGHT, WRONG

pytestmark = pytest.mark.slow  # a few g++ builds, shared by the module

ARGS = ["--seeds", "2", "--warmup", "1", "--trials", "5"]


# One candidate unit holding every behaviour, chosen at run time by SPEEDPATCH_TEST_VARIANT, so that the
# module needs four g++ compiles instead of one build per behaviour.
CANDIDATE = r"""
#include <cstdlib>
#include <cstring>
#include <thread>
static const char* variant() { const char* v = std::getenv("SPEEDPATCH_TEST_VARIANT"); return v ? v : "same"; }
static bool is(const char* name) { return std::strcmp(variant(), name) == 0; }
static int calls = 0;
static const float* seen = nullptr;
static float saved[N];

void launch(const float* const* in, float* out) {
  ++calls;
  if (is("pointer_cache") && seen == in[0]) {  // reuses its first result for the same input pointer
    for (int i = 0; i < N; ++i) out[i] = saved[i];
    return;
  }
  int n = is("skips_last") ? N - 1 : N;
  float a = is("wrong") ? 3.0f : 2.0f;
  for (int i = 0; i < n; ++i) out[i] = is("constant") ? 1.0f : a * in[0][i] + in[1][i];
  // Right for the correctness checks (2 seeds + 1 warm-up), wrong in the later timed calls.
  if (is("drifts") && calls > 3) out[7] += 1.0f;
  if (is("pointer_cache")) { std::memcpy(saved, out, sizeof saved); seen = in[0]; }
  // Finishes its work after the timed region, as work on an unsynchronised stream would.
  if (is("side_work")) fake_defer([] { std::this_thread::sleep_for(std::chrono::milliseconds(3)); });
}
"""
VARIANTS = ["same", "wrong", "constant", "skips_last", "drifts", "pointer_cache", "side_work"]


@pytest.fixture(scope="module")
def runs(gxx: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Results of the multi-behaviour candidate against the right baseline, per variant, plus the right
    candidate against a wrong baseline and a run with no device."""
    root = tmp_path_factory.mktemp("emulated")
    flags = [gxx, "-std=c++17", "-O0", "-x", "c++", f"-I{HOST_CUDA}", "-I."]
    right = PROBLEM + RIGHT
    write_units(kit_units(PROBLEM + CANDIDATE, right, "axpy.cu"), root)
    (root / "wrong_baseline.cu").write_text(kit_units(right, PROBLEM + WRONG, "axpy.cu").files["baseline.cu"])

    def compile_unit(unit: str) -> None:
        subprocess.run([*flags, "-c", unit, "-o", unit + ".o"], cwd=root, check=True, capture_output=True)

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(compile_unit, ["main.cu", "baseline.cu", "candidate.cu", "wrong_baseline.cu"]))
    subprocess.run([gxx, "main.cu.o", "baseline.cu.o", "candidate.cu.o", "-o", "bench"], cwd=root, check=True)
    subprocess.run([gxx, "main.cu.o", "wrong_baseline.cu.o", "candidate.cu.o", "-o", "bench_wrong_baseline"],
                   cwd=root, check=True)

    def run(binary: str, **env: str) -> dict:
        result_file = root / "result.json"
        result_file.unlink(missing_ok=True)
        done = subprocess.run([str(root / binary), *ARGS, "--result", str(result_file)], capture_output=True,
                              text=True, timeout=60, env={**os.environ, **env})
        printed = parse_result(done.stdout) or {"status": "no result", "output": done.stdout + done.stderr}
        assert parse_result(result_file.read_text()) == printed  # the --result file holds the same line
        return printed

    results = {name: run("bench", SPEEDPATCH_TEST_VARIANT=name) for name in VARIANTS}
    results["baseline_wrong"] = run("bench_wrong_baseline")
    results["no_device"] = run("bench", FAKE_CUDA_NO_DEVICE="1")
    return results


def test_identical_candidate_is_correct_and_timed_with_every_receipt_field(runs: dict) -> None:
    r = runs["same"]
    assert r["status"] == "ok", r
    assert (r["seeds"], r["warmup"], r["trials"]) == (2, 1, 5)
    assert r["candidate_ms"]["n"] == 5 and r["baseline_ms"]["n"] == 5 and r["speedup"]["n"] == 5
    assert r["flush_bytes"] >= 1.5 * r["device"]["l2_bytes"]
    assert r["device"]["name"] == "Host stand-in" and r["problem"] == "axpy" and r["shapes"] == "x 4096, y 4096"
    assert r["achieved_gflops"] is not None and r["achieved_gbps"] is not None


@pytest.mark.parametrize("name", ["wrong", "constant", "skips_last", "pointer_cache"])
def test_wrong_candidates_are_incorrect_on_the_seeds(name: str, runs: dict) -> None:
    assert runs[name]["status"] == "incorrect", runs[name]
    assert "differ from the reference" in runs[name]["message"]


def test_candidate_that_goes_wrong_during_timing_fails_the_recheck(runs: dict) -> None:
    assert runs["drifts"]["status"] == "incorrect"
    assert "timing loop" in runs["drifts"]["message"]  # found at its first wrong timed call


def test_work_outside_the_timed_stream_is_rejected(runs: dict) -> None:
    assert runs["side_work"]["status"] == "rejected", runs["side_work"]
    assert "beyond its timed stream" in runs["side_work"]["message"]


def test_wrong_baseline_is_reported_as_such(runs: dict) -> None:
    assert runs["baseline_wrong"]["status"] == "baseline_incorrect"


def test_no_device_is_reported_not_crashed(runs: dict) -> None:
    assert runs["no_device"]["status"] == "no_device" and "no CUDA" in runs["no_device"]["message"]
