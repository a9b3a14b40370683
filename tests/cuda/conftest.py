"""Shared fixtures for the CUDA target tests. nvcc is slow (seconds per file): everything compiled is
compiled once per session and shared."""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from speedpatch.model import Kernel
from speedpatch.targets.base import EvalContext
from speedpatch.targets.cuda import localbuild
from speedpatch.targets.cuda.backends.compile import CudaCompileBackend
from speedpatch.targets.cuda.backends.local import local_gpu
from speedpatch.targets.cuda.build import INCLUDE_DIR, find_nvcc
from speedpatch.targets.cuda.problem import ELEMENT, split_problem
from speedpatch.targets.cuda.target import CudaTarget

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "cuda"
CU_EXAMPLES = sorted(p.name for p in EXAMPLES.glob("*.cu"))
MATMUL = EXAMPLES / "matmul.cu"
MATMUL_FP16 = EXAMPLES / "matmul_fp16.cu"

needs_nvcc = pytest.mark.skipif(find_nvcc() is None, reason="nvcc not installed (scripts/setup/cuda.sh)")
needs_gpu = pytest.mark.skipif(local_gpu() is None or find_nvcc() is None, reason="no CUDA device on this machine")
no_gpu_here = local_gpu() is None


@pytest.fixture(scope="session")
def target() -> CudaTarget:
    return CudaTarget()


@pytest.fixture(scope="session")
def matmul_source() -> str:
    return MATMUL.read_text()


def context(tmp: Path, source_path: Path = MATMUL, settings: dict | None = None, baseline: str | None = None,
            timeout: float = 240.0) -> EvalContext:
    kernel = Kernel("launch", "cuda", 0, 0, 0, 0, 0, "")
    work = tmp / "work"
    work.mkdir(parents=True, exist_ok=True)
    return EvalContext(kernel=kernel, path=str(source_path), workdir=work, timeout=timeout,
                       settings=settings or {}, baseline_source=baseline)


@pytest.fixture(scope="session")
def compile_cache() -> Path:
    """The user's object cache, as the product uses it: objects are keyed by content (units, flags, nvcc and
    kit versions, every header read), so a warm CI run recompiles only what changed, and the objects are
    still checked every time. Tests of the cache's own behaviour use folders of their own."""
    return localbuild.default_cache_dir({})


@pytest.fixture(scope="session")
def matmul_compiled(tmp_path_factory: pytest.TempPathFactory, compile_cache: Path, matmul_source: str):
    """One cuda-compile evaluation of the matmul example, shared by the tests that read its report."""
    if find_nvcc() is None:
        pytest.skip("nvcc not installed (scripts/setup/cuda.sh)")
    tmp = tmp_path_factory.mktemp("matmul-compile")
    return CudaCompileBackend().evaluate(matmul_source, context(tmp, settings={"cache_dir": str(compile_cache)}))


def example_element(name: str) -> str:
    layout = split_problem((EXAMPLES / name).read_text(), name)
    return layout.element if layout is not None else "fp32"


@pytest.fixture(scope="session")
def matmul_fp16_compiled(tmp_path_factory: pytest.TempPathFactory, compile_cache: Path):
    """One cuda-compile evaluation of the fp16 matmul example (its own harness, __half buffers)."""
    if find_nvcc() is None:
        pytest.skip("nvcc not installed (scripts/setup/cuda.sh)")
    tmp = tmp_path_factory.mktemp("matmul-fp16-compile")
    return CudaCompileBackend().evaluate(MATMUL_FP16.read_text(), context(
        tmp, source_path=MATMUL_FP16, settings={"cache_dir": str(compile_cache)}))


@pytest.fixture(scope="session")
def compiled_examples(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess:
    """Every .cu example, harness and solution, compiled with few nvcc runs: the examples of one element type
    share ONE translation unit (each in its own namespace, the kit headers parsed once), which is the same
    code as a standalone build of each file at a fraction of the cost. The element type is chosen before the
    kit header is included, so each type needs its own unit; the outputs are merged into one result."""
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not installed (scripts/setup/cuda.sh)")
    out = tmp_path_factory.mktemp("examples")
    groups: dict[str, list[str]] = {}
    for name in CU_EXAMPLES:
        groups.setdefault(example_element(name), []).append(name)
    for element, names in groups.items():
        parts = ["#define SPEEDPATCH_SPLIT 1"]
        for name in names:
            text = (EXAMPLES / name).read_text()
            # The #define must come before the header: hoist it out of the example's namespace.
            parts += [line for line in text.splitlines() if ELEMENT.match(line)][:1]
        parts += ['#include "speedpatch_timing.cuh"', "#include <cmath>"]
        for name in names:
            parts += [f"namespace example_{Path(name).stem} {{", f'#include "{EXAMPLES / name}"', "}"]
        (out / f"examples_{element}.cu").write_text("\n".join(parts) + "\n")

    def compile_group(element: str) -> subprocess.CompletedProcess:
        return subprocess.run([nvcc, "-O1", "-std=c++17", "-arch=sm_90", f"-I{INCLUDE_DIR}", "-c",
                               f"examples_{element}.cu", "-o", f"examples_{element}.o"], cwd=out,
                              capture_output=True, text=True, timeout=600)

    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(compile_group, groups))
    return subprocess.CompletedProcess([nvcc], max(r.returncode for r in runs), "".join(r.stdout for r in runs),
                                       "".join(r.stderr for r in runs))


@pytest.fixture(scope="session")
def gxx() -> str:
    found = shutil.which("g++")
    if found is None:
        pytest.skip("g++ not installed")
    return found
