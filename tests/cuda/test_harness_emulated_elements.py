"""fp16 and bf16 problems through the harness kit, run for real without a GPU (as in test_harness_emulated.py:
g++ against the host stand-ins in host_cuda/, which here include cuda_fp16.h and cuda_bf16.h). The buffers
hold 16-bit values; inputs are rounded before the reference sees them; outputs are widened to compare."""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from speedpatch.targets.cuda.build import INCLUDE_DIR, kit_units, write_units
from speedpatch.targets.cuda.problem import split_problem
from speedpatch.targets.cuda.results import parse_result

pytestmark = pytest.mark.slow  # six g++ compiles, shared by the module

HOST_CUDA = Path(__file__).parent / "host_cuda"
ARGS = ["--seeds", "2", "--warmup", "1", "--trials", "3"]

# Per element: the C++ type, the stand-in conversions a solution uses, and the bit function of the OTHER
# 16-bit format (a kernel writing that format into these buffers is wrong). The tolerances are tight on
# purpose: rtol just above the element's output rounding (2^-11 for fp16, 2^-8 for bf16) and a tiny atol,
# so the honest kernel passes only if the reference really got the rounded inputs the kernel got (unrounded
# inputs move outputs near zero by far more than 1e-6).
ELEMENTS = {
    "fp16": ("__half", "__half2float", "__float2half", "spd::float_to_bf16_bits", "1e-3"),
    "bf16": ("__nv_bfloat16", "__bfloat162float", "__float2bfloat16", "spd::float_to_half_bits", "1e-2"),
}

PROBLEM = """#define SPEEDPATCH_ELEMENT {ctype}
#include "speedpatch_timing.cuh"
constexpr int N = 4096;

static void reference(const float* const* in, float* out) {{
  for (int i = 0; i < N; ++i) out[i] = 2.0f * in[0][i] + in[1][i];
}}

static spd::Spec problem() {{
  spd::Spec s;
  s.name = "axpy";
  s.inputs = {{{{"x", N}}, {{"y", N}}}};
  s.output_count = N;
  s.reference = reference;
  s.rtol = {rtol};
  s.atol = 1e-6;
  s.bytes = 3.0 * N * sizeof(spd::elem);
  s.shapes = "x 4096, y 4096";
  return s;
}}

// speedpatch: solution
"""

RIGHT = """void launch(const {ctype}* const* in, {ctype}* out) {{
  for (int i = 0; i < N; ++i) out[i] = {narrow}(2.0f * {widen}(in[0][i]) + {widen}(in[1][i]));
}}
"""

CANDIDATE = r"""
#include <cstdlib>
#include <cstring>
static bool is(const char* name) {{
  const char* v = std::getenv("SPEEDPATCH_TEST_VARIANT");
  return std::strcmp(v ? v : "same", name) == 0;
}}

void launch(const {ctype}* const* in, {ctype}* out) {{
  float a = is("wrong") ? 3.0f : 2.0f;
  int n = is("skips_last") ? N - 1 : N;
  for (int i = 0; i < n; ++i) {{
    float value = is("constant") ? 1.0f : a * {widen}(in[0][i]) + {widen}(in[1][i]);
    if (is("float_bits")) {{  // treats the output as fp32: half the elements' bytes, holding float bits
      if (i < N / 2) reinterpret_cast<float*>(out)[i] = value;
    }} else if (is("other_format")) {{  // the right value, encoded in the other 16-bit format
      uint16_t bits = {other}(value);
      std::memcpy(&out[i], &bits, sizeof bits);
    }} else {{
      out[i] = {narrow}(value);
    }}
  }}
}}
"""
VARIANTS = ["same", "wrong", "constant", "skips_last", "float_bits", "other_format"]

def _problem(element: str) -> str:
    ctype, _, _, _, rtol = ELEMENTS[element]
    return PROBLEM.format(ctype=ctype, rtol=rtol)


def _solution(template: str, element: str) -> str:
    ctype, widen, narrow, other, _ = ELEMENTS[element]
    return template.format(ctype=ctype, widen=widen, narrow=narrow, other=other)


@pytest.fixture(scope="module")
def runs(gxx: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Per element: the multi-behaviour candidate against the right baseline, per variant. (A solution that
    keeps the fp32 `launch` signature fails to link: test_nvcc_builds.py checks that through the real build.)"""
    # -O1: a little more compile time buys much faster runs (every call writes a 64 MB "L2 flush" buffer).
    flags = [gxx, "-std=c++17", "-O1", "-x", "c++", f"-I{HOST_CUDA}", "-I."]
    roots = {element: tmp_path_factory.mktemp(element) for element in ELEMENTS}
    jobs = []
    for element, root in roots.items():
        right = _problem(element) + _solution(RIGHT, element)
        write_units(kit_units(_problem(element) + _solution(CANDIDATE, element), right, "axpy.cu"), root)
        jobs += [(root, unit) for unit in ("main.cu", "baseline.cu", "candidate.cu")]

    def compile_unit(job: tuple[Path, str]) -> None:
        root, unit = job
        subprocess.run([*flags, "-c", unit, "-o", unit + ".o"], cwd=root, check=True, capture_output=True)

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(compile_unit, jobs))
    results: dict[str, dict] = {}
    for element, root in roots.items():
        subprocess.run([gxx, "main.cu.o", "baseline.cu.o", "candidate.cu.o", "-o", "bench"], cwd=root, check=True)
        for variant in VARIANTS:
            done = subprocess.run([str(root / "bench"), *ARGS], capture_output=True, text=True, timeout=60,
                                  env={**os.environ, "SPEEDPATCH_TEST_VARIANT": variant})
            results[f"{element} {variant}"] = parse_result(done.stdout) or {"status": "no result",
                                                                             "output": done.stdout + done.stderr}
    return results


@pytest.mark.parametrize("element", list(ELEMENTS))
def test_right_kernel_on_16_bit_buffers_passes_with_the_element_in_the_receipt(element: str, runs: dict) -> None:
    r = runs[f"{element} same"]
    assert r["status"] == "ok", r
    assert (r["element"], r["element_bytes"]) == (element, 2)
    assert r["candidate_ms"]["n"] == 3 and r["problem"] == "axpy"


@pytest.mark.parametrize("element", list(ELEMENTS))
@pytest.mark.parametrize("variant", ["wrong", "constant", "skips_last", "float_bits", "other_format"])
def test_wrong_kernels_on_16_bit_buffers_are_incorrect(element: str, variant: str, runs: dict) -> None:
    r = runs[f"{element} {variant}"]
    assert r["status"] == "incorrect", r
    assert "differ from the reference" in r["message"]


@pytest.mark.parametrize("element", list(ELEMENTS))
def test_problem_layout_names_the_element_and_takes_its_precision(element: str) -> None:
    layout = split_problem(_problem(element) + _solution(RIGHT, element), "axpy.cu")
    assert layout is not None and (layout.element, layout.precision) == (element, element)


def test_kit_header_refuses_an_element_type_it_does_not_know(gxx: str, tmp_path: Path) -> None:
    # `half` is cuda_fp16.h's alias of __half, but the kit keys on the three canonical spellings only.
    (tmp_path / "p.cu").write_text(PROBLEM.format(ctype="half", rtol="1e-2") + "void launch();\n")
    done = subprocess.run([gxx, "-std=c++17", "-fsyntax-only", "-x", "c++", f"-I{HOST_CUDA}", f"-I{INCLUDE_DIR}",
                           "p.cu"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode != 0
    assert "SPEEDPATCH_ELEMENT must be float, __half or __nv_bfloat16" in done.stderr
