"""The CUDA target as the engine and editor see it: registry, kernels, splicing, moves, feedback, menu."""

from __future__ import annotations

import pytest
import tomllib
from speedpatch import targets
from speedpatch.model import NOT_MEASURED, OK, Evaluation
from speedpatch.targets.cuda.target import CudaTarget

from .conftest import CU_EXAMPLES, EXAMPLES, MATMUL, ROOT, no_gpu_here


def test_registry_finds_the_cuda_target_for_cu_files() -> None:
    target = targets.get_target("cuda")
    assert isinstance(target, CudaTarget)
    assert target.extensions == (".cu", ".cuh", ".py") and target.language_ids == ("cuda-cpp", "cuda", "python")
    assert target in targets.targets_for_path("kernel.cu")


def test_backends_are_local_ssh_and_compile_and_only_compile_cannot_time() -> None:
    backends = {b.name: b for b in CudaTarget().backends()}
    assert set(backends) == {"cuda-local", "cuda-ssh", "cuda-compile"}
    assert backends["cuda-local"].measures_speed and backends["cuda-ssh"].measures_speed
    assert not backends["cuda-compile"].measures_speed
    assert all(b.target == "cuda" for b in backends.values())


@pytest.mark.skipif(not no_gpu_here, reason="this machine has a GPU")
def test_default_backend_without_a_gpu_is_compile_only() -> None:
    assert CudaTarget().default_backend == "cuda-compile"


@pytest.mark.parametrize("name", CU_EXAMPLES)
def test_each_example_has_one_runnable_solution_region(name: str) -> None:
    text = (EXAMPLES / name).read_text()
    (kernel,) = CudaTarget().find_kernels(text, name)
    assert kernel.name == "launch" and kernel.runnable and kernel.target == "cuda"
    assert text[kernel.start : kernel.end] == kernel.text
    assert "__global__" in text.splitlines()[kernel.signature_line]
    assert kernel.end_line == len(text.splitlines())


def test_file_without_harness_lists_kernels_as_not_runnable_with_a_reason() -> None:
    text = "#include <cuda_runtime.h>\n\ntemplate <int B>\n__global__ void scale(float* x) { x[0] *= B; }\n\n" \
           "__global__ void add(float* x) { x[0] += 1; }\n"
    kernels = CudaTarget().find_kernels(text, "k.cu")
    assert [k.name for k in kernels] == ["scale", "add"]
    assert kernels[0].start_line == 2 and kernels[0].signature_line == 3  # template header included
    assert not any(k.runnable for k in kernels) and "speedpatch: solution" in kernels[0].reason


@pytest.mark.parametrize("junk", ["", "}}}{{{", "\x00\xff\ufffd", "__global__", "// speedpatch: solution\n(((",
                                  "__global__ void (", "#define X(\n" * 50])
def test_find_kernels_never_raises_on_junk(junk: str) -> None:
    assert isinstance(CudaTarget().find_kernels(junk, "junk.cu"), list)


def test_kernelbench_file_has_a_model_new_region() -> None:
    text = (EXAMPLES / "kernelbench_relu.py").read_text()
    (kernel,) = CudaTarget().find_kernels(text, "kernelbench_relu.py")
    assert kernel.name == "ModelNew" and "class ModelNew" in text.splitlines()[kernel.signature_line]
    assert "class Model(" not in kernel.text


def test_extract_takes_what_follows_the_marker_and_never_the_harness(matmul_source: str) -> None:
    target = CudaTarget()
    kernel = target.find_kernels(matmul_source)[0]
    reply = matmul_source.replace("s.rtol = 1e-4;", "s.rtol = 1.0;").replace("#define BLOCK 16", "#define BLOCK 32")
    code = target.extract_kernel(reply, kernel)
    assert code.startswith("#define BLOCK 32") and "rtol" not in code
    spliced = target.splice(matmul_source, kernel, code)
    assert "s.rtol = 1e-4;" in spliced and "#define BLOCK 32" in spliced


def test_extract_accepts_a_whole_solution_without_marker(matmul_source: str) -> None:
    target = CudaTarget()
    kernel = target.find_kernels(matmul_source)[0]
    reply = "#define T 8\n__global__ void tiled(const float* A, const float* B, float* C, int n) {}\n" \
            "void launch(const float* const* inputs, float* output) { tiled<<<1, 64>>>(inputs[0], inputs[1], output, N); }\n"
    assert target.extract_kernel(reply, kernel) == reply
    spliced = target.splice(matmul_source, kernel, reply)
    assert target.find_kernels(spliced)[0].name == "launch"  # still found after a rename


def test_a_lone_kernel_replaces_its_namesake_in_the_parent_and_keeps_the_rest(matmul_source: str) -> None:
    target = CudaTarget()
    original = target.find_kernels(matmul_source)[0]
    parent = matmul_source.replace("#define BLOCK 16", "#define BLOCK 32")  # an earlier iteration's change
    reply = "__global__ void matmul_kernel(const float* A, const float* B, float* C, int n) { /* new */ }\n"
    code = target.extract_kernel(reply, original)
    assert code.startswith("__global__ void matmul_kernel") and "void launch" not in code
    child = target.splice(parent, target.find_kernels(parent)[0], code)
    assert "/* new */" in child and "#define BLOCK 32" in child and "void launch(" in child
    assert "acc += A" not in child and child.startswith(matmul_source[: original.start])


def test_a_new_helper_kernel_goes_before_launch(matmul_source: str) -> None:
    target = CudaTarget()
    kernel = target.find_kernels(matmul_source)[0]
    child = target.splice(matmul_source, kernel, "__global__ void helper(float* x) { x[0] = 0; }\n")
    assert child.index("void helper") < child.index("void launch(") and "matmul_kernel(const float* A" in child


def test_kernelbench_reply_with_the_reference_keeps_only_the_solution() -> None:
    target = CudaTarget()
    text = (EXAMPLES / "kernelbench_relu.py").read_text()
    kernel = target.find_kernels(text, "kernelbench_relu.py")[0]
    reply = text.replace("# speedpatch: solution\n", "")
    code = target.extract_kernel(reply, kernel)
    assert "class ModelNew" in code and "class Model(" not in code and "def get_inputs" not in code


def test_offline_moves_rewrite_only_the_solution_and_stay_launchable(matmul_source: str) -> None:
    target = CudaTarget()
    kernel = target.find_kernels(matmul_source)[0]
    moves = target.offline_moves(matmul_source, kernel)
    plans = [m.plan for m in moves]
    assert any("BLOCK from 16 to 8" in p for p in plans)
    assert any("BLOCK from 16 to 32" in p for p in plans)  # 32 x 32 = 1024 threads is still launchable
    harness = matmul_source[: kernel.start]
    for move in moves:
        assert move.source.startswith(harness) and move.source != matmul_source
    assert any("#pragma unroll 4" in m.source for m in moves)
    assert any("__restrict__" in m.source for m in moves)


def test_offline_moves_apply_to_the_fp16_example() -> None:
    text = (EXAMPLES / "matmul_fp16.cu").read_text()
    kernel = CudaTarget().find_kernels(text, "matmul_fp16.cu")[0]
    moves = CudaTarget().offline_moves(text, kernel)
    plans = [m.plan for m in moves]
    assert any("BLOCK from 16 to 8" in p for p in plans) and any("#pragma unroll 4" in m.source for m in moves)
    restricted = next(m.source for m in moves if "__restrict__" in m.source)
    assert "const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C" in restricted


def test_restrict_move_keeps_a_space_between_the_qualifier_and_the_name() -> None:
    text = MATMUL.read_text().replace("const float* A, const float* B, float* C", "const float *A, const float *B, float *C")
    kernel = CudaTarget().find_kernels(text)[0]
    restricted = next(m.source for m in CudaTarget().offline_moves(text, kernel) if "__restrict__" in m.source)
    assert "const float * __restrict__ A, const float * __restrict__ B, float * __restrict__ C" in restricted


def test_block_size_moves_never_exceed_1024_threads() -> None:
    text = MATMUL.read_text().replace("#define BLOCK 16", "#define BLOCK 32")
    kernel = CudaTarget().find_kernels(text)[0]
    plans = [m.plan for m in CudaTarget().offline_moves(text, kernel)]
    assert any("from 32 to 16" in p for p in plans) and not any("from 32 to 64" in p for p in plans)


def test_feedback_text_of_a_timed_evaluation_shows_rates_against_peak() -> None:
    ev = Evaluation(status=OK, value=1.0, unit="ms", feedback={
        "median_ms": 1.0, "baseline_median_ms": 2.0, "speedup_vs_baseline": 2.0, "speedup_ci": [1.9, 2.1],
        "verdict": "faster", "achieved_gflops": 2147.0, "peak_gflops_fp32": 66900.0, "achieved_gbps": 12.6,
        "peak_gbps": 4800.0}, receipt={"device": {"name": "NVIDIA H200"}, "ci": {"low_ms": 0.99, "high_ms": 1.01}})
    text = CudaTarget().feedback_text(ev)
    assert "NVIDIA H200" in text and "2x" in text and "3.2% of the 66900 fp32 FMA peak" in text and "GB/s" in text


def test_feedback_text_names_16_bit_buffers_next_to_the_fp32_peak() -> None:
    ev = Evaluation(status=OK, value=1.0, unit="ms", feedback={
        "median_ms": 1.0, "achieved_gflops": 2147.0, "peak_gflops_fp32": 66900.0, "element": "fp16"},
        receipt={"device": {"name": "NVIDIA H200"}, "ci": {}})
    assert "GFLOP/s on fp16 buffers (3.2% of the 66900 fp32 FMA peak)" in CudaTarget().feedback_text(ev)


def test_feedback_text_of_a_compile_only_evaluation_shows_resources() -> None:
    ev = Evaluation(status=NOT_MEASURED, feedback={"timed": False, "kernels": {"k": {
        "registers": 40, "shared_bytes_static": 8192, "spill_stores_bytes": 0, "spill_loads_bytes": 0,
        "occupancy": {"arch": "sm_90", "occupancy": 0.75, "warps_per_sm": 48, "max_warps_per_sm": 64,
                      "blocks_per_sm": 6, "threads_per_block": 256, "limited_by": "registers"},
        "sass": {"instructions": 120, "by_category": {"fp32": 64, "global_memory": 8}}}}})
    text = CudaTarget().feedback_text(ev)
    assert "40 registers" in text and "75%" in text and "limited by registers" in text and "fp32 64" in text
    assert "not timed" in text


def test_menu_has_the_four_keys_and_a_gpu_menu() -> None:
    menu = tomllib.loads((ROOT / "menus" / "cuda.toml").read_text())
    assert set(menu) == {"knowledge", "optimizations", "plan_rules", "code_rules"}
    joined = " ".join(menu["optimizations"]).lower()
    for item in ("shared memory", "register tiling", "vectorized", "coalesce", "unroll", "warp", "tensor cores",
                 "occupancy"):
        assert item in joined, item
    assert "launch" in " ".join(menu["code_rules"])


def test_kernelbench_python_problems_reach_the_cuda_target_and_nki_files_do_not():
    from speedpatch import api

    relu = EXAMPLES / "kernelbench_relu.py"
    assert {k.target for k in api.find_kernels(str(relu), relu.read_text())} == {"cuda"}
    softmax = ROOT / "examples" / "nki" / "softmax.py"
    assert {k.target for k in api.find_kernels(str(softmax), softmax.read_text())} == {"nki"}
