"""benchmarks/schedule_reuse.py, CI-sized: 2 donor -> recipient pairs, 2 paired seeds, a tiny budget."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from support.toys import write_toy

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "schedule_reuse.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("schedule_reuse_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file is executed
    spec.loader.exec_module(module)
    return module


def sized(folder: Path, name: str, n: int) -> Path:
    """The toy sum on inputs of size n (a related problem for every n)."""
    folder.mkdir(exist_ok=True)
    text = write_toy(folder).read_text().replace("range(30)", f"range({n})")
    (folder / "sum.toy").unlink()
    path = folder / name
    path.write_text(text)
    return path


def test_two_pairs_two_seeds_fixed_budget_guidance_checked_and_gain_with_interval(tmp_path):
    bench = load_bench()
    problems = tmp_path / "problems"
    pairs = [(sized(problems, "a.toy", 30), sized(problems, "b.toy", 60)),
             (sized(problems, "c.toy", 40), sized(problems, "d.toy", 90))]
    settings = bench.Settings(budget=3, iterations=2, beam=1, plans=1, codes=1, donor_budget=6)
    results = [bench.run_pair(d, r, [1, 2], settings, tmp_path / f"work{i}") for i, (d, r) in enumerate(pairs)]
    for r in results:
        assert not r.skipped and r.donor_speedup > 1  # donors that really found a speedup
        assert all(g >= 1 for g in r.guided)  # every reuse run followed the donor's schedule
        assert all(off <= 3 and on <= 3 for off, on in r.evaluations)  # the hard budget held in both arms
        assert len(r.gains) == 2
    text = bench.table(results, settings)
    assert "all pairs, paired seeds (n=4)" in text and "95% CI" in text
    mean, half = bench.mean_ci([g for r in results for g in r.gains])
    assert mean > 0  # the toy donor's best move applies to the recipient: following it first pays at budget 3


def test_the_confidence_interval_is_student_t_over_paired_seeds():
    bench = load_bench()
    mean, half = bench.mean_ci([0.1, 0.2, 0.3])
    assert abs(mean - 0.2) < 1e-12
    assert abs(half - 4.303 * 0.1 / 3 ** 0.5) < 1e-9
