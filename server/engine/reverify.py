"""The winner is re-verified on an independent backend before it is reported.

A search rewards whatever its backend measures, so a bug in one model (the native Gemmini model, say)
that lets a wrong kernel pass its check would be found first by the search. A backend may therefore name
a second one of the same target (`Backend.reverify_with`, for gemmini-native: gemmini-spike, a RISC-V
build run on Spike) that checks correctness independently. When the run ends, its best candidate is run
there: if it is not correct there, it is rejected with the second backend's reason and the next best is
tried (at most MAX_TRIES); if none passes, the run reports no speedup. An infrastructure failure of the
second backend (not installed, its own build broken) is not evidence against the candidate: the winner is
kept and says it was not re-verified. Running out of time there is the candidate's own run: a kernel that
spins only on the second platform would otherwise keep a figure nobody checked, so it is rejected, with
what to change (more time, or `[search] reverify = false` to report unchecked winners).

Where the second backend also measures the candidate's figure in the same unit (gemmini-spike: the same
cycle model, outside the program's reach), the winner's figure must be reproduced there: a first figure
more than FIGURE_TOLERANCE below the second is not reported. The first backend may share its address
space with the candidate (gemmini-native), so its figure is evidence the candidate could have forged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from speedpatch.model import INFRA_ERROR, REJECTED, TIMEOUT, Candidate, Evaluation

MAX_TRIES = 3  # winners re-verified before the run gives up and keeps the original
TIME_FACTOR = 4  # the second backend may take this many evaluation timeouts (Spike is slower than native)
# How far below the second backend's figure the first may lie. gemmini-native and gemmini-spike run the same
# cycle model; they differ only in how host work is counted (x86 basic blocks as compiled with the trace-pc
# hook, against RISC-V instructions Spike retired). Honest kernels measured within 0.4% of each other, and
# natively counted host work is usually the larger (benchmarks/gemmini_spike_agreement.py prints both; on
# Spike the harness's kernel-call trampoline is counted too: matmul_128's library call, 14,751 natively and
# 14,768 there).
FIGURE_TOLERANCE = 0.03


@dataclass
class Reverifier:
    backend: str  # the independent backend's name
    run: Callable[[str], Evaluation] | None  # evaluates a whole candidate file there; None: not usable here
    unusable: str = ""  # why it cannot run here


@dataclass
class Outcome:
    best: Candidate | None  # the winner to report (the original when every tried winner failed)
    warnings: list[str]  # what the user must be told: rejected winners, "not re-verified"


def _note(cand: Candidate, text: str) -> Candidate:
    ev = cand.evaluation
    assert ev is not None
    return replace(cand, evaluation=replace(ev, receipt={**(ev.receipt or {}), "reverified": text}))


def _figure_problem(first: Evaluation, second: Evaluation, backend: str) -> str:
    """Why the first backend's figure is not reproduced by the second's ("" when it is, or when the second
    measured nothing comparable)."""
    if second.value is None or first.value is None or second.unit != first.unit or second.value <= 0:
        return ""
    if first.value >= second.value * (1 - FIGURE_TOLERANCE):
        return ""
    below = 1 - first.value / second.value
    return (f"its figure, {first.value:,.0f} {first.unit}, is {below:.1%} below the {second.value:,.0f} {second.unit} "
            f"{backend} measured for the same code, where the program cannot reach the measurement (at most "
            f"{FIGURE_TOLERANCE:.0%} is allowed): the figure was forged, or the code does not behave or cost the same "
            "on both")


def _rejected(cand: Candidate, backend: str, result: Evaluation, why: str = "") -> Candidate:
    ev = cand.evaluation
    assert ev is not None
    why = why or f"re-verification on {backend} failed ({result.status}): {result.message}".strip()
    return replace(cand, evaluation=replace(ev, status=REJECTED, message=why, log=result.log or ev.log,
                                            receipt={**(ev.receipt or {}), "reverified": why}))


def reverify(check: Reverifier, base: Candidate, ranked: list[Candidate],
             stopping: Callable[[], bool]) -> tuple[Outcome, list[Candidate]]:
    """Re-verify the fastest of `ranked` (correct candidates faster than `base`, best first). Returns the
    outcome and the candidates whose evaluation changed (to be stored)."""
    changed: list[Candidate] = []
    warnings: list[str] = []
    if not ranked:
        return Outcome(base, warnings), changed
    if check.run is None:
        best = _note(ranked[0], f"not re-verified: {check.backend} is not usable here ({check.unusable})")
        warnings.append(f"the winner was not re-verified: {check.backend} is not usable here ({check.unusable})")
        return Outcome(best, warnings), [best]
    for cand in ranked[:MAX_TRIES]:
        if stopping():
            best = _note(cand, f"not re-verified on {check.backend}: the run was stopped")
            return Outcome(best, warnings), [*changed, best]
        result = check.run(cand.source)
        assert cand.evaluation is not None
        forged = _figure_problem(cand.evaluation, result, check.backend) if result.correct else ""
        if result.correct and not forged:
            there = f" ({result.value:,.0f} {result.unit} there)" if result.value is not None \
                and result.unit == cand.evaluation.unit else ""
            best = _note(cand, f"correct on {check.backend}{there}")
            return Outcome(best, warnings), [*changed, best]
        if result.status == INFRA_ERROR:  # says nothing about the candidate: inconclusive
            best = _note(cand, f"not re-verified: {check.backend} did not work ({result.message})"[:300])
            warnings.append(f"the winner {cand.id} was not re-verified: {check.backend} did not work: "
                            f"{result.message}")
            return Outcome(best, warnings), [*changed, best]
        if forged:
            why = f"re-verification on {check.backend}: {forged}"
        elif result.status == TIMEOUT:
            why = (f"re-verification on {check.backend} did not finish ({result.message}): a winner must be checked "
                   f"there; give it more time ([search] eval_timeout, times {TIME_FACTOR} there) or set [search] "
                   "reverify = false to report unchecked winners")
        else:
            why = ""
        bad = _rejected(cand, check.backend, result, why)
        changed.append(bad)
        why = bad.evaluation.message if bad.evaluation else ""
        warnings.append(f"candidate {cand.id} was the fastest but is rejected: {why}")
    warnings.append(f"no winner passed re-verification on {check.backend} "
                    f"({min(len(ranked), MAX_TRIES)} tried): the original is kept")
    return Outcome(base, warnings), changed
