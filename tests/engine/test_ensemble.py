"""Splitting work across an ensemble of models (speedpatch.llm.ensemble)."""

from __future__ import annotations

from collections import Counter

from speedpatch.llm.ensemble import code_model, code_turn, ensemble_warnings, plan_model

MODELS = ["alpha", "beta", "gamma"]


def test_plans_go_round_robin_across_planning_models():
    assert [plan_model(MODELS, slot) for slot in range(7)] == [
        "alpha", "beta", "gamma", "alpha", "beta", "gamma", "alpha"
    ]


def test_code_samples_go_round_robin_across_code_models():
    assert [code_model(["x", "y"], sample) for sample in range(4)] == ["x", "y", "x", "y"]


def test_work_is_split_evenly_when_n_is_a_multiple_of_the_model_count():
    counts = Counter(plan_model(MODELS, slot) for slot in range(6))
    assert counts == {"alpha": 2, "beta": 2, "gamma": 2}


def test_a_single_model_gets_all_the_work():
    assert {code_model(["solo"], sample) for sample in range(5)} == {"solo"}


def test_no_warnings_when_n_and_k_cover_every_model():
    assert ensemble_warnings(MODELS, ["x", "y"], plans=3, codes=2) == []


def test_with_one_code_sample_per_plan_code_still_rotates_across_models():
    # K = 1: the samples of successive plan slots go to successive models, not all to the first
    assert [code_model(["x", "y"], code_turn(slot, 0, codes=1)) for slot in range(4)] == ["x", "y", "x", "y"]


def test_code_turns_cover_every_sample_of_every_slot_once():
    turns = [code_turn(slot, sample, codes=2) for slot in range(3) for sample in range(2)]
    assert turns == list(range(6))


def test_warns_when_an_iteration_has_fewer_plan_slots_than_planning_models():
    warnings = ensemble_warnings(MODELS, ["x"], plans=2, codes=2)
    assert len(warnings) == 1
    assert "gamma" in warnings[0] and "never plan" in warnings[0] and "raise --plans or --beam" in warnings[0]
    assert "alpha" not in warnings[0]


def test_the_beam_widens_an_iteration_so_every_model_gets_a_turn():
    assert ensemble_warnings(MODELS, MODELS, plans=2, codes=1, beam=2) == []


def test_warns_when_an_iteration_has_fewer_code_samples_than_code_models():
    warnings = ensemble_warnings(["a"], ["x", "y", "z", "w", "v"], plans=2, codes=1, beam=2)
    assert len(warnings) == 1
    assert "v" in warnings[0] and "never write code" in warnings[0]


def test_both_shortfalls_give_two_warnings():
    assert len(ensemble_warnings(MODELS, MODELS, plans=1, codes=1)) == 2
