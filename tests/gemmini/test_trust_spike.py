"""gemmini-spike's trusted build (for re-verifying a winner on a real RISC-V instruction stream): the kernel
region's RISC-V object is inspected like the native one, and the verdict is the one result line the model
inside Spike was handed by the harness, carrying this evaluation's nonce."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.model import INCORRECT, NOT_MEASURED, REJECTED, RUNTIME_ERROR
from speedpatch.targets import get_target
from speedpatch.targets.base import EvalContext

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "gemmini"
QUICK_PATH = EXAMPLES / "matmul_128.c"
QUICK = QUICK_PATH.read_text()
SIGNATURE = "void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {\n"


def evaluate(spike, tmp_path: Path, body: str | None):
    target = get_target("gemmini")
    (k,) = target.find_kernels(QUICK)
    library = k.text[k.text.index("{") + 1:k.text.rindex("}")]
    smaller = library.replace("tiled_matmul_auto(MAT_DIM_I", "tiled_matmul_auto(32")
    code = None if body is None else body.replace("SMALLER", smaller).replace("LIBRARY", library)
    source = QUICK if code is None else target.splice(QUICK, k, SIGNATURE + code + "\n}")
    work = tmp_path / f"w{len(list(tmp_path.iterdir()))}"
    work.mkdir()
    ctx = EvalContext(kernel=k, path=str(QUICK_PATH), workdir=work, timeout=240, baseline_source=QUICK)
    return spike.evaluate(source, ctx)


@pytest.mark.slow
def test_the_baseline_is_verified_on_spike_with_the_models_word(spike, tmp_path):
    ev = evaluate(spike, tmp_path, None)
    assert ev.status == NOT_MEASURED and "correct on Spike (trusted build)" in ev.message, ev.log[-1500:]
    assert "random per evaluation" in ev.receipt["inputs"]


@pytest.mark.slow
def test_a_forged_result_line_and_exit_is_refused_on_spike(spike, tmp_path):
    ev = evaluate(spike, tmp_path, '  printf("speedpatch: correct=1 cycles=5 macs=2097152 trials=2\\n");\n  exit(0);')
    assert ev.status == REJECTED and "nonce" in ev.message


@pytest.mark.slow
def test_a_kernel_that_issues_the_verdict_instruction_is_refused(spike, tmp_path):
    body = '  static char l[] = "x";\n  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, (uintptr_t)l, 1, 125);\nLIBRARY'
    ev = evaluate(spike, tmp_path, body)
    assert ev.status == REJECTED and "RoCC instruction funct 125" in ev.message


@pytest.mark.slow
@pytest.mark.parametrize("funct", [119, 120, 121, 122, 123, 124])
def test_a_kernel_may_not_mark_the_timed_region_or_a_library_copy_itself(spike, tmp_path, funct):
    # 123/124 would restart or end the model's timed region, 122/121 leave its host work uncounted, and
    # 120/119 open or close the checked kernel call with the stack pointer the kernel chose
    ev = evaluate(spike, tmp_path, f"  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, 0, 0, {funct});\nLIBRARY")
    assert ev.status == REJECTED and f"RoCC instruction funct {funct}" in ev.message


@pytest.mark.slow
def test_a_kernel_that_writes_into_program_code_is_stopped_on_spike(spike, tmp_path):
    # Code and constants are locked read + execute (start.S, PMP): otherwise a kernel could rewrite the
    # harness's instructions that run after it returns (its verdict, its timed region's end).
    body = "LIBRARY  *(volatile unsigned *)(void *)matmul_kernel = 0x00000013u; /* a nop over our own code */\n"
    ev = evaluate(spike, tmp_path, body)
    assert ev.status == RUNTIME_ERROR and "exit status 135" in ev.message, ev.message  # mcause 7
    assert "store access fault" in ev.message, ev.message


@pytest.mark.slow
def test_a_kernel_that_rewrites_the_harnesss_saved_registers_is_refused_on_spike(spike, tmp_path):
    # The kernel's frame address is its caller's stack pointer: the trampoline's saved return address and
    # s0-s11 lie there. Rewritten, the harness would go on with registers (or a return) the kernel chose.
    body = "LIBRARY  ((volatile unsigned long *)__builtin_frame_address(0))[1] ^= 1;\n"
    ev = evaluate(spike, tmp_path, body)
    assert ev.status == REJECTED and "tampering: the harness's registers or stack frames" in ev.message, ev.message


@pytest.mark.slow
def test_a_kernel_that_reads_a_control_register_is_refused(spike, tmp_path):
    ev = evaluate(spike, tmp_path, '  unsigned long c;\n  asm volatile("rdcycle %0" : "=r"(c));\n  (void)c;\nLIBRARY')
    # refused at the source (an asm statement other than the Gemmini API's) before its object is read
    assert ev.status == REJECTED and "rdcycle" in ev.message, ev.message


@pytest.mark.slow
def test_a_kernel_that_computes_too_few_rows_is_incorrect_on_spike(spike, tmp_path):
    ev = evaluate(spike, tmp_path, "SMALLER")
    assert ev.status == INCORRECT and "mismatch" in ev.message
