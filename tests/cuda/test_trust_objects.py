"""The object check on real nvcc builds (cuda-compile): honest solutions pass it, and what a solution
computes in is read from its SASS, whatever the source calls it. The hostile corpus is
tests/security/test_cuda_attacks.py."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from speedpatch.model import NOT_MEASURED, REJECTED
from speedpatch.targets.cuda.backends.compile import CudaCompileBackend

from .conftest import CU_EXAMPLES, EXAMPLES, MATMUL, MATMUL_FP16, context, needs_nvcc

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


LIBRARY_USE = """#include <algorithm>
#include <vector>
template <int T> __global__ void mm(const float* A, const float* B, float* C, int n) {
  int r = blockIdx.y * T + threadIdx.y, c = blockIdx.x * T + threadIdx.x;
  if (r < n && c < n) { float acc = 0.0f; for (int k = 0; k < n; ++k) acc += A[r * n + k] * B[k * n + c]; C[r * n + c] = acc; }
}
template <int T> static void go(const float* const* in, float* out) { mm<T><<<dim3(N / T, N / T), dim3(T, T)>>>(in[0], in[1], out, N); }
static std::vector<int> tiles() { std::vector<int> v = {8, 32, 16}; std::sort(v.begin(), v.end(), [](int a, int b) { return a > b; }); return v; }
void launch(const float* const* in, float* out) { if (tiles()[1] == 16) go<16>(in, out); else go<8>(in, out); }
"""


def test_standard_library_templates_and_solution_templates_pass_and_link(tmp_path: Path, compile_cache: Path) -> None:
    path = EXAMPLES / "matmul.cu"
    ev = evaluate(tmp_path, with_solution(path, LIBRARY_USE), path, compile_cache)
    assert ev.status == NOT_MEASURED, ev.message + ev.log[-2000:]
    assert (tmp_path / "work" / "build" / "bench").is_file()  # linked, with the candidate's symbols localized


OUTSIDE_LAUNCH_KERNEL = """__global__ void mm(const float* A, const float* B, float* C, int n) {
  int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
  if (r < n && c < n) { float acc = 0.0f; for (int k = 0; k < n; ++k) acc += A[r * n + k] * B[k * n + c]; C[r * n + c] = acc; }
}
void launch(const float* const* in, float* out) { mm<<<dim3(N / 16, N / 16), dim3(16, 16)>>>(in[0], in[1], out, N); }
"""
# Code that runs outside launch without a constructor table: a function placed in the program's .init
# (spliced into _init, run before main) or a destructor (.fini_array, run after main). Before the check on
# executable sections and destructor tables, both compiled and linked as an honest solution.
OUTSIDE_LAUNCH = {
    "code in the .init section": ('__attribute__((section(".init"), used)) static void early() { volatile int x = 1; x += 1; }\n',
                                  "section .init"),
    "a destructor attribute": ("__attribute__((destructor)) static void late() { volatile int y = 1; y += 1; }\n",
                               "static destructor"),
}


@pytest.mark.parametrize("name", list(OUTSIDE_LAUNCH))
def test_code_that_runs_before_or_after_main_without_a_constructor_table_is_rejected(tmp_path: Path, compile_cache: Path,
                                                                                     name: str) -> None:
    before, named = OUTSIDE_LAUNCH[name]
    ev = evaluate(tmp_path, with_solution(MATMUL, before + OUTSIDE_LAUNCH_KERNEL), MATMUL, compile_cache)
    assert ev.status == REJECTED, f"{name}: {ev.status} {ev.message}"
    assert named in ev.message, ev.message


def test_an_executable_stack_is_rejected(tmp_path: Path, compile_cache: Path) -> None:
    # Host code may call through function pointers, so with an executable stack, bytes in a local array (a
    # system call, a clock read) run without any instruction of the object showing them.
    jit = ("void launch(const float* const* in, float* out) {\n"
           "  unsigned char code[] = {0xb8, 0x2a, 0x00, 0x00, 0x00, 0xc3};  // mov eax, 42; ret\n"
           "  volatile int v = ((int (*)())(void*)code)(); (void)v;\n"
           "  mm<<<dim3(N / 16, N / 16), dim3(16, 16)>>>(in[0], in[1], out, N);\n}\n")
    kernel = OUTSIDE_LAUNCH_KERNEL[:OUTSIDE_LAUNCH_KERNEL.index("void launch")]
    source = with_solution(MATMUL, 'asm(".section .note.GNU-stack,\\"x\\",@progbits\\n.previous");\n' + kernel + jit)
    ev = evaluate(tmp_path, source, MATMUL, compile_cache)
    assert ev.status == REJECTED, f"{ev.status} {ev.message}"
    assert "executable stack" in ev.message, ev.message


# Bytes that run without objdump reading them as the solution's instructions. The const array decodes as
# `mov $0xc3050f, %eax` (b8 0f 05 c3 00) but, called one byte in, is `syscall; ret`; a writable `.text.*`
# array is not disassembled at all, yet the linker puts it in the program's code. Both linked before.
DATA_AS_CODE = {
    "a const array in a code section, called at an offset": (
        '__attribute__((section(".text.hidden"))) const unsigned char code[] = {0xb8, 0x0f, 0x05, 0xc3, 0x00};\n',
        "((long (*)())(void*)(code + 1))", "data object"),
    "a writable array in a .text section": (
        '__attribute__((section(".text.plain"))) unsigned char code[] = {0x0f, 0x05, 0xc3};\n',
        "((long (*)())(void*)code)", "section .text.plain (writable)"),
}


@pytest.mark.parametrize("name", list(DATA_AS_CODE))
def test_bytes_placed_in_code_sections_are_rejected(tmp_path: Path, compile_cache: Path, name: str) -> None:
    array, call, named = DATA_AS_CODE[name]
    kernel = OUTSIDE_LAUNCH_KERNEL[:OUTSIDE_LAUNCH_KERNEL.index("void launch")]
    launch = ("void launch(const float* const* in, float* out) {\n"
              f"  volatile long v = {call}(); (void)v;\n"
              "  mm<<<dim3(N / 16, N / 16), dim3(16, 16)>>>(in[0], in[1], out, N);\n}\n")
    ev = evaluate(tmp_path, with_solution(MATMUL, array + kernel + launch), MATMUL, compile_cache)
    assert ev.status == REJECTED, f"{name}: {ev.status} {ev.message}"
    assert named in ev.message, ev.message


def test_the_harness_objects_device_code_is_read_once_and_then_kept_by_content(tmp_path: Path, monkeypatch) -> None:
    # Every candidate of a problem shares the harness-only object: cuobjdump reads it once, the cache keeps it.
    from speedpatch.targets.cuda import objcheck
    from speedpatch.targets.cuda.build import find_nvcc

    (tmp_path / "k.cu").write_text("__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n")
    subprocess.run([find_nvcc(), "-arch=sm_90", "-c", "k.cu", "-o", "k.o"], cwd=tmp_path, check=True, timeout=300)
    obj, cache = tmp_path / "k.o", tmp_path / "cache"
    fresh = objcheck.device_code(obj, 60)
    assert fresh[0] and "twice" in fresh[0]
    assert objcheck.device_code(obj, 60, cache) == fresh
    monkeypatch.setattr(objcheck, "_read_device_code", lambda *a: pytest.fail("cuobjdump ran again"))
    assert objcheck.device_code(obj, 60, cache) == fresh
    obj.write_bytes(obj.read_bytes() + b"\0")  # another object: not the kept reading
    with pytest.raises(pytest.fail.Exception):
        objcheck.device_code(obj, 60, cache)
