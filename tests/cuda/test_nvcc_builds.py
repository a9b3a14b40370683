"""Real nvcc builds (compile-only here: this machine kind has no GPU). Slow: artefacts are shared per
session (see conftest)."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.model import COMPILE_ERROR, INFRA_ERROR, NOT_MEASURED, OK, REJECTED
from speedpatch.targets.cuda.backends.compile import CudaCompileBackend
from speedpatch.targets.cuda.backends.local import CudaLocalBackend

from .conftest import CU_EXAMPLES, MATMUL, MATMUL_FP16, context, needs_nvcc, no_gpu_here

pytestmark = [pytest.mark.slow, needs_nvcc]


def test_all_examples_compile_with_their_harness(compiled_examples) -> None:
    assert compiled_examples.returncode == 0, compiled_examples.stderr + compiled_examples.stdout


@pytest.mark.parametrize("name", CU_EXAMPLES)
def test_example_has_no_compiler_errors(name: str, compiled_examples) -> None:
    errors = [line for line in (compiled_examples.stderr + compiled_examples.stdout).splitlines()
              if name in line and "error" in line]
    assert errors == []


def test_compile_backend_cannot_time_and_names_the_backends_that_can(matmul_compiled) -> None:
    ev = matmul_compiled
    assert ev.status == NOT_MEASURED and ev.correct and ev.score == float("inf")
    assert "cannot time" in ev.message and "cuda-local" in ev.message and "cuda-ssh" in ev.message
    assert "none: compile-only" in ev.receipt["timing"]


def test_compile_backend_reports_registers_spills_and_occupancy(matmul_compiled) -> None:
    info = matmul_compiled.feedback["kernels"]["matmul_kernel"]
    assert 8 <= info["registers"] <= 255 and info["spill_stores_bytes"] == 0
    assert info["occupancy"]["threads_per_block"] == 256 and 0 < info["occupancy"]["occupancy"] <= 1


def test_compile_backend_reports_the_sass_mix_when_cuobjdump_is_installed(matmul_compiled) -> None:
    info = matmul_compiled.feedback["kernels"]["matmul_kernel"]
    if "sass" not in info:
        pytest.skip(matmul_compiled.feedback.get("sass", "cuobjdump not installed (scripts/setup/cuda.sh)"))
    assert info["sass"]["by_category"].get("fp32", 0) > 0 and info["sass"]["by_category"].get("global_memory", 0) > 0


def test_compile_backend_receipt_names_compiler_flags_and_arch(matmul_compiled) -> None:
    r = matmul_compiled.receipt
    assert r["backend"] == "cuda-compile" and r["arch"] == "sm_90" and "-arch=sm_90" in r["flags"]
    assert r["compiler_version"].startswith("nvcc") and r["date"]


def test_fp16_example_builds_through_the_compile_backend_with_its_ptxas_report(matmul_fp16_compiled) -> None:
    ev = matmul_fp16_compiled
    assert ev.status == NOT_MEASURED, ev.log
    info = ev.feedback["kernels"]["matmul_kernel"]
    assert 8 <= info["registers"] <= 255 and info["spill_stores_bytes"] == 0
    assert info["occupancy"]["threads_per_block"] == 256
    if "sass" in info:  # cuobjdump installed: the fp16 loads are widened, the products summed in fp32
        assert info["sass"]["by_category"].get("fp32", 0) > 0


def test_fp16_solution_with_the_fp32_launch_signature_fails_to_link(tmp_path: Path, compile_cache: Path) -> None:
    source = MATMUL_FP16.read_text()
    fp32 = source.replace("void launch(const __half* const* inputs, __half* output)",
                          "void launch(const float* const* inputs, float* output)")
    fp32 = fp32.replace("matmul_kernel<<<grid, block>>>(inputs[0], inputs[1], output, N);",
                        "(void)inputs; (void)output;")
    ev = CudaLocalBackend().evaluate(fp32, context(tmp_path, source_path=MATMUL_FP16, baseline=source,
                                                   settings={"arch": "sm_90", "cache_dir": str(compile_cache)}))
    assert ev.status == COMPILE_ERROR and "element type" in ev.message, ev.message


def test_compile_error_is_reported_with_the_original_line(tmp_path: Path, matmul_source: str, compile_cache: Path) -> None:
    broken = matmul_source.replace("float acc = 0.0f;", "float acc = 0.0f")
    ev = CudaCompileBackend().evaluate(broken, context(tmp_path, settings={"cache_dir": str(compile_cache)},
                                                       baseline=matmul_source))
    lines = matmul_source.splitlines()
    line = lines.index(next(s for s in lines if "float acc" in s)) + 1  # 1-based, as compilers count
    assert ev.status == COMPILE_ERROR
    # The missing `;` is noticed on the line of the error or the next one: both are original-file lines.
    assert f"matmul.cu({line})" in ev.log or f"matmul.cu({line + 1})" in ev.log, ev.log


def _with_local_header(source: str, folder: Path, tile: int) -> Path:
    """The matmul problem in `folder`, its harness including a header of that folder, its solution asserting the
    header's value is 16."""
    (folder / "tile.cuh").write_text(f"#define SP_TILE {tile}\n")
    marker = "// speedpatch: solution"
    problem = folder / "matmul.cu"
    problem.write_text(source.replace(marker, '#include "tile.cuh"\n' + marker + '\nstatic_assert(SP_TILE == 16, "tile");'))
    return problem


def test_an_edited_header_of_the_problem_s_folder_is_compiled_again(tmp_path: Path, matmul_source: str,
                                                                     compile_cache: Path) -> None:
    folder = tmp_path / "problem"
    folder.mkdir()
    problem = _with_local_header(matmul_source, folder, 16)
    settings = {"cache_dir": str(compile_cache)}
    first = CudaCompileBackend().evaluate(problem.read_text(), context(tmp_path / "a", problem, settings))
    assert first.status == NOT_MEASURED, first.message + first.log
    _with_local_header(matmul_source, folder, 32)  # same sources, another header
    again = CudaCompileBackend().evaluate(problem.read_text(), context(tmp_path / "b", problem, settings))
    assert again.status == COMPILE_ERROR and "static assertion failed" in again.log, again.message


def test_the_same_problem_in_another_folder_is_served_from_the_compile_cache(tmp_path: Path, matmul_source: str) -> None:
    cache = tmp_path / "cache"  # its own: other tests store objects in the shared one meanwhile
    first = CudaCompileBackend().evaluate(matmul_source, context(tmp_path / "a", MATMUL, {"cache_dir": str(cache)}))
    before = sorted(cache.glob("*.o"))
    copy = tmp_path / "elsewhere" / "matmul.cu"
    copy.parent.mkdir()
    copy.write_text(matmul_source)
    ev = CudaCompileBackend().evaluate(matmul_source, context(tmp_path / "b", copy, {"cache_dir": str(cache)}))
    assert ev.status == first.status == NOT_MEASURED
    assert before and sorted(cache.glob("*.o")) == before  # nothing compiled: the folder's path is not in the key


def test_cheating_candidate_is_rejected_without_compiling(tmp_path: Path, matmul_source: str) -> None:
    cheat = matmul_source.replace("float acc = 0.0f;", "float acc = 0.0f; long long t0 = clock64();")
    ev = CudaCompileBackend().evaluate(cheat, context(tmp_path, baseline=matmul_source))
    assert ev.status == REJECTED and "clock64" in ev.message
    assert ev.feedback["guard_findings"][0]["rule"] == "harness"


@pytest.mark.skipif(not no_gpu_here, reason="this machine has a GPU: the no-device path does not apply")
def test_local_backend_without_a_gpu_builds_then_refuses_to_time(tmp_path: Path, matmul_source: str,
                                                                 compile_cache: Path, matmul_compiled) -> None:
    local = CudaLocalBackend()
    assert not local.availability().usable and "cuda-ssh" in local.availability().reason
    # Built for sm_90 since this machine has no GPU for -arch=native to detect.
    ev = local.evaluate(matmul_source, context(tmp_path, settings={"arch": "sm_90", "cache_dir": str(compile_cache)}))
    assert ev.status == INFRA_ERROR and "no CUDA device" in ev.message and "cuda-compile" in ev.message
    assert ev.status != OK and ev.value is None
