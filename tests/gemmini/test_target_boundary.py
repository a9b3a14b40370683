"""The trust boundary on Gemmini C: a reply contributes its kernel (and helpers) only; the problem's
constants, includes, harness and main always come from the original file."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.engine import boundary
from speedpatch.targets import get_target
from support.replies import problem_of, propose

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "gemmini"
QUICK_PATH = EXAMPLES / "matmul_128.c"
QUICK = QUICK_PATH.read_text()
KERNEL = QUICK[QUICK.index("void matmul_kernel("): QUICK.index("int main(void)")].rstrip()
OS_KERNEL = KERNEL.replace(", WS);", ", OS);")  # a different, still correct, kernel


@pytest.fixture(scope="module")
def target():
    return get_target("gemmini")


@pytest.fixture
def problem():
    return problem_of(QUICK_PATH, "matmul_kernel")


def fenced(code: str) -> str:
    return f"Here you go:\n```c\n{code}\n```\n"


def test_problem_names_are_the_files_constants_main_and_the_harness_headers(target, problem) -> None:
    names = target.problem_names(problem.source, problem.kernel)
    assert {"MAT_DIM_I", "MATMUL_SCALE", "main", "speedpatch_run_matmul", "read_cycles", "tiled_matmul_auto"} <= names
    assert "matmul_kernel" not in names


def test_a_whole_file_reply_with_a_changed_constant_keeps_the_original_constant(tmp_path, problem) -> None:
    reply = fenced(QUICK.replace("#define MAT_DIM_I 128", "#define MAT_DIM_I 32").replace(KERNEL, OS_KERNEL))
    code, _ = propose(tmp_path, problem, reply)
    assert code.source == QUICK.replace(KERNEL, OS_KERNEL)
    assert boundary.check(get_target("gemmini"), problem, code.source) == []


def test_a_kernel_only_reply_with_a_top_level_define_of_a_constant_drops_the_define(tmp_path, problem) -> None:
    code, _ = propose(tmp_path, problem, fenced("#define MAT_DIM_K 16\n\n" + OS_KERNEL))
    assert code.source == QUICK.replace(KERNEL, OS_KERNEL)


def test_a_kernel_block_followed_by_a_usage_snippet_gives_the_kernel(tmp_path, problem) -> None:
    usage = "int main(void) {\n  matmul_kernel(A, B, bias, C);\n  return 0;\n}"
    code, _ = propose(tmp_path, problem, fenced(OS_KERNEL) + "Call it like this:\n" + fenced(usage))
    assert code.source == QUICK.replace(KERNEL, OS_KERNEL)


def test_an_unfenced_reply_between_prose_paragraphs_gives_the_kernel(tmp_path, problem) -> None:
    reply = f"The output-stationary dataflow suits this shape.\n\n{OS_KERNEL}\n\nIt keeps the partial sums in the PEs."
    code, client = propose(tmp_path, problem, reply)
    assert code.source == QUICK.replace(KERNEL, OS_KERNEL) and len(client.prompts) == 1


def test_a_define_of_a_constant_inside_the_kernel_is_rejected_naming_it(target, problem) -> None:
    body = OS_KERNEL.replace("{\n", "{\n#undef MAT_DIM_I\n#define MAT_DIM_I 32\n", 1)
    candidate = QUICK.replace(KERNEL, body)
    (reason,) = boundary.check(target, problem, candidate)
    assert "redefines MAT_DIM_I" in reason and "matmul_kernel" in reason


def test_a_block_scope_extern_of_a_harness_global_is_rejected_naming_it(target, problem) -> None:
    body = OS_KERNEL.replace("{\n", "{\n  extern uint64_t speedpatch_rng_state;\n  speedpatch_rng_state = 1;\n", 1)
    (reason,) = boundary.check(target, problem, QUICK.replace(KERNEL, body))
    assert "redefines speedpatch_rng_state" in reason


def test_a_helper_named_like_a_harness_function_is_rejected_naming_it(target, problem) -> None:
    helper = "static int speedpatch_run_matmul(void) { return 0; }\n\n"
    (reason,) = boundary.check(target, problem, QUICK.replace(KERNEL, helper + OS_KERNEL))
    assert "redefines speedpatch_run_matmul" in reason


def test_a_name_with_the_harness_prefix_is_rejected_even_when_no_header_defines_it(target, problem) -> None:
    helper = "#define SPEEDPATCH_NO_SUCH_SETTING 1\n\n"
    (reason,) = boundary.check(target, problem, QUICK.replace(KERNEL, helper + OS_KERNEL))
    assert "redefines SPEEDPATCH_NO_SUCH_SETTING" in reason


def test_a_macro_that_would_rewrite_main_is_rejected_naming_it(target, problem) -> None:
    # main() comes after the kernel: `true` there is the harness's has_bias argument
    (reason,) = boundary.check(target, problem, QUICK.replace(KERNEL, "#define true false\n\n" + OS_KERNEL))
    assert "redefines true" in reason


def test_a_helper_named_like_a_library_function_the_harness_calls_is_rejected(target, problem) -> None:
    helper = "int exit(int code) { return code; }\n\n"
    (reason,) = boundary.check(target, problem, QUICK.replace(KERNEL, helper + OS_KERNEL))
    assert "redefines exit" in reason


def test_an_include_inside_the_kernel_is_rejected_naming_it(target, problem) -> None:
    body = OS_KERNEL.replace("{\n", '{\n#include "include/gemmini_params.h"\n', 1)
    (reason,) = boundary.check(target, problem, QUICK.replace(KERNEL, body))
    assert '`#include "include/gemmini_params.h"`' in reason


def test_a_change_outside_the_kernel_region_is_rejected_with_the_line(target, problem) -> None:
    candidate = QUICK.replace("#define MAT_DIM_I 128", "#define MAT_DIM_I 32")
    (reason,) = boundary.check(target, problem, candidate)
    assert "line 7: `#define MAT_DIM_I 128` became `#define MAT_DIM_I 32`" in reason


def test_a_change_to_main_is_rejected_with_the_line(target, problem) -> None:
    candidate = QUICK.replace("return speedpatch_run_matmul(", "return 0 * speedpatch_run_matmul(")
    (reason,) = boundary.check(target, problem, candidate)
    assert "after the kernel region" in reason and "return 0 * speedpatch_run_matmul(" in reason


def test_new_helpers_of_the_kernel_are_kept_in_the_region(tmp_path, problem) -> None:
    helper = "#define SP_WS_DATAFLOW WS\n\nstatic int sp_unused(void) { return 0; }"
    kernel = KERNEL.replace(", WS);", ", SP_WS_DATAFLOW);")
    code, _ = propose(tmp_path, problem, fenced(QUICK.replace(KERNEL, f"{helper}\n\n{kernel}")))
    region = boundary.region_of(problem, code.source)
    assert region == f"#define SP_WS_DATAFLOW WS\n\n{kernel}"  # what the kernel does not use is not taken


def test_defines_do_not_pile_up_over_two_accepted_steps(tmp_path, problem) -> None:
    step = QUICK.replace(KERNEL, "#define SP_FLOW OS\n\n" + KERNEL.replace(", WS);", ", SP_FLOW);"))
    first, _ = propose(tmp_path / "a", problem, fenced(step))
    second, _ = propose(tmp_path / "b", problem, fenced(step.replace("SP_FLOW OS", "SP_FLOW WS")), parent=first.source)
    assert second.source.count("#define SP_FLOW") == 1 and "#define SP_FLOW WS" in second.source
    assert second.source.count("#define MAT_DIM_I") == 1
    assert boundary.check(get_target("gemmini"), problem, second.source) == []


def test_a_kernel_alone_after_a_step_with_helpers_keeps_the_helpers_it_uses(tmp_path, problem) -> None:
    step = "#define SP_FLOW OS\n\n" + KERNEL.replace(", WS);", ", SP_FLOW);")
    first, _ = propose(tmp_path / "a", problem, fenced(step))
    alone = KERNEL.replace(", WS);", ", SP_FLOW);").replace("MATMUL_ACT, MATMUL_SCALE", "MATMUL_ACT, (MATMUL_SCALE)")
    second, _ = propose(tmp_path / "b", problem, fenced(alone), parent=first.source)
    assert boundary.region_of(problem, second.source) == f"#define SP_FLOW OS\n\n{alone}"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.c")), ids=lambda p: p.name)
def test_offline_moves_of_every_example_stay_inside_the_kernel_region(target, path: Path) -> None:
    (kernel,) = target.find_kernels(path.read_text(), str(path))
    problem = problem_of(path, kernel.name)
    moves = target.offline_moves(problem.source, kernel)
    assert moves
    for move in moves:
        assert boundary.check(target, problem, move.source) == [], move.plan
