"""The offline proposer: no repeats, target limits respected, exhaustion said and stopped."""

from __future__ import annotations

import re
from pathlib import Path

from speedpatch import api
from speedpatch.config import load_config
from speedpatch.store import Store
from speedpatch.targets.nki.moves import offline_moves
from support.toys import toy_config, toy_problem

ROOT = Path(__file__).resolve().parents[2]
WRONG_PLAN = "Drop the last element (wrong on purpose)."


def test_no_code_is_measured_twice_across_iterations(tmp_path):
    config = toy_config(tmp_path, offline=True, search={"iterations": 4, "plans": 1, "codes": 1})
    store = Store(tmp_path)
    record = api.optimize(toy_problem(tmp_path, config), config, store)
    hashes = [c.source_hash for c in store.candidates(record.run_id) if c.evaluation is not None]
    assert len(hashes) == len(set(hashes)) > 2


def test_exhausted_moves_end_the_run_with_a_message_instead_of_repeats(tmp_path):
    config = toy_config(tmp_path, offline=True, search={"iterations": 8})
    record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert record.status == "finished"
    assert record.message.startswith("offline moves exhausted")
    assert record.iteration < 8
    assert record.evaluations["total"] <= 1 + 4 + 3 * 3  # the baseline, then each parent's untried moves once


def test_a_plan_whose_code_failed_is_not_offered_to_other_parents(tmp_path):
    config = toy_config(tmp_path, offline=True, search={"iterations": 4, "plans": 2, "codes": 1})
    store = Store(tmp_path)
    record = api.optimize(toy_problem(tmp_path, config), config, store)
    wrong = [c for c in store.candidates(record.run_id) if c.plan == WRONG_PLAN]
    assert len(wrong) == 1 and not wrong[0].evaluation.correct


def test_nki_retile_moves_stay_within_the_partition_limit():
    path = ROOT / "examples" / "nki" / "matmul.py"
    text = path.read_text()
    problem = api.make_problem(str(path), text, None, load_config(None))
    raised = [(m.group(1), int(m.group(2))) for move in offline_moves(text, problem.kernel)
              if (m := re.search(r"raise (\w+) from \d+ to (\d+)", move.plan))]
    # TILE_M and TILE_K size a partition dimension (<= 128); the moving free size may grow to 512
    assert sorted(raised) == [("TILE_N", 256), ("TILE_N", 512)]
