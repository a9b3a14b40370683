"""Beam selection, exactly as the Autocomp method describes it.

pool = current beam + this iteration's children; incorrect candidates are dropped; a child is kept only
if it beats its parent (with regression slack in the first iterations); incumbents are exempt; a child
with the same parent and plan text as one already kept is skipped; the top B by score survive.
"""

from __future__ import annotations

from speedpatch.model import Candidate


def admissible(child: Candidate, parent_score: float, iteration: int, slack: float, slack_iterations: int) -> bool:
    if child.score == float("inf"):
        return False
    if iteration <= slack_iterations:
        return child.score < parent_score * slack
    return child.score < parent_score


def select_beam(
    beam: list[Candidate],
    children: list[Candidate],
    iteration: int,
    width: int,
    slack: float = 1.1,
    slack_iterations: int = 2,
) -> list[Candidate]:
    scores = {c.id: c.score for c in beam}
    pool = [c for c in beam if c.score != float("inf")]
    for child in children:
        parent_score = scores.get(child.parent_id or "", float("inf"))
        if admissible(child, parent_score, iteration, slack, slack_iterations):
            pool.append(child)
    # stable sort: ties keep incumbents first, then children in generation order
    pool.sort(key=lambda c: c.score)
    kept: list[Candidate] = []
    seen_plans: set[tuple[str | None, str]] = set()
    seen_sources: set[str] = set()
    for cand in pool:
        is_incumbent = cand.id in scores
        key = (cand.parent_id, cand.plan.strip())
        if not is_incumbent and (key in seen_plans or cand.source_hash in seen_sources):
            continue
        seen_plans.add(key)
        seen_sources.add(cand.source_hash)
        kept.append(cand)
        if len(kept) == width:
            break
    return kept
