"""What the NKI kernel isolation costs: evaluations per minute of examples/nki/matmul.py (3 input sets) in
the emulator, before and after the kernel got its own process (docs/threat-model.md, "NKI").

- "one process": runner.py as it was before the isolation (commit aca94bb, read with `git show`): the
  kernel module, the harness and the emulator in one interpreter.
- "isolated, bwrap": today's runner, the kernel in its own bubblewrap (the default).
- "isolated, process": today's runner, the kernel in a plain separate process (where bwrap cannot nest).

The modes alternate (A/B/C, A/B/C...) so that drift in a shared machine's load does not look like
overhead. Each run is the runner itself (no outer sandbox: benchmarks/sandbox_cost.py measures that).
Wall-clock figures vary with the machine's load; nothing here is asserted.

    python benchmarks/nki_isolation_cost.py [--rounds 5] [--example matmul.py]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "targets" / "nki" / "runner.py"
PKGS = REPO / "targets" / "nki" / "emulator" / "pkgs"
BEFORE = "aca94bb"  # the last commit with the kernel in the runner's own process


def old_runner(folder: Path) -> Path | None:
    out = subprocess.run(["git", "-C", str(REPO), "show", f"{BEFORE}:targets/nki/runner.py"], capture_output=True,
                         text=True)
    if out.returncode != 0:
        return None
    path = folder / "runner_one_process.py"
    path.write_text(out.stdout)
    return path


def one(argv: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the runner and everything it started) of one evaluation."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = os.times().elapsed
    proc = subprocess.run(argv, cwd=cwd, input="nonce\n", capture_output=True, text=True, env=env)
    wall = os.times().elapsed - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if '"status": "ok"' not in proc.stdout:
        sys.exit(f"{argv[1]} did not evaluate the example correctly:\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--example", default="matmul.py")
    opts = ap.parse_args()
    source = (REPO / "examples" / "nki" / opts.example).read_text()
    kernel = Path(opts.example).stem
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "candidate.py").write_text(source)
        common = ["candidate.py", "--kernel", kernel, "--mode", "emulate", "--pkgs", str(PKGS), "--deadline", "300"]
        modes = {
            "isolated, bwrap": [sys.executable, str(RUNNER), *common, "--isolation", "bwrap"],
            "isolated, process": [sys.executable, str(RUNNER), *common, "--isolation", "process"],
        }
        old = old_runner(folder)
        if old is not None:
            modes = {"one process (before)": [sys.executable, str(old), *common], **modes}
        else:
            print(f"(git show {BEFORE} failed: no 'before' figure)")
        walls: dict[str, list[float]] = {m: [] for m in modes}
        cpus: dict[str, list[float]] = {m: [] for m in modes}
        for _ in range(opts.rounds):
            for mode, argv in modes.items():
                wall, cpu = one(argv, folder)
                walls[mode].append(wall)
                cpus[mode].append(cpu)
    print(f"{opts.example}, {opts.rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    for mode in modes:
        wall, cpu = statistics.median(walls[mode]), statistics.median(cpus[mode])
        print(f"  {mode:22s} {60 / wall:6.1f} evaluations/min  (median {wall:.2f} s wall, {cpu:.2f} s CPU)")


if __name__ == "__main__":
    main()
