"""Evaluations per minute for the same offline search with the local pool and with Ray on one and two worker
nodes, and the per-task overhead of the Ray executor (goal: under 50 ms per evaluation).

Runs a real local Ray cluster inside a private network namespace (it re-executes itself under
`unshare -n`), so nothing binds anything but loopback. Usage:

    python benchmarks/ray_executor.py [--example examples/gemmini/matmul_512x512x512.c] [-T 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PORT = 6397


def ray(*args: str) -> None:
    proc = subprocess.run([str(BIN / "ray"), *args], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"ray {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


def search(example: Path, iterations: int, toml: str) -> tuple[float, int]:
    """Seconds and distinct measured evaluations of one offline search."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copy(example, folder / example.name)
        (folder / "speedpatch.toml").write_text(toml)
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "speedpatch.cli.main", "--workspace", str(folder), "optimize",
                               example.name, "--offline", "-T", str(iterations), "--seed", "1", "--json"],
                              cwd=folder, capture_output=True, text=True, timeout=3600)
        seconds = time.monotonic() - start
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-3000:])
        return seconds, int(json.loads(proc.stdout)["evaluations"]["total"])


def overhead(tasks: int) -> tuple[float, float]:
    """Milliseconds per task for a candidate the trust boundary rejects at once (no build, no run):
    what the executor itself costs, locally and on Ray."""
    from speedpatch import api
    from speedpatch.config import load_config
    from speedpatch.engine.evaluation import EvalTask
    from speedpatch.engine.executors import LocalExecutor, RayExecutor

    example = REPO / "examples" / "gemmini" / "matmul_128.c"
    config = load_config(None)
    problem = api.make_problem(str(example), example.read_text(), None, config)
    bad = EvalTask(problem=problem, source=problem.source.replace("int main", "int main2"))
    results = []
    for executor in (LocalExecutor(2), RayExecutor(f"127.0.0.1:{PORT}", "bench", {"bench_node": 0.01})):
        executor.submit(bad).result()  # warm: imports, worker processes
        start = time.monotonic()
        for future in [executor.submit(bad) for _ in range(tasks)]:
            future.result()
        results.append((time.monotonic() - start) * 1000 / tasks)
        executor.shutdown()
    return results[0], results[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", default=str(REPO / "examples" / "gemmini" / "matmul_512x512x512.c"))
    parser.add_argument("-T", "--iterations", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=200)
    args = parser.parse_args()
    if os.environ.get("SPEEDPATCH_BENCH_NETNS") != "1":  # re-run inside a private network namespace
        env = dict(os.environ, SPEEDPATCH_BENCH_NETNS="1", RAY_USAGE_STATS_ENABLED="0")
        wrap = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
        script = f"ip link set lo up && exec {sys.executable} {' '.join(map(str, sys.argv))}"
        raise SystemExit(subprocess.run([*wrap, "bash", "-c", script], env=env).returncode)
    example = Path(args.example)
    ray_toml = (f'[search]\nexecutor = "ray"\n[ray]\naddress = "127.0.0.1:{PORT}"\n'
                f'[ray.resources]\n"gemmini-native" = {{bench_node = 1}}\n')
    rows = []
    seconds, evals = search(example, args.iterations, "[search]\nworkers = 2\n")
    rows.append(("local pool (2 workers)", seconds, evals))
    try:
        # a temp dir of its own: another cluster on this machine (another namespace) must not share it
        ray("start", "--head", "--node-ip-address=127.0.0.1", f"--port={PORT}", "--num-cpus=1",
            "--include-dashboard=false", "--disable-usage-stats", "--object-store-memory=100000000",
            f"--temp-dir={tempfile.mkdtemp(prefix='ray-bench-')}")
        for nodes in (1, 2):
            ray("start", f"--address=127.0.0.1:{PORT}", "--node-ip-address=127.0.0.1", "--num-cpus=2",
                '--resources={"bench_node": 2}', "--object-store-memory=100000000")
            seconds, evals = search(example, args.iterations, ray_toml)
            rows.append((f"Ray, {nodes} worker node{'s' if nodes > 1 else ''} (2 slots each)", seconds, evals))
        local_ms, ray_ms = overhead(args.tasks)
    finally:
        ray("stop", "--force")
    print(f"{example.name}, offline search, -T {args.iterations}")
    print(f"{'executor':40} {'seconds':>8} {'evaluations':>12} {'per minute':>11}")
    for name, seconds, evals in rows:
        print(f"{name:40} {seconds:8.1f} {evals:12d} {evals * 60 / seconds:11.1f}")
    print(f"per-task overhead ({args.tasks} tasks rejected at the trust boundary): local {local_ms:.1f} ms, "
          f"Ray {ray_ms:.1f} ms (goal: under 50 ms)")


if __name__ == "__main__":
    main()
