"""The winner is re-verified on an independent backend before it is reported.

A search rewards whatever its backend measures, so a bug in one model (the native Gemmini model, say)
that lets a wrong kernel pass its check would be found first by the search. A backend may therefore name
a second one of the same target (`Backend.reverify_with`, for gemmini-native: gemmini-spike, a RISC-V
build run on Spike) that checks correctness independently. When the run ends, its best candidate is run
there: if it is not correct there, it is rejected with the second backend's reason and the next best is
tried (at most MAX_TRIES); if none passes, the run reports no speedup. An infrastructure failure of the
second backend, or its time limit, is not evidence against the candidate: the winner is kept and says it was
not re-verified.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from speedpatch.model import INFRA_ERROR, REJECTED, TIMEOUT, Candidate, Evaluation

MAX_TRIES = 3  # winners re-verified before the run gives up and keeps the original
TIME_FACTOR = 4  # the second backend may take this many evaluation timeouts (Spike is slower than native)


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


def _rejected(cand: Candidate, backend: str, result: Evaluation) -> Candidate:
    ev = cand.evaluation
    assert ev is not None
    why = f"re-verification on {backend} failed ({result.status}): {result.message}".strip()
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
        if result.correct:
            best = _note(cand, f"correct on {check.backend}")
            return Outcome(best, warnings), [*changed, best]
        if result.status in (INFRA_ERROR, TIMEOUT):  # says nothing about the candidate: inconclusive
            best = _note(cand, f"not re-verified: {check.backend} did not finish ({result.message})"[:300])
            warnings.append(f"the winner {cand.id} was not re-verified: {check.backend} did not finish: "
                            f"{result.message}")
            return Outcome(best, warnings), [*changed, best]
        bad = _rejected(cand, check.backend, result)
        changed.append(bad)
        why = bad.evaluation.message if bad.evaluation else ""
        warnings.append(f"candidate {cand.id} was the fastest but is rejected: {why}")
    warnings.append(f"no winner passed re-verification on {check.backend} "
                    f"({min(len(ranked), MAX_TRIES)} tried): the original is kept")
    return Outcome(base, warnings), changed
