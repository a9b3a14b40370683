"""What the search asks of a proposer: plans for a parent, then code for a plan, then fixes."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol

from speedpatch.model import Candidate


class BudgetExhausted(Exception):
    """A proposer may not ask for more: the run's LLM budget is spent (the run ends as finished)."""


class Cancelled(Exception):
    """The run was cancelled while a proposer waited (the slot ends quietly)."""


@dataclass
class Plan:
    text: str
    model: str
    source: str | None = None  # offline moves already carry their whole rewritten file


@dataclass
class Code:
    source: str | None  # the whole candidate file, None when the reply held no usable code
    model: str
    error: str = ""  # why there is no code


@dataclass
class Slot:
    """Where a proposal sits in the search; its key names stored LLM replies for resume."""

    iteration: int
    iterations: int
    parent: Candidate
    index: int  # plan number for this parent
    key: str
    guidance: str = ""  # a step of a reused schedule this plan should adapt (see engine/schedule.py)
    position: int = 0  # this slot's place among all of the iteration's slots (beam member x plan number)

    def rng(self, seed: int) -> random.Random:
        return random.Random(f"{seed}:{self.key}")


class Proposer(Protocol):
    name: str

    def slots(self, parent: Candidate, plans: int) -> int:
        """How many plans to ask for this parent."""
        ...

    def codes(self, codes: int) -> int:
        """How many code samples per plan."""
        ...

    def plan(self, slot: Slot) -> Plan | None: ...

    def code(self, slot: Slot, plan: Plan, sample: int) -> Code: ...

    def fix(self, slot: Slot, plan: Plan, sample: int, child: Candidate) -> Code | None: ...
