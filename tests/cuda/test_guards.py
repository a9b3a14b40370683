"""Static guards: each known cheat, written as a candidate solution, is found with its line; honest code
and mentions in comments are not."""

from __future__ import annotations

import pytest
from speedpatch.targets.cuda import guards
from speedpatch.targets.cuda.target import CudaTarget

from .conftest import EXAMPLES, MATMUL

HONEST = """
__global__ void k(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x] * 2.0f; }
void launch(const float* const* in, float* out) {
  k<<<1, 32>>>(in[0], out);          // cudaStreamCreate would be a cheat; a comment is not
  k<<<1, 32, 0, 0>>>(in[0], out);    /* std::thread in a comment */
  k<<<1, 32, 0, nullptr>>>(in[0], out);
}
"""

CHEATS = {
    "side-stream": [
        "void launch(const float* const* in, float* out) {\n  cudaStream_t s;\n  cudaStreamCreate(&s);\n}",
        "void launch(const float* const* in, float* out) {\n  k<<<1, 32, 0, side>>>(in[0], out);\n}",
        "void launch(const float* const* in, float* out) {\n  k<<<1, 32, 0, cudaStreamPerThread>>>(in[0], out);\n}",
    ],
    "host-thread": [
        "#include <thread>\nvoid launch(const float* const* in, float* out) {\n  std::thread t([]{});\n  t.join();\n}",
        "void launch(const float* const* in, float* out) {\n#pragma omp parallel for\n  for (int i = 0; i < 4; ++i) {}\n}",
        "void launch(const float* const* in, float* out) {\n  auto f = std::async(work);\n}",
        "void launch(const float* const* in, float* out) {\n  pthread_create(&t, 0, work, 0);\n}",
    ],
    "reference-library": [
        "#include <cublas_v2.h>\nvoid launch(const float* const* in, float* out) {\n  cublasSgemm(h, a, b);\n}",
        "void launch(const float* const* in, float* out) {\n  cudnnConvolutionForward(h);\n}",
    ],
    "precision": [
        "#include <cuda_fp16.h>\n__global__ void k(const float* x, __half* y) {}",
        "__global__ void k(const float* x, float* y) {\n  y[0] = __half2float(__float2half(x[0]));\n}",
        "__global__ void k(const float* x, float* y) {\n  __nv_bfloat16 b = __float2bfloat16(x[0]);\n}",
        "using namespace nvcuda;\nwmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;",
    ],
    "persisting-l2": [
        "void launch(const float* const* in, float* out) {\n  cudaStreamAttrValue attr;\n"
        "  attr.accessPolicyWindow.base_ptr = (void*)in[0];\n}",
        "void launch(const float* const* in, float* out) {\n  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1 << 20);\n}",
    ],
    "harness": [
        "void launch(const float* const* in, float* out) {\n  cudaEvent_t e;\n  cudaEventCreate(&e);\n}",
        "__global__ void k(float* y) {\n  long long t = clock64();\n}",
        "void launch(const float* const* in, float* out) {\n  reference(in, out);\n}",
        "void launch(const float* const* in, float* out) {\n  spd::Spec s = problem();\n}",
        "#undef SPEEDPATCH_SPLIT\nvoid launch(const float* const* in, float* out) {}",
        "int main(int argc, char** argv) { return 0; }",
        "void launch(const float* const* in, float* out) {\n  exit(0);\n}",
    ],
}


def test_honest_solution_has_no_findings() -> None:
    assert guards.check(HONEST) == []


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.cu")) + ["kernelbench_relu.py"])
def test_shipped_examples_pass_the_guards(name: str) -> None:
    text = (EXAMPLES / name).read_text()
    assert CudaTarget().diagnostics(text, name) == []


@pytest.mark.parametrize(("rule", "source"), [(rule, src) for rule, sources in CHEATS.items() for src in sources])
def test_each_cheat_is_found_by_its_rule(rule: str, source: str) -> None:
    findings = guards.check(source)
    assert rule in {f.rule for f in findings}, findings


def test_findings_carry_whole_file_lines_and_columns() -> None:
    solution = "void launch(const float* const* in, float* out) {\n  cudaStream_t s;\n  cudaStreamCreate(&s);\n}"
    (finding,) = guards.check(solution, line_offset=40)
    assert (finding.rule, finding.line, finding.column) == ("side-stream", 42, 2)
    assert finding.text().startswith("line 43: ")


def test_allow_directive_permits_a_named_library() -> None:
    cheat = CHEATS["reference-library"][0]
    assert guards.check(cheat, allow=("cublas",)) == []


def test_tf32_problem_allows_tf32_but_not_fp16() -> None:
    tf32 = CHEATS["precision"][3]
    assert guards.check(tf32, precision="tf32") == []
    assert {f.rule for f in guards.check(CHEATS["precision"][0], precision="tf32")} == {"precision"}


def test_fp16_problem_allows_half_types() -> None:
    assert guards.check(CHEATS["precision"][0], precision="fp16") == []


def test_harness_part_is_not_checked_only_the_solution(matmul_source: str) -> None:
    # The harness defines reference() and problem(), which the guards forbid in a solution: it is trusted.
    target = CudaTarget()
    assert target.diagnostics(matmul_source, str(MATMUL)) == []
    cheat = matmul_source.replace("matmul_kernel<<<grid, block>>>(inputs[0], inputs[1], output, N);",
                                  "matmul_kernel<<<grid, block, 0, cudaStreamPerThread>>>(inputs[0], inputs[1], output, N);")
    findings = target.diagnostics(cheat, str(MATMUL))
    line = cheat.splitlines().index(next(s for s in cheat.splitlines() if "cudaStreamPerThread" in s))
    assert findings and all(f.line == line for f in findings)


def test_static_check_rejects_a_cheating_candidate(matmul_source: str) -> None:
    target = CudaTarget()
    kernel = target.find_kernels(matmul_source)[0]
    cheat = matmul_source.replace("float acc = 0.0f;", "float acc = 0.0f; __half h = __float2half(acc);")
    reasons = target.static_check(cheat, kernel)
    assert reasons and "fp16" in reasons[0]
    assert target.static_check(matmul_source, kernel) == []


def test_kernelbench_candidate_calling_torch_ops_is_found() -> None:
    solution = "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
    findings = guards.check(solution, python=True)
    assert [f.rule for f in findings] == ["reference-library"]
    assert guards.check("y = torch.empty_like(x)\n", python=True) == []


def test_kernelbench_side_stream_is_found() -> None:
    findings = guards.check("s = torch.cuda.Stream()\nwith torch.cuda.stream(s):\n    pass\n", python=True)
    assert "side-stream" in {f.rule for f in findings}


def test_a_variable_named_half_is_not_a_precision_downgrade() -> None:
    code = "__global__ void k(float* x) {\n  int half = blockDim.x / 2;\n  if (threadIdx.x < half) x[0] += 1;\n}"
    assert guards.check(code) == []
    assert [f.rule for f in guards.check("__global__ void k(float* x) {\n  half h = x[0];\n}")] == ["precision"]


def test_forbid_directive_adds_libraries_to_the_default_list() -> None:
    text = "// speedpatch: forbid cutlass, thrust\n#include \"speedpatch_timing.cuh\"\n// speedpatch: solution\n" \
           "void launch(const float* const* in, float* out) {\n  thrust::reduce(a, b);\n}\n"
    (finding,) = CudaTarget().diagnostics(text, "p.cu")
    assert finding.rule == "reference-library" and "thrust" in finding.message and finding.line == 4
    assert guards.check("void f() { thrust::reduce(a, b); }") == []  # not forbidden by default


@pytest.mark.parametrize("io", ['FILE* f = fopen("speedpatch_result.json", "w");', 'printf("fast\\n");',
                                'std::ofstream out("r.json");', 'system("echo");', 'std::cout << 1;'])
def test_file_and_console_io_in_a_solution_is_found(io: str) -> None:
    findings = guards.check("void launch(const float* const* in, float* out) {\n  " + io + "\n}\n")
    assert "io" in {f.rule for f in findings}


def test_printing_a_forged_result_line_is_found_even_inside_a_string() -> None:
    findings = guards.check('static const char* s = "SPEEDPATCH_RESULT {\\"status\\":\\"ok\\"}";\n', line_offset=3)
    assert [(f.rule, f.line) for f in findings] == [("harness", 3)]


HALF_SOLUTION = """#include <cuda_fp16.h>
__global__ void k(const __half* x, __half* y) {
  float v = __half2float(x[threadIdx.x]);
  y[threadIdx.x] = __float2half(v * 2.0f);
}
"""
HALF_MATH = "__global__ void k(const __half* x, __half* y) {\n  y[0] = __hfma(x[0], x[1], x[2]);\n}\n"
HALF2_MATH = "__global__ void k(const __half2* x, __half2* y) {\n  y[0] = __hadd2(x[0], h2exp(x[1]));\n}\n"
BF16_SOLUTION = "__global__ void k(const __nv_bfloat16* x, __nv_bfloat16* y) {\n  y[0] = __hadd(x[0], x[1]);\n}\n"


def test_fp16_buffers_without_a_directive_allow_fp16_storage_and_arithmetic() -> None:
    for code in (HALF_SOLUTION, HALF_MATH, HALF2_MATH):
        assert guards.check(code, precision="fp16", element="fp16") == []


def test_fp16_buffers_with_precision_fp32_allow_storage_and_conversions_only() -> None:
    assert guards.check(HALF_SOLUTION, precision="fp32", element="fp16") == []
    for code, op in ((HALF_MATH, "__hfma("), (HALF2_MATH, "__hadd2(")):
        findings = guards.check(code, precision="fp32", element="fp16")
        assert findings and {f.rule for f in findings} == {"precision"}
        assert op in findings[0].message and "arithmetic" in findings[0].message
    assert len(guards.check(HALF2_MATH, precision="fp32", element="fp16")) == 2  # h2exp too


def test_fp16_buffers_do_not_permit_other_lower_precisions() -> None:
    bf16 = "__global__ void k(const __half* x, __half* y) {\n  __nv_bfloat16 b = __float2bfloat16(1.0f);\n}\n"
    assert {f.rule for f in guards.check(bf16, precision="fp16", element="fp16")} == {"precision"}
    assert {f.rule for f in guards.check(bf16, precision="fp32", element="fp16")} == {"precision"}


def test_bf16_buffers_allow_bf16_arithmetic_and_forbid_fp16() -> None:
    assert guards.check(BF16_SOLUTION, precision="bf16", element="bf16") == []
    assert [f.rule for f in guards.check(HALF_SOLUTION, precision="bf16", element="bf16")] != []
    findings = guards.check(BF16_SOLUTION, precision="fp32", element="bf16")
    assert [f.rule for f in findings] == ["precision"] and "__hadd(" in findings[0].message


def test_fp32_buffers_still_forbid_half_storage_and_arithmetic() -> None:
    assert {f.rule for f in guards.check(HALF_SOLUTION)} == {"precision"}
    assert {f.rule for f in guards.check(BF16_SOLUTION)} == {"precision"}


def test_fp16_example_follows_its_element_and_an_explicit_fp32_directive() -> None:
    source = (EXAMPLES / "matmul_fp16.cu").read_text()
    target = CudaTarget()
    assert target.diagnostics(source, "matmul_fp16.cu") == []
    fp32 = source.replace("#define SPEEDPATCH_ELEMENT __half", "// speedpatch: precision fp32\n#define SPEEDPATCH_ELEMENT __half")
    assert target.diagnostics(fp32, "matmul_fp16.cu") == []  # loads, stores and conversions of the buffers
    fused = fp32.replace("acc += __half2float(A[row * n + k]) * __half2float(B[k * n + col]);",
                         "acc = __half2float(__hfma(A[row * n + k], B[k * n + col], __float2half(acc)));")
    (finding,) = target.diagnostics(fused, "matmul_fp16.cu")
    assert finding.rule == "precision" and "fp32" in finding.message
    assert target.diagnostics(fused.replace("// speedpatch: precision fp32\n", ""), "matmul_fp16.cu") == []
