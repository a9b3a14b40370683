"""What the sandbox costs: evaluations per minute of the 512x512x512 Gemmini GEMM on gemmini-native, with
bubblewrap and without it (SPEEDPATCH_BWRAP=none: rlimits and a scrubbed environment only). The two modes
alternate (A/B/A/B) so that drift in a shared machine's load does not look like overhead; each evaluation
is the real thing (sandboxed compiles, objcopy, link, nm and run of the candidate, the model archive
cached). Also prints the bare cost of starting one process through run_process in each mode (an
evaluation starts about eight). The goal: under 10% fewer evaluations.

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


def one_evaluation(path: Path, workspace: Path) -> float:
    """Wall seconds of one evaluation (the model archive already cached)."""
    config = load_config(workspace, {"search": {"eval_timeout": 600.0}})
    problem = api.make_problem(str(path), path.read_text(), None, config, "gemmini-native")
    start = time.monotonic()
    ev = api.evaluate(problem, None, config)
    seconds = time.monotonic() - start
    if not ev.correct:
        sys.exit(f"the example did not evaluate correctly: {ev.status}: {ev.message}\n{ev.log[-2000:]}")
    return seconds


def process_starts(n: int = 30) -> dict[str, list[float]]:
    """Seconds to run /bin/true through run_process in each mode, the modes interleaved."""
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(n):
            for mode, value in MODES.items():
                set_mode(value)
                start = time.monotonic()
                sandbox.run_process(["/bin/true"], Path(folder), 10)
                times[mode].append(time.monotonic() - start)
    return times


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
    starts = process_starts()
    with tempfile.TemporaryDirectory() as workspace:
        set_mode(None)
        one_evaluation(path, Path(workspace))  # warm-up: builds and caches the model archive
        for r in range(args.rounds):
            order = list(MODES) if r % 2 == 0 else list(reversed(MODES))
            for mode in order:
                set_mode(MODES[mode])
                seconds[mode].append(one_evaluation(path, Path(workspace)))
    set_mode(None)
    print(f"{args.example} on gemmini-native, {args.rounds} evaluations per mode, alternated")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (a shared machine's load inflates "
          "every process start; the minimum is the least disturbed figure)")
    print(f"{'mode':<12} {'median s':>9} {'min s':>7} {'evals/min (median, min)':>24} {'process start ms (median, min)':>31}")
    rate: dict[str, tuple[float, float]] = {}
    for mode, values in seconds.items():
        rate[mode] = (60.0 / statistics.median(values), 60.0 / min(values))
        ms = [t * 1000 for t in starts[mode]]
        print(f"{mode:<12} {statistics.median(values):>9.3f} {min(values):>7.3f} {rate[mode][0]:>11.2f} "
              f"{rate[mode][1]:>12.2f} {statistics.median(ms):>15.2f} {min(ms):>15.2f}")
    for i, what in enumerate(("median", "minimum")):
        overhead = (rate["no sandbox"][i] - rate["sandbox"][i]) / rate["no sandbox"][i] * 100.0
        print(f"sandbox overhead ({what}s): {overhead:+.1f}% evaluations per minute (goal: under 10%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
