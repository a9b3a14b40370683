"""The object check on real nvcc builds (cuda-compile): honest solutions pass it, and what a solution
computes in is read from its SASS, whatever the source calls it. The hostile corpus is
tests/security/test_cuda_attacks.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from speedpatch.model import NOT_MEASURED, REJECTED
from speedpatch.targets.cuda.backends.compile import CudaCompileBackend

from .conftest import CU_EXAMPLES, EXAMPLES, MATMUL_FP16, context, needs_nvcc

pytestmark = [pytest.mark.slow, needs_nvcc]

HALF_ACCUMULATION = """#define BLOCK 16
__global__ void matmul_kernel(const __half* A, const __half* B, __half* C, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < n && col < n) {
    __half acc = A[0] - A[0];
    for (int k = 0; k < n; ++k) acc = acc + A[row * n + k] * B[k * n + col];  // __half operators: fp16 math
    C[row * n + col] = acc;
  }
}
void launch(const __half* const* inputs, __half* output) {
  matmul_kernel<<<dim3(N / BLOCK, N / BLOCK), dim3(BLOCK, BLOCK)>>>(inputs[0], inputs[1], output, N);
}
"""


def evaluate(tmp_path: Path, source: str, path: Path, cache: Path):
    return CudaCompileBackend().evaluate(source, context(tmp_path, source_path=path, settings={"cache_dir": str(cache)},
                                                         baseline=path.read_text()))


def with_solution(path: Path, solution: str, directive: str = "") -> str:
    text = path.read_text()
    head = text[: text.index("// speedpatch: solution")]
    return directive + head + "// speedpatch: solution\n" + solution


@pytest.mark.parametrize("name", CU_EXAMPLES)
def test_every_example_passes_the_object_check(tmp_path: Path, compile_cache: Path, name: str) -> None:
    path = EXAMPLES / name
    ev = evaluate(tmp_path, path.read_text(), path, compile_cache)
    assert ev.status == NOT_MEASURED, ev.message + ev.log[-2000:]


def test_half_operators_are_fp16_math_that_an_fp16_problem_allows(tmp_path: Path, compile_cache: Path) -> None:
    ev = evaluate(tmp_path, with_solution(MATMUL_FP16, HALF_ACCUMULATION), MATMUL_FP16, compile_cache)
    assert ev.status == NOT_MEASURED, ev.message + ev.log[-2000:]


def test_half_operators_are_rejected_from_their_sass_when_the_problem_says_fp32(tmp_path: Path,
                                                                               compile_cache: Path) -> None:
    # The same source under `precision fp32`: no intrinsic is named, the __half operators compile to HFMA2.
    source = with_solution(MATMUL_FP16, HALF_ACCUMULATION, "// speedpatch: precision fp32\n")
    ev = CudaCompileBackend().evaluate(source, context(tmp_path, source_path=MATMUL_FP16, baseline=source,
                                                       settings={"cache_dir": str(compile_cache)}))
    assert ev.status == REJECTED
    assert "sp_candidate::matmul_kernel" in ev.message and "fp16 arithmetic" in ev.message
    assert re.search(r"`H(?:ADD|FMA|MUL)2 ", ev.message)  # the SASS instruction that does it
    assert ev.feedback["checked"] == "compiled object"
