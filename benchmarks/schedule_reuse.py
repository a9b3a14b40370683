"""Schedule reuse at a fixed budget: the recipient's speedup with vs. without the donor's schedule.

The paper reports up to +24% from reusing optimization schedules across similar operations at a fixed
sample budget. This measures our implementation of it (engine/schedule.py) honestly:

- explicit donor -> recipient pairs of related shapes (the paper's GEMMs, examples/gemmini/paper);
- each donor is optimized first (reuse off); a pair whose donor found no speedup is reported and skipped;
- each recipient is optimized twice per seed, in copies of the donor's workspace, with the same hard
  budget (max evaluations; with an LLM also max LLM calls): once following the donor's run (--reuse RUN),
  once with reuse off. Seeds pair the arms (same seed, same everything else);
- every reuse run is checked for guidance having been applied: offline, plans stored with the model
  "offline:schedule"; with an LLM, plan prompts stored with the schedule's step in them;
- the table gives per pair and overall the mean gain (reuse speedup / no-reuse speedup - 1) with a 95%
  confidence interval (Student t over the paired seeds).

Offline (default) the proposer's seed only breaks ties between equally ranked moves, so seeds vary what a
small budget reaches. With an LLM: set SPEEDPATCH_BASE_URL, SPEEDPATCH_MODELS (comma-separated) and the
key in SPEEDPATCH_API_KEY, and pass --llm.

    python benchmarks/schedule_reuse.py [--seeds 5] [--budget 12] [--iterations 6] [--llm]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from speedpatch import api
from speedpatch.config import load_config
from speedpatch.llm.offline import GUIDED_MODEL
from speedpatch.store import Store

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "gemmini" / "paper"
# related shapes: the same operation (C = A B from unoptimized explicit code), other sizes
PAIRS = [
    ("matmul_3136x128x512_explicit.c", "matmul_3136x512x128_explicit.c"),
    ("matmul_12544x64x256_explicit.c", "matmul_12544x256x64_explicit.c"),
    ("matmul_512x512x512_explicit.c", "matmul_784x1024x256_explicit.c"),
]
GUIDED_PROMPT = "The step of that schedule to reuse now was"
# two-sided 95% Student t quantiles by degrees of freedom (normal beyond 30)
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042}


@dataclass
class Settings:
    budget: int = 12  # evaluations per recipient run, baseline included
    iterations: int = 6
    beam: int = 2
    plans: int = 2
    codes: int = 1
    donor_budget: int = 0  # 0 = 3x the recipient's
    donor_iterations: int = 0  # 0 = iterations; a donor is a full run, so it may search longer
    llm: dict[str, Any] | None = None  # {"base_url": ..., "models": [...]} or None for offline
    llm_calls: int = 0  # max LLM calls per recipient run (LLM only; 0 = budget * 2)
    workers: int = 2


@dataclass
class PairResult:
    donor: str
    recipient: str
    donor_speedup: float | None
    donor_steps: int = 0
    skipped: str = ""
    without: list[float] = field(default_factory=list)  # per seed
    with_reuse: list[float] = field(default_factory=list)
    guided: list[int] = field(default_factory=list)  # guided plans per reuse run
    evaluations: list[tuple[int, int]] = field(default_factory=list)  # (without, with) per seed

    @property
    def gains(self) -> list[float]:
        return [w / o - 1.0 for o, w in zip(self.without, self.with_reuse, strict=True)]


def t95(df: int) -> float:
    if df <= 0:
        return float("nan")
    known = [d for d in T95 if d <= df]
    return T95[max(known)] if df <= 30 else 1.960


def mean_ci(values: list[float]) -> tuple[float, float]:
    """The mean and the half-width of its 95% confidence interval (nan with fewer than 2 values)."""
    if not values:
        return float("nan"), float("nan")
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, float("nan")
    return mean, t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))


def _config(workspace: Path, s: Settings, seed: int, reuse: str, budget: int, iterations: int = 0) -> Any:
    overrides: dict[str, Any] = {
        "search": {"iterations": iterations or s.iterations, "beam": s.beam, "plans": s.plans, "codes": s.codes, "seed": seed,
                   "reuse": reuse, "workers": s.workers},
        "budget": {"max_evaluations": budget},
    }
    if s.llm:
        overrides["llm"] = s.llm
        overrides["budget"]["max_llm_calls"] = s.llm_calls or 2 * budget
    else:
        overrides["offline"] = True
    return load_config(workspace, overrides)


def optimize(path: Path, workspace: Path, s: Settings, seed: int, reuse: str, budget: int,
             iterations: int = 0) -> Any:
    config = _config(workspace, s, seed, reuse, budget, iterations)
    problem = api.make_problem(str(path), path.read_text(), None, config)
    return api.optimize(problem, config, Store(workspace))


def guided_plans(workspace: Path, run_id: str, llm: bool) -> int:
    """How many plans of the run followed the schedule, from what the run stored."""
    store = Store(workspace)
    if not llm:
        return sum(1 for p in store.plans(run_id) if p["model"] == GUIDED_MODEL)
    with sqlite3.connect(store.path) as db:
        row = db.execute("SELECT COUNT(*) FROM llm_calls WHERE run_id=? AND phase='plan' AND prompt LIKE ?",
                         (run_id, f"%{GUIDED_PROMPT}%")).fetchone()
    return int(row[0])


def run_pair(donor: Path, recipient: Path, seeds: list[int], s: Settings, tmp: Path,
             log: Any = None) -> PairResult:
    base = tmp / f"donor-{donor.stem}"
    base.mkdir(parents=True)
    donor_run = optimize(donor, base, s, seeds[0], "off", s.donor_budget or 3 * s.budget, s.donor_iterations)
    steps = len(Store(base).lineage(donor_run.run_id, donor_run.best.id)) - 1 if donor_run.best else 0
    result = PairResult(donor.name, recipient.name, donor_run.speedup, steps)
    if log:
        log(f"  donor {donor.name}: {donor_run.speedup or 0:.3f}x in {donor_run.evaluations.get('total', 0)} "
            f"evaluations, {steps} steps")
    if not donor_run.speedup or donor_run.speedup <= 1.0:
        result.skipped = f"donor found no speedup ({donor_run.status}: {donor_run.message})"
        return result
    for seed in seeds:
        runs = {}
        for arm, reuse in (("without", "off"), ("with", donor_run.run_id)):
            ws = tmp / f"{recipient.stem}-{seed}-{arm}"
            shutil.copytree(base, ws)
            runs[arm] = (ws, optimize(recipient, ws, s, seed, reuse, s.budget))
        (_, off), (ws, on) = runs["without"], runs["with"]
        result.without.append(off.speedup or 1.0)
        result.with_reuse.append(on.speedup or 1.0)
        result.guided.append(guided_plans(ws, on.run_id, bool(s.llm)))
        result.evaluations.append((off.evaluations.get("total", 0), on.evaluations.get("total", 0)))
        if log:
            log(f"  {recipient.name} seed {seed}: without {result.without[-1]:.3f}x, with {result.with_reuse[-1]:.3f}x, "
                f"{result.guided[-1]} guided plans, evaluations {result.evaluations[-1]}")
    return result


def table(results: list[PairResult], s: Settings) -> str:
    lines = [f"budget: {s.budget} evaluations per recipient run (baseline included), T={s.iterations}, "
             f"B={s.beam}, N={s.plans}, K={s.codes}, {'LLM ' + ','.join(s.llm['models']) if s.llm else 'offline'}",
             f"{'donor -> recipient':64} {'donor':>7} {'steps':>5} {'no reuse':>9} {'reuse':>7} {'gain':>8} "
             f"{'95% CI':>17} {'guided':>6}"]
    every: list[float] = []
    for r in results:
        name = f"{r.donor} -> {r.recipient}"
        if r.skipped:
            lines.append(f"{name:64} skipped: {r.skipped}")
            continue
        mean, half = mean_ci(r.gains)
        every += r.gains
        lines.append(f"{name:64} {r.donor_speedup:>6.2f}x {r.donor_steps:>5} {statistics.fmean(r.without):>8.3f}x "
                     f"{statistics.fmean(r.with_reuse):>6.3f}x {mean:>+7.1%} [{mean - half:+7.1%},{mean + half:+7.1%}] "
                     f"{min(r.guided) if r.guided else 0:>6}")
    mean, half = mean_ci(every)
    lines.append(f"{'all pairs, paired seeds (n=' + str(len(every)) + ')':64} {'':>7} {'':>5} {'':>9} {'':>7} "
                 f"{mean:>+7.1%} [{mean - half:+7.1%},{mean + half:+7.1%}]")
    lines.append("gain = reuse speedup / no-reuse speedup - 1, per seed; guided = fewest plans that followed the "
                 "donor's schedule in any reuse run (0 would mean the guidance was not applied)")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=12, help="max evaluations per recipient run")
    parser.add_argument("--donor-budget", type=int, default=0, help="max evaluations of a donor run (0 = 3x --budget)")
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--donor-iterations", type=int, default=0, help="iterations of a donor run (0 = --iterations)")
    parser.add_argument("--beam", type=int, default=2)
    parser.add_argument("--plans", type=int, default=2)
    parser.add_argument("--codes", type=int, default=1)
    parser.add_argument("--pairs", type=int, default=len(PAIRS), help="use the first this-many pairs")
    parser.add_argument("--pair", type=int, action="append", help="use pair number N (0-based; repeatable)")
    parser.add_argument("--llm", action="store_true", help="use the LLM named by SPEEDPATCH_BASE_URL/MODELS")
    args = parser.parse_args()
    llm = None
    if args.llm:
        if not os.environ.get("SPEEDPATCH_BASE_URL") or not os.environ.get("SPEEDPATCH_MODELS"):
            print("--llm needs SPEEDPATCH_BASE_URL and SPEEDPATCH_MODELS (nothing measured)")
            return 2
        llm = {"base_url": os.environ["SPEEDPATCH_BASE_URL"], "models": os.environ["SPEEDPATCH_MODELS"].split(",")}
    s = Settings(budget=args.budget, iterations=args.iterations, beam=args.beam, plans=args.plans, codes=args.codes,
                 donor_budget=args.donor_budget, donor_iterations=args.donor_iterations, llm=llm)
    seeds = list(range(1, args.seeds + 1))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        chosen = [PAIRS[i] for i in args.pair] if args.pair else PAIRS[: args.pairs]
        for donor, recipient in chosen:
            print(f"{donor} -> {recipient}", flush=True)
            results.append(run_pair(EXAMPLES / donor, EXAMPLES / recipient, seeds, s, Path(tmp),
                                    log=lambda line: print(line, flush=True)))
    print(table(results, s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
