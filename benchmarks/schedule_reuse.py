"""Speedup at a fixed sample budget with and without schedule reuse (the paper reports up to +24%).

Needs an LLM: set SPEEDPATCH_BASE_URL and SPEEDPATCH_MODELS (comma-separated) and the API key in
SPEEDPATCH_API_KEY. For each (donor, recipient) pair of Gemmini GEMMs, the donor is optimized first;
the recipient is then optimized twice with the same budget, in fresh workspaces that both hold the
donor's run: once with reuse, once without. Prints a table; asserts nothing.

    python benchmarks/schedule_reuse.py [--iterations 4] [--plans 2] [--codes 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from speedpatch import api
from speedpatch.config import load_config
from speedpatch.store import Store

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "gemmini"
PAIRS = [("matmul_512x512x512.c", "matmul_128.c"), ("matmul_12544x64x256.c", "matmul_3136x128x512.c")]


def optimize(path: Path, workspace: Path, args: argparse.Namespace, reuse: bool) -> float | None:
    overrides = {
        "llm": {"base_url": os.environ["SPEEDPATCH_BASE_URL"], "models": os.environ["SPEEDPATCH_MODELS"].split(",")},
        "search": {"iterations": args.iterations, "plans": args.plans, "codes": args.codes, "beam": args.beam,
                   "reuse_schedules": reuse},
    }
    config = load_config(workspace, overrides)
    text = path.read_text()
    problem = api.make_problem(str(path), text, None, config)
    return api.optimize(problem, config, Store(workspace)).speedup


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--plans", type=int, default=2)
    parser.add_argument("--codes", type=int, default=1)
    parser.add_argument("--beam", type=int, default=2)
    args = parser.parse_args()
    if not os.environ.get("SPEEDPATCH_BASE_URL") or not os.environ.get("SPEEDPATCH_MODELS"):
        print("schedule reuse needs an LLM: set SPEEDPATCH_BASE_URL and SPEEDPATCH_MODELS (nothing measured)")
        return 0
    print(f"{'donor':28} {'recipient':28} {'donor x':>8} {'no reuse x':>10} {'reuse x':>8}")
    for donor, recipient in PAIRS:
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp) / "donor"
            base.mkdir()
            donor_speedup = optimize(EXAMPLES / donor, base, args, reuse=False)
            results = {}
            for reuse in (False, True):
                ws = Path(tmp) / f"reuse-{reuse}"
                shutil.copytree(base, ws)
                results[reuse] = optimize(EXAMPLES / recipient, ws, args, reuse=reuse)
        fmt = lambda s: f"{s:.2f}" if s else "-"  # noqa: E731
        print(f"{donor:28} {recipient:28} {fmt(donor_speedup):>8} {fmt(results[False]):>10} {fmt(results[True]):>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
