"""How a kit problem becomes the translation units of one A/B binary, and how the harness's result line
becomes an Evaluation with its receipt."""

from __future__ import annotations

import json

import pytest
from speedpatch.model import INCORRECT, INFRA_ERROR, OK, REJECTED, RUNTIME_ERROR
from speedpatch.targets.cuda.build import ProblemError, kit_units
from speedpatch.targets.cuda.problem import KERNELBENCH, KIT, split_problem
from speedpatch.targets.cuda.results import parse_result, to_evaluation

from .conftest import EXAMPLES, MATMUL


def test_layout_splits_at_the_solution_marker(matmul_source: str) -> None:
    layout = split_problem(matmul_source, str(MATMUL))
    assert layout is not None and layout.kind == KIT
    assert layout.harness.rstrip().endswith("// speedpatch: solution")
    assert layout.solution.startswith("#define BLOCK 16")
    assert matmul_source.splitlines()[layout.solution_line] == "#define BLOCK 16"
    assert layout.precision == "fp32"


def test_directives_set_precision_and_allowed_libraries() -> None:
    text = "// speedpatch: precision tf32\n// speedpatch: allow cublas, cudnn\n// speedpatch: solution\nvoid launch();\n"
    layout = split_problem(text, "p.cu")
    assert layout is not None and layout.precision == "tf32" and layout.allow == ("cublas", "cudnn")


def _harness(*lines: str) -> str:
    return "\n".join([*lines, '#include "speedpatch_timing.cuh"', "// speedpatch: solution", "void launch();", ""])


def test_buffers_are_fp32_unless_the_harness_selects_an_element(matmul_source: str) -> None:
    layout = split_problem(matmul_source, str(MATMUL))
    assert layout is not None and layout.element == "fp32"


@pytest.mark.parametrize(("ctype", "element"), [("__half", "fp16"), ("__nv_bfloat16", "bf16"), ("float", "fp32")])
def test_element_define_names_the_buffers_type_and_is_the_default_precision(ctype: str, element: str) -> None:
    layout = split_problem(_harness(f"#define SPEEDPATCH_ELEMENT {ctype}"), "p.cu")
    assert layout is not None and (layout.element, layout.precision) == (element, element)


def test_precision_directive_overrides_the_element_default() -> None:
    layout = split_problem(_harness("// speedpatch: precision fp32", "#define SPEEDPATCH_ELEMENT __half"), "p.cu")
    assert layout is not None and (layout.element, layout.precision) == ("fp16", "fp32")


def test_element_define_in_a_comment_or_in_the_solution_does_not_count() -> None:
    text = _harness("// #define SPEEDPATCH_ELEMENT __half") + "#define SPEEDPATCH_ELEMENT __nv_bfloat16\n"
    layout = split_problem(text, "p.cu")
    assert layout is not None and (layout.element, layout.precision) == ("fp32", "fp32")


def test_element_define_after_the_kit_header_does_not_count() -> None:
    # The header has chosen float by then; the build says so too (launch with __half does not link).
    text = _harness().replace("// speedpatch: solution", "#define SPEEDPATCH_ELEMENT __half\n// speedpatch: solution")
    layout = split_problem(text, "p.cu")
    assert layout is not None and layout.element == "fp32"


def test_unknown_element_type_is_kept_as_written_with_the_fp32_floor() -> None:
    # The kit header refuses it at compile time with an #error naming the three types it supports.
    layout = split_problem(_harness("#define SPEEDPATCH_ELEMENT half"), "p.cu")
    assert layout is not None and (layout.element, layout.precision) == ("half", "fp32")


def test_file_without_marker_is_not_a_problem() -> None:
    assert split_problem("__global__ void k() {}\n", "k.cu") is None


def test_kernelbench_layout_is_recognised() -> None:
    layout = split_problem((EXAMPLES / "kernelbench_relu.py").read_text(), "kernelbench_relu.py")
    assert layout is not None and layout.kind == KERNELBENCH and "class ModelNew" in layout.solution


def test_units_put_each_solution_in_its_own_namespace_with_original_line_numbers(matmul_source: str) -> None:
    candidate = matmul_source.replace("#define BLOCK 16", "#include <cstdint>\n#define BLOCK 32")
    units = kit_units(candidate, matmul_source, str(MATMUL))
    # harness_only.cu: the harness with an empty solution, what objcheck compares the candidate's object with
    assert set(units.files) == {"harness.cuh", "main.cu", "baseline.cu", "candidate.cu", "harness_only.cu"}
    assert "namespace sp_candidate {" in units.files["harness_only.cu"] and "BLOCK" not in units.files["harness_only.cu"]
    cand = units.files["candidate.cu"]
    assert "namespace sp_candidate {" in cand and "#define BLOCK 32" in cand
    assert cand.index("#include <cstdint>") < cand.index("namespace sp_candidate")  # hoisted out
    layout = split_problem(matmul_source)
    assert f'#line {layout.solution_line + 1} "matmul.cu"' in cand
    assert "#define BLOCK 16" in units.files["baseline.cu"] and "namespace sp_baseline {" in units.files["baseline.cu"]
    assert "sp_baseline::launch, sp_candidate::launch" in units.files["main.cu"]
    assert units.files["harness.cuh"] == layout.harness


def test_a_file_measured_against_itself_compiles_its_solution_once(matmul_source: str) -> None:
    # The baseline side calls the candidate's launch: a unit that depends only on the harness, so the compile
    # cache serves it to every self-evaluation of the problem, whatever the solution.
    other = matmul_source.replace("#define BLOCK 16", "#define BLOCK 32")
    mine, theirs = kit_units(matmul_source, None, str(MATMUL)), kit_units(other, other, str(MATMUL))
    assert mine.files["baseline.cu"] == theirs.files["baseline.cu"]
    assert "BLOCK" not in mine.files["baseline.cu"] and "sp_candidate::launch(inputs, output)" in mine.files["baseline.cu"]
    assert "#define BLOCK 16" in kit_units(other, matmul_source, str(MATMUL)).files["baseline.cu"]


def test_units_declare_launch_with_the_harness_element_type(matmul_source: str) -> None:
    # spd::elem is float unless the harness defines SPEEDPATCH_ELEMENT, so every unit agrees on the type.
    main = kit_units(matmul_source, None, str(MATMUL)).files["main.cu"]
    assert "void launch(const ::spd::elem* const* inputs, ::spd::elem* output);" in main


def test_candidate_that_changes_the_harness_is_refused(matmul_source: str) -> None:
    tampered = matmul_source.replace("s.rtol = 1e-4;", "s.rtol = 1.0;")
    with pytest.raises(ProblemError, match="harness"):
        kit_units(tampered, matmul_source, str(MATMUL))


def _line(data: dict) -> str:
    return "some output\nSPEEDPATCH_RESULT " + json.dumps(data) + "\n"


OK_RESULT = {
    "status": "ok", "message": "correct on 3 seeds", "problem": "matmul", "shapes": "A 1024x1024", "seeds": 3,
    "seed0": 0, "warmup": 3, "trials": 100, "flush_bytes": 75_000_000, "rtol": 1e-4, "atol": 1e-3,
    "device": {"name": "NVIDIA H200", "cc": "9.0", "peak_gbps": 4800.0, "peak_gflops_fp32": 66900.0},
    "baseline_ms": {"median": 2.0, "low": 1.98, "high": 2.02, "min": 1.97, "coverage": 0.96, "n": 100},
    "candidate_ms": {"median": 1.0, "low": 0.99, "high": 1.01, "min": 0.98, "coverage": 0.96, "n": 100},
    "speedup": {"median": 2.0, "low": 1.95, "high": 2.05, "min": 1.9, "coverage": 0.96, "n": 100},
    "achieved_gflops": 2147.0, "achieved_gbps": 12.6,
}


def test_ok_result_becomes_a_timed_evaluation_with_a_receipt() -> None:
    ev = to_evaluation(parse_result(_line(OK_RESULT)), "log", {"backend": "cuda-local", "compiler": "nvcc"})
    assert ev.status == OK and ev.value == 1.0 and ev.unit == "ms"
    assert ev.spread == pytest.approx(0.01)
    r = ev.receipt
    assert r["backend"] == "cuda-local" and r["device"]["name"] == "NVIDIA H200"
    assert r["trials"] == 100 and r["warmups"] == 3 and r["inputs"]["seeds"] == 3
    assert r["ci"]["low_ms"] == 0.99 and r["ci"]["method"] == "order statistics"
    assert "L2 flushed" in r["statistic"] and "alternated" in r["statistic"] and r["date"]
    assert ev.feedback["verdict"] == "faster" and ev.feedback["achieved_gflops"] == 2147.0


def test_receipt_states_the_element_type_fp32_when_the_harness_does_not_say() -> None:
    half = to_evaluation(parse_result(_line(dict(OK_RESULT, element="fp16", element_bytes=2))), "", {})
    assert (half.receipt["inputs"]["element"], half.receipt["inputs"]["element_bytes"]) == ("fp16", 2)
    assert half.feedback["element"] == "fp16"
    older = to_evaluation(parse_result(_line(OK_RESULT)), "", {})
    assert (older.receipt["inputs"]["element"], older.receipt["inputs"]["element_bytes"]) == ("fp32", 4)


def test_speedup_whose_interval_contains_one_is_no_measurable_difference() -> None:
    data = dict(OK_RESULT, speedup={"median": 1.01, "low": 0.98, "high": 1.03})
    ev = to_evaluation(parse_result(_line(data)), "", {})
    assert ev.feedback["verdict"] == "no measurable difference"


def test_speedup_over_ten_times_is_flagged_suspicious() -> None:
    data = dict(OK_RESULT, speedup={"median": 14.0, "low": 13.0, "high": 15.0})
    assert to_evaluation(parse_result(_line(data)), "", {}).feedback["verdict"].startswith("suspicious")


@pytest.mark.parametrize(
    ("status", "expected"),
    [("incorrect", INCORRECT), ("baseline_incorrect", INCORRECT), ("runtime_error", RUNTIME_ERROR),
     ("rejected", REJECTED), ("no_device", INFRA_ERROR), ("bad_problem", INFRA_ERROR)],
)
def test_failed_results_map_to_statuses(status: str, expected: str) -> None:
    ev = to_evaluation(parse_result(_line({"status": status, "message": "why"})), "log", {})
    assert ev.status == expected and "why" in ev.message and ev.value is None


def test_baseline_failure_says_the_initial_code_is_incorrect() -> None:
    ev = to_evaluation(parse_result(_line({"status": "baseline_incorrect", "message": "3 differ"})), "", {})
    assert "initial code" in ev.message


def test_no_device_names_what_else_to_do() -> None:
    ev = to_evaluation(parse_result(_line({"status": "no_device", "message": "no CUDA device"})), "", {},
                       no_device_hint="use cuda-compile")
    assert ev.message == "no CUDA device; use cuda-compile"


def test_missing_result_line_is_a_crash() -> None:
    ev = to_evaluation(parse_result("Segmentation fault\n"), "Segmentation fault", {})
    assert ev.status == RUNTIME_ERROR and "no result line" in ev.message
