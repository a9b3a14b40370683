"""The trust boundary on CUDA: a reply contributes the solution (kernels + launch, or ModelNew) only; the
harness above `speedpatch: solution`, its constants and the timing kit always come from the original."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.engine import boundary
from speedpatch.targets import get_target
from support.replies import problem_of, propose

from .conftest import EXAMPLES, MATMUL

SOURCE = MATMUL.read_text()
MARKER = "// speedpatch: solution\n"
HARNESS, SOLUTION = SOURCE.split(MARKER)
BIGGER = SOLUTION.replace("#define BLOCK 16", "#define BLOCK 32")
KB_PATH = EXAMPLES / "kernelbench_relu.py"
KB = KB_PATH.read_text()


@pytest.fixture(scope="module")
def target():
    return get_target("cuda")


@pytest.fixture
def problem():
    return problem_of(MATMUL, "launch")


def fenced(code: str, language: str = "cuda") -> str:
    return f"```{language}\n{code}\n```\n"


def test_problem_names_are_the_harness_and_the_timing_kit(target, problem) -> None:
    names = target.problem_names(problem.source, problem.kernel)
    assert {"N", "reference", "problem", "main", "spd"} <= names
    assert not {"launch", "matmul_kernel", "BLOCK"} & names


def test_a_whole_file_reply_with_a_smaller_n_keeps_the_harness_n(tmp_path, problem) -> None:
    reply = HARNESS.replace("constexpr int N = 1024;", "constexpr int N = 64;") + MARKER + BIGGER
    code, _ = propose(tmp_path, problem, fenced(reply))
    assert code.source == HARNESS + MARKER + BIGGER


def test_a_solution_reply_that_restates_n_drops_it(tmp_path, problem) -> None:
    code, _ = propose(tmp_path, problem, fenced("constexpr int N = 64;\n" + BIGGER))
    assert code.source == HARNESS + MARKER + BIGGER


def test_a_kernel_sent_alone_brings_its_device_helper_and_constant(tmp_path, problem) -> None:
    kernel = SOLUTION[SOLUTION.index("__global__"): SOLUTION.index("void launch")].rstrip()
    helper = "__device__ float madd(float a, float b, float c) { return a * b + c; }"
    reply = f"#define BLOCK 32\n\n{helper}\n\n" + kernel.replace("acc += A[row * n + k] * B[k * n + col];",
                                                                "acc = madd(A[row * n + k], B[k * n + col], acc);")
    code, _ = propose(tmp_path, problem, fenced(reply))
    solution = code.source.split(MARKER)[1]
    assert solution.startswith("#define BLOCK 32\n\n" + helper + "\n\n__global__ void matmul_kernel(")
    assert "acc = madd(" in solution and solution.count("void launch(") == 1
    assert boundary.check(get_target("cuda"), problem, code.source) == []


def test_a_solution_that_redefines_n_as_a_macro_is_rejected_naming_it(target, problem) -> None:
    (reason,) = boundary.check(target, problem, HARNESS + MARKER + "#undef N\n#define N 64\n" + BIGGER)
    assert "redefines N" in reason


def test_a_solution_that_reopens_the_kit_namespace_is_rejected_naming_it(target, problem) -> None:
    sneaky = "namespace spd { inline double now_ms() { return 0; } }\n" + BIGGER
    (reason,) = boundary.check(target, problem, HARNESS + MARKER + sneaky)
    assert "redefines spd" in reason


def test_a_change_above_the_marker_is_rejected_with_the_line(target, problem) -> None:
    candidate = SOURCE.replace("s.atol = ", "s.atol = 1e9 + ")
    (reason,) = boundary.check(target, problem, candidate)
    assert "before the kernel region" in reason and "1e9" in reason


def test_kernelbench_solution_redefining_the_inputs_is_rejected_naming_them(target) -> None:
    problem = problem_of(KB_PATH, "ModelNew")
    region = problem.kernel.text + "\n\ndef get_inputs():\n    return []\n"
    (reason,) = boundary.check(target, problem, boundary.compose(problem, region))
    assert "redefines get_inputs" in reason


def test_kernelbench_solution_patching_torch_is_rejected_naming_it(target) -> None:
    # the reference Model calls torch.relu: patching it would make the reference agree with anything
    problem = problem_of(KB_PATH, "ModelNew")
    region = "torch.relu = lambda x: x\n\n" + problem.kernel.text
    (reason,) = boundary.check(target, problem, boundary.compose(problem, region))
    assert "redefines torch" in reason


def test_kernelbench_whole_file_reply_keeps_the_reference_model(tmp_path, target) -> None:
    problem = problem_of(KB_PATH, "ModelNew")
    reply = KB.replace("torch.randn(4096, 4096)", "torch.randn(4, 4)").replace("256>>>", "512>>>")
    code, _ = propose(tmp_path, problem, fenced(reply, "python"))
    assert "torch.randn(4096, 4096)" in code.source and "torch.randn(4, 4)" not in code.source
    assert "512>>>" in code.source
    assert boundary.check(target, problem, code.source) == []


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.cu")), ids=lambda p: p.name)
def test_offline_moves_of_every_example_stay_inside_the_kernel_region(target, path: Path) -> None:
    problem = problem_of(path, "launch")
    for move in target.offline_moves(problem.source, problem.kernel):
        assert boundary.check(target, problem, move.source) == [], move.plan


# A candidate's compile error quotes the file it could not parse, and the log goes back to the LLM in the repair
# prompt: `#include "/etc/passwd"` in a solution printed `root:x:0:0:root:/root:/bin/bash` (red-team).
FILE_READS = {
    '#include "/etc/passwd"': "a path outside the include folders",
    "#include <../../secrets.h>": "a path outside the include folders",
    "#import <cuda_fp16.h>": "`#import`",
    "#include_next <cuda_fp16.h>": "`#include_next`",
    "#define HDR </etc/hostname>\n#include HDR": "a computed header name",
    '#include "notes.h"': "a quoted header the problem's solution does not include",
}


@pytest.mark.parametrize("line", list(FILE_READS))
def test_a_solution_that_would_read_a_file_the_problem_does_not_is_refused(target, problem, line: str) -> None:
    candidate = problem.source.replace(MARKER, MARKER + line + "\n")
    assert any(FILE_READS[line] in m for m in boundary.check(target, problem, candidate)), line


def test_a_solution_that_includes_a_file_of_the_problem_s_folder_is_refused(tmp_path, target) -> None:
    (tmp_path / "matmul.cu").write_text(SOURCE)
    (tmp_path / ".env").write_text("TOKEN=abc\n")
    problem = problem_of(tmp_path / "matmul.cu", "launch")
    candidate = problem.source.replace(MARKER, MARKER + "#include <.env>\n")
    assert any("a file of the problem's folder" in m for m in boundary.check(target, problem, candidate))


def test_a_solution_may_include_cuda_s_headers_and_what_the_problem_s_solution_includes(target, problem) -> None:
    candidate = problem.source.replace(MARKER, MARKER + "#include <cuda_fp16.h>\n#include <mma.h>\n")
    assert boundary.check(target, problem, candidate) == []
