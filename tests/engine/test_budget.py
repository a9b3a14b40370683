"""Run budgets (speedpatch.engine.budget): each limit stops taking work and names itself."""

from __future__ import annotations

import time

from speedpatch.config import BudgetConfig
from speedpatch.engine.budget import Budget


def test_unlimited_budget_keeps_taking_work():
    budget = Budget(BudgetConfig())
    assert all(budget.take_llm_call() and budget.take_evaluation() for _ in range(500))
    assert (budget.llm_calls, budget.evaluations, budget.exhausted) == (500, 500, "")


def test_llm_call_limit_stops_taking_calls_and_names_itself():
    budget = Budget(BudgetConfig(max_llm_calls=3))
    assert [budget.take_llm_call() for _ in range(5)] == [True, True, True, False, False]
    assert budget.llm_calls == 3
    assert budget.exhausted == "budget of 3 LLM calls used up"


def test_llm_call_limit_does_not_stop_evaluations():
    budget = Budget(BudgetConfig(max_llm_calls=1))
    budget.take_llm_call()
    budget.take_llm_call()
    assert budget.take_evaluation()


def test_evaluation_limit_stops_taking_evaluations_and_names_itself():
    budget = Budget(BudgetConfig(max_evaluations=2))
    assert [budget.take_evaluation() for _ in range(3)] == [True, True, False]
    assert budget.evaluations == 2
    assert budget.exhausted == "budget of 2 evaluations used up"


def test_wall_clock_limit_stops_all_work_and_names_itself():
    budget = Budget(BudgetConfig(max_seconds=60))
    assert budget.take_llm_call() and budget.take_evaluation()
    budget.started = time.monotonic() - 61  # as if the run had started a minute ago
    assert not budget.take_llm_call()
    assert not budget.take_evaluation()
    assert budget.exhausted == "wall-clock budget of 60 s used up"


def test_the_first_limit_reached_is_the_one_named():
    budget = Budget(BudgetConfig(max_llm_calls=1, max_evaluations=1))
    budget.take_evaluation()
    budget.take_evaluation()
    budget.take_llm_call()
    budget.take_llm_call()
    assert budget.exhausted == "budget of 1 evaluations used up"


def test_counts_given_at_construction_are_already_spent():
    budget = Budget(BudgetConfig(max_llm_calls=10, max_evaluations=5), llm_calls=10, evaluations=4)
    assert not budget.take_llm_call()
    assert budget.take_evaluation()
    assert not budget.take_evaluation()


def test_seconds_spent_by_earlier_attempts_count_against_the_wall_clock_limit():
    budget = Budget(BudgetConfig(max_seconds=60), seconds=60.5)  # a resumed run that had used it all
    assert budget.seconds() >= 60.5
    assert not budget.take_evaluation()
    assert budget.exhausted == "wall-clock budget of 60 s used up"
