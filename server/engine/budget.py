"""Run budgets: LLM calls, evaluations, wall-clock. Exhaustion ends the run cleanly with its best.

A resumed run starts from what its earlier attempts spent (calls, evaluations and seconds), so stopping
and resuming never buys a run more than its budget.
"""

from __future__ import annotations

import threading
import time

from speedpatch.config import BudgetConfig


class Budget:
    def __init__(self, config: BudgetConfig, llm_calls: int = 0, evaluations: int = 0, seconds: float = 0.0) -> None:
        self.config = config
        self.llm_calls = llm_calls
        self.evaluations = evaluations
        self.spent_before = seconds  # wall-clock seconds of earlier attempts at this run
        self.started = time.monotonic()
        self.exhausted = ""  # which limit ran out, for the run's message
        self._lock = threading.Lock()

    def seconds(self) -> float:
        """Wall-clock seconds this run has spent searching, earlier attempts included."""
        return self.spent_before + time.monotonic() - self.started

    def _out_of_time(self) -> bool:
        return bool(self.config.max_seconds) and self.seconds() >= self.config.max_seconds

    def take_llm_call(self) -> bool:
        with self._lock:
            if self._out_of_time():
                self.exhausted = self.exhausted or f"wall-clock budget of {self.config.max_seconds:g} s used up"
                return False
            if self.config.max_llm_calls and self.llm_calls >= self.config.max_llm_calls:
                self.exhausted = self.exhausted or f"budget of {self.config.max_llm_calls} LLM calls used up"
                return False
            self.llm_calls += 1
            return True

    def take_evaluation(self) -> bool:
        with self._lock:
            if self._out_of_time():
                self.exhausted = self.exhausted or f"wall-clock budget of {self.config.max_seconds:g} s used up"
                return False
            if self.config.max_evaluations and self.evaluations >= self.config.max_evaluations:
                self.exhausted = self.exhausted or f"budget of {self.config.max_evaluations} evaluations used up"
                return False
            self.evaluations += 1
            return True
