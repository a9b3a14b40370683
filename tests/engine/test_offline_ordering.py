"""The offline proposer orders a parent's untried moves by the parent's feedback and by what was measured."""

from __future__ import annotations

from speedpatch.llm.offline import OfflineProposer
from speedpatch.model import OK, Candidate, Evaluation, Kernel, source_hash
from speedpatch.store import Store
from speedpatch.targets.base import Move
from support.toys import toy_config, toy_problem

SOURCE = "def kernel(x):\n    return x\n"
KERNEL = Kernel("kernel", "fake", 0, len(SOURCE), 0, 2, 0, SOURCE)
TILE = "Change the tile sizes from 4 to 8 so each loaded block is reused by more work."
OVERLAP = "Double-buffer the scratchpad so loads overlap computation."
OTHER = "Rename a variable."


class FakeTarget:
    """Offers three moves on any source: a data-reuse one, an overlap one, a neutral one."""

    name = "fake"

    def find_kernels(self, text: str, path: str = "") -> list[Kernel]:
        return [Kernel("kernel", "fake", 0, len(text), 0, 2, 0, text)]

    def offline_moves(self, source: str, kernel: Kernel) -> list[Move]:
        return [Move(p, source + f"# {p}\n") for p in (OTHER, TILE, OVERLAP)]


def parent(feedback: dict, source: str = SOURCE, cid: str = "base") -> Candidate:
    ev = Evaluation(status=OK, value=100.0, unit="cycles", feedback=feedback)
    return Candidate(cid, "r", None, 0, "", source, source_hash(source), evaluation=ev)


def first_plan(proposer: OfflineProposer, cand: Candidate) -> str:
    proposer.slots(cand, 1)
    return proposer._assigned[cand.id][0][0].plan


def test_low_utilization_tries_an_overlap_move_first():
    proposer = OfflineProposer(FakeTarget(), KERNEL, per_parent=1)
    assert first_plan(proposer, parent({"utilization": 0.2})) == OVERLAP


def test_without_a_bottleneck_the_targets_order_is_kept():
    proposer = OfflineProposer(FakeTarget(), KERNEL, per_parent=1)
    assert first_plan(proposer, parent({"utilization": 0.9})) == OTHER


def run_store(tmp_path) -> Store:
    """A store holding run "r" on the toy problem, for proposers to read what was measured."""
    store = Store(tmp_path)
    store.create_run("r", toy_problem(tmp_path, toy_config(tmp_path, offline=True)), 1, {})
    return store


def test_dma_well_above_the_least_measured_tries_a_reuse_move_first(tmp_path):
    store = run_store(tmp_path)
    lean = parent({"dma_bytes": "1000 read, 10 written", "utilization": 0.9}, SOURCE + "# lean\n", "lean")
    store.save_candidate(lean)
    heavy = parent({"dma_bytes": "8000 read, 10 written", "utilization": 0.9})
    proposer = OfflineProposer(FakeTarget(), KERNEL, store, "r", per_parent=1)
    assert first_plan(proposer, heavy) == TILE


def test_a_kind_of_move_that_sped_up_another_parent_is_tried_first(tmp_path):
    store = run_store(tmp_path)
    base = parent({"utilization": 0.9})
    store.save_candidate(base)
    proposer = OfflineProposer(FakeTarget(), KERNEL, store, "r", per_parent=3)
    proposer.slots(base, 3)
    for i, (move, _) in enumerate(proposer._assigned[base.id]):  # the rename helped, the others did not
        value = 50.0 if move.plan == OTHER else 120.0
        store.save_candidate(Candidate(f"c{i}", "r", base.id, 1, move.plan, move.source, source_hash(move.source),
                                       evaluation=Evaluation(status=OK, value=value, unit="cycles")))
    child = parent({"utilization": 0.2}, SOURCE + "# another parent\n", "other")
    # low utilization alone would put the overlap move first; what was measured comes before it
    assert first_plan(proposer, child) == OTHER


def test_a_reused_schedule_is_followed_by_lineage_depth(tmp_path):
    store = run_store(tmp_path)
    base = parent({"utilization": 0.9})
    store.save_candidate(base)
    child_source = SOURCE + "# one step in\n"
    child = Candidate("c1", "r", base.id, 1, "An earlier step.", child_source, source_hash(child_source),
                      evaluation=Evaluation(status=OK, value=90.0, unit="cycles"))
    store.save_candidate(child)
    proposer = OfflineProposer(FakeTarget(), KERNEL, store, "r", per_parent=1)
    proposer.steps = [OVERLAP, TILE]  # the donor first double-buffered, then retiled
    assert first_plan(proposer, base) == OVERLAP  # depth 0 follows step 1
    assert first_plan(proposer, child) == TILE  # depth 1 follows step 2
    assert proposer._assigned[child.id][0][1]  # and is marked as guided
