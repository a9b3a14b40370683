"""GemminiTarget: kernel detection, splicing, extraction of LLM code, static guards, feedback text."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.model import Evaluation
from speedpatch.targets import get_target, targets_for_path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "gemmini"
QUICK = (EXAMPLES / "matmul_128.c").read_text()


@pytest.fixture(scope="module")
def target():
    return get_target("gemmini")


def test_target_is_registered_for_c_files(target) -> None:
    assert target.name == "gemmini" and target.default_backend == "gemmini-native"
    assert target.language_ids == ("c", "cpp")
    assert target in targets_for_path("kernel.c") and target in targets_for_path("kernel.h")


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.c")), ids=lambda p: p.name)
def test_every_example_has_one_runnable_kernel(target, path: Path) -> None:
    kernels = target.find_kernels(path.read_text(), str(path))
    assert [k.name for k in kernels] in (["matmul_kernel"], ["conv_kernel"])
    assert kernels[0].runnable and kernels[0].target == "gemmini"


def test_kernel_region_is_the_whole_function(target) -> None:
    (k,) = target.find_kernels(QUICK)
    assert QUICK[k.start:k.end] == k.text
    assert k.text.startswith("void matmul_kernel(") and k.text.endswith("}")
    assert QUICK.splitlines()[k.signature_line].startswith("void matmul_kernel(")


def test_offsets_are_characters_not_bytes(target) -> None:
    text = "// größe ünd ßpaß\n" + QUICK
    (k,) = target.find_kernels(text)
    assert text[k.start:k.end] == k.text and k.text.startswith("void matmul_kernel(")


def test_file_without_main_is_listed_but_not_runnable(target) -> None:
    text = QUICK[: QUICK.index("int main")]
    (k,) = target.find_kernels(text)
    assert not k.runnable and "main()" in k.reason and "speedpatch_harness.h" in k.reason


def test_a_multi_core_program_is_told_that_the_model_runs_one_core(target) -> None:
    # riscv-tests' start-up code calls thread_entry(cid, nc) on every core; such programs have no main()
    text = QUICK[: QUICK.index("int main")] + "void thread_entry(int cid, int nc) { (void)nc; if (cid == 0) exit(0); }\n"
    (k,) = target.find_kernels(text)
    assert not k.runnable and "thread_entry()" in k.reason and "one core" in k.reason, k.reason


def test_functions_without_gemmini_calls_are_not_kernels(target) -> None:
    text = "int add(int a, int b) { return a + b; }\nint main(void) { return add(1, 2); }\n"
    assert target.find_kernels(text) == []


def test_helper_calling_only_raw_instructions_is_a_kernel(target) -> None:
    text = "void k(void) { gemmini_mvin(0, 0); gemmini_fence(); }\n"
    assert [k.name for k in target.find_kernels(text)] == ["k"]


@pytest.mark.parametrize("junk", [
    "", "\x00\x01\x02binary\xff", "void broken( { gemmini_mvin(", "}}}}{{{{", "x" * 3_000_000,
    "int main(void) { return 0; }", "\ud800 lone surrogate",
], ids=["empty", "binary", "broken", "braces", "huge", "main-only", "surrogate"])
def test_junk_gives_no_kernels_and_never_raises(target, junk: str) -> None:
    assert target.find_kernels(junk) == []


def test_splice_replaces_only_the_kernel(target) -> None:
    (k,) = target.find_kernels(QUICK)
    new = "void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) { gemmini_fence(); }"
    out = target.splice(QUICK, k, new)
    assert new in out and "tiled_matmul_auto" not in out and out.count("int main(void)") == 1


def test_extract_kernel_from_a_whole_file_reply_drops_main_and_keeps_helpers(target) -> None:
    (k,) = target.find_kernels(QUICK)
    reply = QUICK.replace(
        "void matmul_kernel(",
        "#define TILE 4\nstatic void helper(void) { gemmini_flush(TILE); }\nvoid matmul_kernel(",
    ).replace("  tiled_matmul_auto(", "  helper();\n  tiled_matmul_auto(")
    code = target.extract_kernel(reply, k)
    assert "int main" not in code and "#include" not in code
    assert "static void helper(void)" in code and "#define TILE 4" in code
    assert code.rstrip().endswith("}")


def test_extract_kernel_without_the_kernel_returns_the_block(target) -> None:
    (k,) = target.find_kernels(QUICK)
    assert target.extract_kernel("int x;", k) == "int x;"


# ------------------------------------------------------------------------------------------ guards
def _candidate(target, body: str, before: str = "") -> tuple[str, object]:
    (k,) = target.find_kernels(QUICK)
    new = before + "void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {\n" + body + "\n}"
    return target.splice(QUICK, k, new), k


def test_unchanged_example_passes_the_guard(target) -> None:
    (k,) = target.find_kernels(QUICK)
    assert target.static_check(QUICK, k) == []


def test_offline_move_candidates_pass_the_guard(target) -> None:
    (k,) = target.find_kernels(QUICK)
    moves = target.offline_moves(QUICK, k)
    assert moves and all(target.static_check(m.source, k) == [] for m in moves)


@pytest.mark.parametrize("body, before, words", [
    ("  gemmini_fence(); (void)read_cycles();", "", "read_cycles"),
    ("  gemmini_fence(); speedpatch_report(1, 1, 1, 1);", "", "speedpatch_report"),
    ("  gemmini_fence(); gemmini_model_fence();", "", "gemmini_model_fence"),
    ("  gemmini_fence(); system(\"true\");", "", "system"),
    ("  gemmini_fence(); exit(0);", "", "exit"),
    ("  gemmini_fence(); asm volatile(\"nop\");", "", "inline assembly"),
    ("  gemmini_fence();", "#define read_cycles() 0\n", "read_cycles"),
    ("  gemmini_fence();", "int main(void) { return 0; }\n", "main()"),
], ids=["timer", "harness", "model", "system", "exit", "asm", "macro", "main"])
def test_guard_rejects_harness_and_timer_tampering(target, body: str, before: str, words: str) -> None:
    source, k = _candidate(target, body, before)
    reasons = target.static_check(source, k)
    assert reasons and any(words in r for r in reasons), reasons


def test_guard_rejects_moving_the_matmul_to_the_cpu(target) -> None:
    body = """  for (int i = 0; i < MAT_DIM_I; i++)
    for (int j = 0; j < MAT_DIM_J; j++) {
      int32_t s = bias[j];
      for (int k = 0; k < MAT_DIM_K; k++) s += A[i * MAT_DIM_K + k] * B[k * MAT_DIM_J + j];
      C[i * MAT_DIM_J + j] = (elem_t)s;
    }"""
    source, k = _candidate(target, body)
    reasons = target.static_check(source, k)
    assert any("CPU" in r for r in reasons), reasons


def test_guard_rejects_cpu_loops_next_to_a_token_gemmini_call(target) -> None:
    body = """  gemmini_fence();
  for (int i = 0; i < MAT_DIM_I; i++)
    for (int j = 0; j < MAT_DIM_J; j++)
      for (int k = 0; k < MAT_DIM_K; k++) C[i * MAT_DIM_J + j] += A[i * MAT_DIM_K + k] * B[k * MAT_DIM_J + j];"""
    source, k = _candidate(target, body)
    assert any("CPU" in r for r in target.static_check(source, k))


def test_guard_rejects_the_library_cpu_fallback(target) -> None:
    (k,) = target.find_kernels(QUICK)
    cheat = QUICK.replace("false, false, 0, WS);", "false, false, 0, CPU);")
    assert any("CPU" in r for r in target.static_check(cheat, k))


def test_guard_rejects_a_candidate_without_the_kernel(target) -> None:
    (k,) = target.find_kernels(QUICK)
    assert any("no longer defines" in r for r in target.static_check("int main(void) { return 0; }", k))


def test_feedback_text_reports_memory_use_and_utilization(target) -> None:
    ev = Evaluation(status="ok", value=1000, unit="cycles", feedback={
        "utilization": 0.25, "macs": 64000, "cycles": 1000, "spad_kb_used": 36.0, "spad_kb_total": 256.0,
        "acc_kb_used": 30.0, "acc_kb_total": 64.0, "instructions": {"LOOP_WS": 4, "CONFIG": 5},
    })
    text = target.feedback_text(ev)
    assert "25.0%" in text and "36.0 KB of 256 KB" in text and "30.0 KB of 64 KB" in text and "LOOP_WS 4" in text
    assert target.feedback_text(Evaluation(status="compile_error")) == ""
