"""What the sandbox costs: evaluations per minute of the 512x512x512 Gemmini GEMM on gemmini-native, with
bubblewrap and without it (SPEEDPATCH_BWRAP=none: rlimits and a scrubbed environment only). The two modes
alternate (A/B/A/B) so that drift in a shared machine's load does not look like overhead; each evaluation
is the real thing (sandboxed compile, link, nm and run of the candidate, the model archive cached).
Also prints the bare cost of starting one sandboxed process. The goal: under 10% fewer evaluations.

    python benchmarks/sandbox_cost.py [--rounds 4] [--example matmul_512x512x512.c]

Wall-clock figures: they vary with the machine's load, so nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from speedpatch import api
from speedpatch.config import load_config
from speedpatch.targets import sandbox

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "gemmini"
MODES = {"sandbox": None, "no sandbox": "none"}  # value of SPEEDPATCH_BWRAP (None: find bwrap)


def set_mode(value: str | None) -> sandbox.Status:
    if value is None:
        os.environ.pop(sandbox.BWRAP_ENV, None)
    else:
        os.environ[sandbox.BWRAP_ENV] = value
    return sandbox.status()


def one_evaluation(path: Path, workspace: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of all child processes) of one evaluation."""
    config = load_config(workspace, {"search": {"eval_timeout": 600.0}})
    problem = api.make_problem(str(path), path.read_text(), None, config, "gemmini-native")
    start, before = time.monotonic(), os.times()
    ev = api.evaluate(problem, None, config)
    after = os.times()
    seconds = time.monotonic() - start
    if not ev.correct:
        sys.exit(f"the example did not evaluate correctly: {ev.status}: {ev.message}\n{ev.log[-2000:]}")
    return seconds, (after.children_user + after.children_system) - (before.children_user + before.children_system)


def process_start(n: int = 40) -> float:
    """Median seconds to run /bin/true through run_process."""
    with tempfile.TemporaryDirectory() as folder:
        times = []
        for _ in range(n):
            start = time.monotonic()
            sandbox.run_process(["/bin/true"], Path(folder), 10)
            times.append(time.monotonic() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="evaluations per mode")
    parser.add_argument("--example", default="matmul_512x512x512.c")
    args = parser.parse_args()
    if not set_mode(None).active:
        print(f"cannot compare: {sandbox.status().describe()}")
        return 1
    path = EXAMPLES / args.example
    seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    starts = {}
    for mode, value in MODES.items():
        set_mode(value)
        starts[mode] = process_start()
    with tempfile.TemporaryDirectory() as workspace:
        set_mode(None)
        one_evaluation(path, Path(workspace))  # warm-up: builds and caches the model archive
        for r in range(args.rounds):
            order = list(MODES) if r % 2 == 0 else list(reversed(MODES))
            for mode in order:
                set_mode(MODES[mode])
                wall, used = one_evaluation(path, Path(workspace))
                seconds[mode].append(wall)
                cpu[mode].append(used)
    set_mode(None)
    print(f"{args.example} on gemmini-native, {args.rounds} evaluations per mode, alternated")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'mode':<12} {'median s/eval':>14} {'evals/min':>10} {'CPU s/eval':>11} {'process start ms':>17}")
    rate = {}
    for mode, values in seconds.items():
        median = statistics.median(values)
        rate[mode] = 60.0 / median
        print(f"{mode:<12} {median:>14.3f} {rate[mode]:>10.2f} {statistics.median(cpu[mode]):>11.3f} "
              f"{starts[mode] * 1000:>17.2f}")
    overhead = (rate["no sandbox"] - rate["sandbox"]) / rate["no sandbox"] * 100.0
    print(f"sandbox overhead: {overhead:+.1f}% evaluations per minute (goal: under 10%)")
    print(f"spread: sandbox {min(seconds['sandbox']):.3f}-{max(seconds['sandbox']):.3f} s, no sandbox "
          f"{min(seconds['no sandbox']):.3f}-{max(seconds['no sandbox']):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
