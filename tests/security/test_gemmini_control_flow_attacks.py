"""gemmini-native: a kernel that returns somewhere else than where it was called from.

The host-work charge is a table of straight-line segments, each starting after a call into the model (a
basic block's trace-pc hook, an accelerator instruction): a hook charges the segment that starts at its
return address. Code entered in the middle of a segment, past its hook, therefore runs uncharged until
the next hook. Ordinary control flow never does that (every jump target is a block with its own hook;
indirect calls and jumps are refused), but a return to a chosen address does: the kernel's helper records
an address inside a big block (`__builtin_return_address(0)` of a call made there) and later returns to
it, so the block runs again and again while each round is charged only the few instructions of the jump.

Two ways to make that return:
- `__builtin_eh_return(0, target)`: gcc's epilogue sets the stack pointer from a register and returns; no
  indirect-branch instruction, no memory write. Refused by the object check (build.EH_RETURN_PROBLEM).
- writing the helper's own return slot (`__builtin_frame_address(0)[1] = target`): a memory write, the
  in-process class that stays open natively (docs/threat-model.md, "What gemmini-native does not
  protect"); the strict xfail says so, and re-verification on Spike, which counts every retired
  instruction, rejects such a winner."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from gemmini_native import HONEST, LIBRARY_CALL, SIGNATURE, evaluate, reverified_on_spike
from speedpatch.model import OK, REJECTED
from speedpatch.targets import get_target

REPO = Path(__file__).resolve().parents[2]
ROUNDS = 1000
BODY = "\n".join(f"  acc = acc * 3 + {i};" for i in range(200))  # ~600 host instructions, one basic block

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")]


def host_work_kernel(jump: str) -> str:
    """The library call after ROUNDS rounds of BODY; `jump` is the body of `again(target)`, which must return
    to `target` (a place inside the body's block) instead of its caller. Empty: an ordinary loop."""
    if not jump:
        work = (f"__attribute__((noinline)) static void host_work(void) {{\n"
                f"  for (rounds = 0; rounds < {ROUNDS}; rounds = rounds + 1) {{\n{BODY}\n  }}\n}}\n")
    else:
        work = (f"__attribute__((noinline)) static void mark(void) {{ resume = __builtin_return_address(0); }}\n"
                f"__attribute__((noinline)) static void again(void *target) {{\n  mark();\n  resume = target;\n"
                f"  {jump}\n}}\n"
                f"__attribute__((noinline)) static void host_work(void) {{\n  rounds = 0;\n  mark();\n{BODY}\n"
                f"  rounds = rounds + 1;\n  if (rounds < {ROUNDS}) again(resume);\n"
                "  acc = acc + 1;\n}\n")  # (not a tail call: host_work's frame must still be there)
    return ("static volatile long rounds;\nstatic void *volatile resume;\nstatic volatile long acc;\n" + work
            + f"{SIGNATURE} {{\n  host_work();\n  {LIBRARY_CALL}\n}}")


EH_RETURN = "__builtin_eh_return(0, target);"
# x86-64 keeps the return address just above the saved frame pointer, RISC-V just below it (and only where
# the function calls another, hence again()'s call to mark()): the same jump on both, so that Spike runs, and
# counts, every round.
RETURN_SLOT = ("\n#ifdef __riscv\n  ((void *volatile *)__builtin_frame_address(0))[-1] = target;\n"
               "#else\n  ((void *volatile *)__builtin_frame_address(0))[1] = target;\n#endif\n")


@pytest.fixture(scope="module")
def target():
    return get_target("gemmini")


def test_a_return_through_builtin_eh_return_is_refused(target, tmp_path):
    # Before: correct at 33,775 cycles; the same 1,000 rounds of ~600 instructions as a loop: 620,191.
    ev = evaluate(target, tmp_path / "eh", host_work_kernel(EH_RETURN))
    assert ev.status == REJECTED, (ev.status, ev.value, ev.message)
    assert "returns to an address it computed" in ev.message and "again" in ev.message, ev.message


@pytest.mark.xfail(strict=True, reason="open natively: a kernel may write its own return slot (the in-process "
                                      "memory class, docs/threat-model.md); Spike counts every instruction (below)")
def test_host_work_behind_a_rewritten_return_slot_is_charged(target, tmp_path):
    looped = evaluate(target, tmp_path / "loop", host_work_kernel(""))
    assert looped.status == OK, looped.message
    skipped = evaluate(target, tmp_path / "slot", host_work_kernel(RETURN_SLOT))
    assert skipped.status != OK or skipped.value >= looped.value, (
        f"{ROUNDS} rounds of host work charged {skipped.feedback.get('host_cycles')} host cycles "
        f"({skipped.value} in all); as a loop {looped.feedback.get('host_cycles')} ({looped.value})")


def test_a_winner_whose_host_work_hid_behind_a_rewritten_return_is_rejected_on_spike(target, tmp_path):
    spike = target.backend("gemmini-spike")
    if not spike.availability({}).usable:
        pytest.skip(spike.availability({}).reason)
    honest = evaluate(target, tmp_path / "honest", HONEST)
    region = host_work_kernel(RETURN_SLOT)
    skipped = evaluate(target, tmp_path / "slot", region)
    assert skipped.status == OK, skipped.message  # natively it passes (the xfail above)

    best, changed = reverified_on_spike(target, tmp_path, honest, region, skipped)
    assert best is not None and best.id == "base"
    (rejected,) = changed
    assert rejected.evaluation.status == REJECTED, rejected.evaluation.message
    assert "gemmini-spike measured" in rejected.evaluation.message, rejected.evaluation.message
