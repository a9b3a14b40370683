"""Beam selection (speedpatch.engine.selection), as the Autocomp method specifies it."""

from __future__ import annotations

from speedpatch.engine.selection import select_beam
from speedpatch.model import INCORRECT, OK, RUNTIME_ERROR, Candidate, Evaluation, source_hash


def cand(cid: str, value: float | None, parent: str | None = "base", plan: str | None = None,
         status: str = OK, source: str | None = None) -> Candidate:
    source = source if source is not None else f"# source of {cid}\n"
    return Candidate(
        id=cid, run_id="r", parent_id=parent, iteration=1, plan=plan if plan is not None else f"plan {cid}",
        source=source, source_hash=source_hash(source), evaluation=Evaluation(status=status, value=value),
    )


BASE = cand("base", 100.0, parent=None, plan="")


def ids(beam: list[Candidate]) -> list[str]:
    return [c.id for c in beam]


def test_beam_keeps_top_b_by_score():
    children = [cand(f"c{v}", float(v)) for v in (90, 60, 80, 70, 95)]
    assert ids(select_beam([BASE], children, iteration=3, width=3)) == ["c60", "c70", "c80"]


def test_incumbents_compete_with_children_for_the_beam():
    children = [cand("c50", 50.0), cand("c99", 99.0)]
    assert ids(select_beam([BASE], children, iteration=3, width=2)) == ["c50", "c99"]
    assert ids(select_beam([BASE], children, iteration=3, width=3)) == ["c50", "c99", "base"]


def test_incorrect_candidates_never_enter_the_beam():
    children = [cand("wrong", 1.0, status=INCORRECT), cand("crash", None, status=RUNTIME_ERROR)]
    assert ids(select_beam([BASE], children, iteration=1, width=4)) == ["base"]


def test_a_failed_incumbent_is_dropped_from_the_beam():
    broken = cand("broken", None, parent=None, status=RUNTIME_ERROR)
    assert ids(select_beam([broken], [cand("c", 10.0, parent="broken")], iteration=1, width=4)) == ["c"]


def test_child_within_ten_percent_slack_is_kept_in_second_iteration():
    assert ids(select_beam([BASE], [cand("slower", 109.0)], iteration=2, width=4)) == ["base", "slower"]


def test_child_more_than_ten_percent_slower_is_dropped_in_first_iteration():
    assert ids(select_beam([BASE], [cand("slower", 111.0)], iteration=1, width=4)) == ["base"]


def test_child_must_strictly_beat_parent_after_slack_iterations():
    children = [cand("equal", 100.0), cand("slower", 105.0), cand("faster", 99.0)]
    assert ids(select_beam([BASE], children, iteration=3, width=4)) == ["faster", "base"]


def test_child_is_judged_against_its_own_parent_not_the_best():
    fast = cand("fast", 50.0)
    # 70 is worse than the beam's best (50) but better than its parent (100): it is kept
    child = cand("child", 70.0, parent="base")
    assert ids(select_beam([BASE, fast], [child], iteration=4, width=4)) == ["fast", "child", "base"]


def test_child_worse_than_its_parent_is_dropped_even_when_the_beam_has_room():
    fast = cand("fast", 50.0)
    child = cand("child", 60.0, parent="fast")
    assert ids(select_beam([BASE, fast], [child], iteration=4, width=4)) == ["fast", "base"]


def test_incumbents_are_exempt_from_the_parent_rule():
    # kept under the early slack although slower than its parent; later it stays without re-checking
    slower = cand("slower", 105.0, parent="base")
    assert ids(select_beam([BASE, slower], [], iteration=6, width=4)) == ["base", "slower"]


def test_slack_factor_and_slack_iterations_are_parameters():
    child = cand("slower", 140.0)
    assert ids(select_beam([BASE], [child], iteration=1, width=4, slack=1.5, slack_iterations=1)) == ["base", "slower"]
    assert ids(select_beam([BASE], [child], iteration=2, width=4, slack=1.5, slack_iterations=1)) == ["base"]


def test_second_child_with_same_parent_and_plan_is_skipped():
    children = [
        cand("a1", 80.0, plan="Tile the loop by 16."),
        cand("a2", 70.0, plan="  Tile the loop by 16.\n"),  # same plan text, only whitespace differs
        cand("b", 90.0, plan="Unroll the inner loop."),
    ]
    assert ids(select_beam([BASE], children, iteration=3, width=4)) == ["a2", "b", "base"]


def test_same_plan_under_different_parents_is_kept_for_each():
    other = cand("other", 200.0, parent=None, plan="")
    children = [cand("x", 80.0, parent="base", plan="Tile."), cand("y", 150.0, parent="other", plan="Tile.")]
    assert ids(select_beam([BASE, other], children, iteration=3, width=4)) == ["x", "base", "y", "other"]


def test_child_with_the_same_source_as_a_kept_candidate_is_skipped():
    same = "def kernel(): pass\n"
    children = [cand("a", 80.0, plan="one", source=same), cand("b", 80.0, plan="two", source=same)]
    assert ids(select_beam([BASE], children, iteration=3, width=4)) == ["a", "base"]


def test_ties_keep_the_incumbent_before_the_child():
    tie = cand("tie", 100.0)  # allowed by the early slack, equal to its parent
    assert ids(select_beam([BASE], [tie], iteration=1, width=1)) == ["base"]
