"""Splitting work across an ensemble of models (speedpatch.llm.ensemble)."""

from __future__ import annotations

from collections import Counter

from speedpatch.llm.ensemble import code_model, ensemble_warnings, plan_model

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


def test_warns_when_plans_per_parent_are_fewer_than_planning_models():
    warnings = ensemble_warnings(MODELS, ["x"], plans=2, codes=2)
    assert len(warnings) == 1
    assert "gamma" in warnings[0] and "never plan" in warnings[0] and "--plans to at least 3" in warnings[0]
    assert "alpha" not in warnings[0]


def test_warns_when_code_samples_are_fewer_than_code_models():
    warnings = ensemble_warnings(["a"], ["x", "y", "z"], plans=4, codes=1)
    assert len(warnings) == 1
    assert "y, z" in warnings[0] and "never write code" in warnings[0] and "--codes to at least 3" in warnings[0]


def test_both_shortfalls_give_two_warnings():
    assert len(ensemble_warnings(MODELS, MODELS, plans=1, codes=1)) == 2
