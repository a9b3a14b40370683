"""The offline proposer: deterministic menu moves implemented by the target as source rewrites.

No network, no randomness: every parent gets each of the target's applicable moves as one plan, whose
code is the rewritten file. This makes the whole pipeline usable and testable without an LLM.
"""

from __future__ import annotations

import threading

from speedpatch.engine.proposer import Code, Plan, Slot
from speedpatch.model import Candidate, Kernel
from speedpatch.targets.base import Move, Target

MAX_MOVES = 32  # per parent, to bound an iteration's work


class OfflineProposer:
    name = "offline"

    def __init__(self, target: Target, kernel: Kernel) -> None:
        self.target, self.kernel = target, kernel
        self._moves: dict[str, list[Move]] = {}
        self._lock = threading.Lock()

    def _moves_for(self, parent: Candidate) -> list[Move]:
        with self._lock:
            if parent.id not in self._moves:
                kernel = next(
                    (k for k in self.target.find_kernels(parent.source) if k.name == self.kernel.name),
                    self.kernel,
                )
                moves = [m for m in self.target.offline_moves(parent.source, kernel) if m.source != parent.source]
                self._moves[parent.id] = moves[:MAX_MOVES]
            return self._moves[parent.id]

    def slots(self, parent: Candidate, plans: int) -> int:
        return len(self._moves_for(parent))

    def codes(self, codes: int) -> int:
        return 1  # a move has exactly one rewrite

    def plan(self, slot: Slot) -> Plan | None:
        moves = self._moves_for(slot.parent)
        if slot.index >= len(moves):
            return None
        move = moves[slot.index]
        return Plan(text=move.plan, model="offline", source=move.source)

    def code(self, slot: Slot, plan: Plan, sample: int) -> Code:
        return Code(plan.source, "offline")

    def fix(self, slot: Slot, plan: Plan, sample: int, child: Candidate) -> Code | None:
        return None  # a deterministic move cannot be repaired by asking again
