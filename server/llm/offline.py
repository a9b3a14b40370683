"""The offline proposer: deterministic menu moves implemented by the target as source rewrites.

No network: every parent is offered the target's applicable moves as plans whose code is the rewritten
file. What makes it a search rather than a replay of the same list every iteration:

- never twice: a move whose resulting code was already proposed in this run (from any parent) is not
  proposed again, nor a plan already tried on the same parent code; a plan whose code failed (wrong,
  crashed, did not build) is not offered again on other parents either — that is how a move that breaks
  a target limit stops being proposed;
- ordered by what was measured: per parent at most N*K moves per iteration (the evaluations an LLM
  search would spend on it), ranked by (1) the step of a reused schedule that follows the parent's depth
  (a parent d plans into the run tries the move closest to the donor's step d+1 first), (2) how
  moves of the same kind did so far in this run, (3) the parent's bottleneck from its feedback — DMA
  traffic well above the least any candidate needed favours data-reuse moves (tiles, hoisting), low
  utilisation of the compute roofline favours overlap moves (double buffering, hardware loops, fusion);
  (4) the target's own order (seed 0) or a seeded shuffle (other seeds) for ties;
- exhausted says so: when no parent has an untried move left, `exhausted` tells the search why it stops.

State is kept in memory in the order the search asks (slots() runs on the search's thread, one parent
after the other), so the same run proposes the same moves when it is resumed.
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass, field

from speedpatch.engine.proposer import Code, Plan, Slot
from speedpatch.model import Candidate, Kernel, source_hash
from speedpatch.store import Store
from speedpatch.targets.base import Move, Target

MAX_MOVES = 32  # applicable moves considered per parent, to bound the rewrite work
GUIDED_MODEL = "offline:schedule"  # the model name of a plan that follows a reused schedule's step
MIN_STEP_MATCH = 0.5  # token overlap a move needs with a donor's step to count as that step
DMA_EXCESS = 2.0  # DMA reads this many times above the least measured: the parent is data-movement bound
LOW_UTILIZATION = 0.5  # below this share of the compute roofline: the parent is overlap/latency bound

_NUMBER = re.compile(r"\d+")
_WORD = re.compile(r"[A-Za-z_]+|\d+")
# what a move's plan says it changes; wording of the targets' moves (targets/*/moves.py)
_REUSE_WORDS = ("tile", "hoist", "resident", "reuse", "retile", "block")
_OVERLAP_WORDS = ("overlap", "double", "loop_ws", "hardware loop", "affine_range", "pipeline", "fuse", "core")


def plan_name(plan: str) -> str:
    """A plan's kind: its first sentence with numbers blanked ("Change the tile sizes from # to #")."""
    first = plan.split(". ")[0]
    return _NUMBER.sub("#", first).strip().lower()


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def step_match(step: str, plan: str) -> float:
    """How closely a move's plan matches a donor schedule's step: the same kind of plan, then the share
    of words and numbers in common (a tile choice of the same size counts)."""
    a, b = _words(step), _words(plan)
    overlap = len(a & b) / len(a | b) if a and b else 0.0
    return overlap + (1.0 if plan_name(step) == plan_name(plan) else 0.0)


def _focus(plan: str) -> str:
    text = plan.lower()
    if any(w in text for w in _OVERLAP_WORDS):
        return "overlap"
    if any(w in text for w in _REUSE_WORDS):
        return "reuse"
    return ""


def _dma_read(feedback: dict) -> float | None:
    value = feedback.get("dma_bytes_read", feedback.get("dma_bytes"))
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):  # "4456448 read, 262144 written"
        m = re.match(r"\s*(\d+)\s*read", value)
        return float(m.group(1)) if m else None
    return None


@dataclass
class _Tried:
    """What this run proposed: resulting code hashes (run-wide) and plan texts per parent code."""

    sources: dict[str, str] = field(default_factory=dict)  # code hash -> plan that produced it
    by_parent: dict[str, set[str]] = field(default_factory=dict)  # parent code hash -> plans tried on it


class OfflineProposer:
    name = "offline"

    def __init__(self, target: Target, kernel: Kernel, store: Store | None = None, run_id: str = "",
                 seed: int = 0, per_parent: int = 8) -> None:
        self.target, self.kernel = target, kernel
        self.store, self.run_id, self.seed = store, run_id, seed
        self.per_parent = max(1, per_parent)
        self.step = ""  # the reused schedule's step guiding this iteration ("" = none)
        # the reused schedule's steps: a parent d plans deep into the run follows step d+1, the step the
        # donor took from the same depth (set by api.optimize/resume; empty = follow self.step)
        self.steps: list[str] = []
        self.exhausted = ""  # why nothing is left to propose, once that is so
        self._tried = _Tried()
        self._assigned: dict[str, list[tuple[Move, bool]]] = {}  # parent id -> this iteration's moves
        self._lock = threading.Lock()

    # ---- what the search calls -----------------------------------------------------------------------
    def begin_iteration(self, iteration: int, step: str) -> None:
        """Called by the search before it asks for this iteration's slots."""
        self.step = step

    def slots(self, parent: Candidate, plans: int) -> int:
        with self._lock:
            if not self._tried.sources:  # the baseline itself is never a move's goal
                self._tried.sources[parent.source_hash or source_hash(parent.source)] = ""
            chosen = self._choose(parent)
            self._assigned[parent.id] = chosen
            parent_hash = parent.source_hash or source_hash(parent.source)
            for move, _ in chosen:
                self._tried.sources[source_hash(move.source)] = move.plan
                self._tried.by_parent.setdefault(parent_hash, set()).add(move.plan)
            return len(chosen)

    def codes(self, codes: int) -> int:
        return 1  # a move has exactly one rewrite

    def plan(self, slot: Slot) -> Plan | None:
        with self._lock:
            moves = self._assigned.get(slot.parent.id, [])
        if slot.index >= len(moves):
            return None
        move, guided = moves[slot.index]
        return Plan(text=move.plan, model=GUIDED_MODEL if guided else "offline", source=move.source)

    def code(self, slot: Slot, plan: Plan, sample: int) -> Code:
        return Code(plan.source, plan.model)

    def fix(self, slot: Slot, plan: Plan, sample: int, child: Candidate) -> Code | None:
        return None  # a deterministic move cannot be repaired by asking again

    def exhausted_message(self, beam: int) -> str:
        tried = len(self._tried.sources) - 1
        return (f"offline moves exhausted: every applicable move of the {beam} beam member(s) was already "
                f"measured ({tried} distinct candidates); stopping instead of repeating them")

    # ---- choosing --------------------------------------------------------------------------------------
    def _all_moves(self, parent: Candidate) -> list[Move]:
        kernel = next((k for k in self.target.find_kernels(parent.source) if k.name == self.kernel.name),
                      self.kernel)
        moves = [m for m in self.target.offline_moves(parent.source, kernel) if m.source != parent.source]
        return moves[:MAX_MOVES]

    def _outcomes(self) -> tuple[dict[str, list[float]], set[str], float | None]:
        """Per plan kind the measured gains (parent / child), plans whose code failed, and the least DMA
        read by any correct candidate — all from this run's stored evaluations of what was proposed."""
        gains: dict[str, list[float]] = {}
        failed: set[str] = set()
        least_dma: float | None = None
        if self.store is None or not self.run_id:
            return gains, failed, least_dma
        by_id = {c.id: c for c in self.store.candidates(self.run_id)}
        for cand in by_id.values():
            ev = cand.evaluation
            if ev is None:
                continue
            if ev.correct and ev.status == "ok":
                dma = _dma_read(ev.feedback or {})
                if dma is not None:
                    least_dma = dma if least_dma is None else min(least_dma, dma)
            if not cand.plan or cand.source_hash not in self._tried.sources:
                continue
            if not ev.correct:
                failed.add(cand.plan)
                continue
            parent = by_id.get(cand.parent_id or "")
            if parent and parent.evaluation and parent.evaluation.value and ev.value:
                gains.setdefault(plan_name(cand.plan), []).append(parent.evaluation.value / ev.value)
        return gains, failed, least_dma

    def _bottleneck(self, parent: Candidate, least_dma: float | None) -> str:
        fb = parent.evaluation.feedback if parent.evaluation and parent.evaluation.feedback else {}
        dma = _dma_read(fb)
        if dma is not None and least_dma and dma >= DMA_EXCESS * least_dma:
            return "reuse"
        util = fb.get("utilization")
        if isinstance(util, (int, float)) and util < LOW_UTILIZATION:
            return "overlap"
        return ""

    def _step_for(self, parent: Candidate) -> str:
        if not self.steps:
            return self.step
        depth = 0
        if self.store is not None and self.run_id and parent.parent_id:
            depth = len([c for c in self.store.lineage(self.run_id, parent.id) if c.plan])
        return self.steps[depth] if depth < len(self.steps) else ""

    def _choose(self, parent: Candidate) -> list[tuple[Move, bool]]:
        parent_hash = parent.source_hash or source_hash(parent.source)
        done = self._tried.by_parent.get(parent_hash, set())
        gains, failed, least_dma = self._outcomes()
        fresh = [m for m in self._all_moves(parent)
                 if m.plan not in done and m.plan not in failed and source_hash(m.source) not in self._tried.sources]
        unique: dict[str, Move] = {}
        for m in fresh:  # two plans with the same code are one candidate
            unique.setdefault(source_hash(m.source), m)
        fresh = list(unique.values())
        if not fresh:
            return []
        bottleneck = self._bottleneck(parent, least_dma)
        ties = list(range(len(fresh)))
        if self.seed:
            random.Random(f"{self.seed}:{parent_hash}").shuffle(ties)
        step = self._step_for(parent)
        guided = max(range(len(fresh)), key=lambda i: step_match(step, fresh[i].plan)) if step else -1
        if guided >= 0 and step_match(step, fresh[guided].plan) < MIN_STEP_MATCH:
            guided = -1

        def rank(i: int) -> tuple[int, float, int, int]:
            kind = gains.get(plan_name(fresh[i].plan))
            # tried kinds that helped first (by their best gain), untried next, kinds that never helped last
            learned = -max(kind) if kind else 0.0
            if kind and max(kind) <= 1.0:
                learned = 1.0
            return (0 if i == guided else 1, learned, 0 if bottleneck and _focus(fresh[i].plan) == bottleneck else 1,
                    ties[i])

        order = sorted(range(len(fresh)), key=rank)[: self.per_parent]
        return [(fresh[i], i == guided) for i in order]
