"""The NKI matrix-multiplication tutorial's four versions on the emulator's cost model, next to the
latencies AWS published for them on trn1 (bf16 [4096, 8192] @ [8192, 8192]).

    python benchmarks/nki_matmul_tutorial.py                 # the published shape (several minutes)
    python benchmarks/nki_matmul_tutorial.py --shape 8192 2048 2048 --check

Prints each version's modeled latency, its speedup over the tiled version, the published figures, how
far each modeled ratio is from the published one, and the emulator's wall and CPU time per evaluation
(one core: BLAS is limited to one thread; evaluations per minute are per minute of CPU time). --check exits 1 if a ratio is off by more than --tolerance (25%).
The kernels are tests/nki/kernels/matmul_tutorial.py. Wall-clock figures are informative only.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, as the speed target is stated
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

KERNELS_FILE = Path(__file__).resolve().parents[1] / "tests" / "nki" / "kernels" / "matmul_tutorial.py"


def load_kernels() -> object:
    spec = importlib.util.spec_from_file_location("nki_matmul_tutorial_kernels", KERNELS_FILE)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def run(k: int, m: int, n: int, names: list[str], check_values: bool) -> list[dict[str, float | str]]:
    from speedpatch.targets.nki.emulator.jit import last_report

    tutorial = load_kernels()
    rng = np.random.default_rng(0)
    lhs_t = rng.standard_normal((k, m), dtype=np.float32).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((k, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
    expected = None
    if check_values:
        expected = lhs_t.astype(np.float32).T @ rhs.astype(np.float32)
    rows = []
    for name in names:
        start, cpu_start = time.perf_counter(), time.process_time()
        out = tutorial.KERNELS[name](lhs_t, rhs)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        report = last_report()
        assert report is not None
        row: dict[str, float | str] = {"version": name, "ms": report["latency_us"] / 1000.0, "wall_s": wall,
                                       "cpu_s": cpu,
                                       "bottleneck": report["bottleneck"], "instructions": report["instructions"]}
        if expected is not None:
            err = np.max(np.abs(out.astype(np.float32) - expected)) / np.max(np.abs(expected))
            row["max_rel_error"] = float(err)
        rows.append(row)
        print(f"{name}: {row['ms']:.3f} ms modeled, {wall:.1f} s wall, {cpu:.1f} s CPU", file=sys.stderr, flush=True)
    return rows


def table(rows: list[dict[str, float | str]], published: dict[str, float], tolerance: float) -> tuple[str, bool]:
    base = next((r for r in rows if r["version"] == "tiled"), None)
    lines = [f"{'version':<11} {'modeled ms':>10} {'ratio':>6} {'published ms':>12} {'ratio':>6} {'off':>6}  "
             f"{'wall s':>7} {'cpu s':>7} {'evals/min':>9}  bottleneck"]
    ok = True
    for r in rows:
        name = str(r["version"])
        ratio = float(base["ms"]) / float(r["ms"]) if base else float("nan")
        pub_ratio = published["tiled"] / published[name]
        off = ratio / pub_ratio - 1.0
        if base and abs(off) > tolerance:
            ok = False
        # evaluations per minute of one core: CPU time (the wall time of a shared machine includes waiting)
        per_min = 60.0 / float(r["cpu_s"]) if float(r["cpu_s"]) > 0 else float("inf")
        lines.append(f"{name:<11} {float(r['ms']):>10.3f} {ratio:>6.2f} {published[name]:>12.2f} {pub_ratio:>6.2f} "
                     f"{off:>+6.1%}  {float(r['wall_s']):>7.1f} {float(r['cpu_s']):>7.1f} {per_min:>9.2f}  "
                     f"{r['bottleneck']}")
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", nargs=3, type=int, metavar=("K", "M", "N"), default=(8192, 4096, 8192),
                    help="lhsT is (K, M), rhs is (K, N); default: the tutorial's benchmark shape")
    ap.add_argument("--versions", nargs="*", default=["tiled", "hoisted", "block_free", "optimized"])
    ap.add_argument("--tolerance", type=float, default=0.25)
    ap.add_argument("--check", action="store_true", help="exit 1 if a ratio is off by more than the tolerance")
    ap.add_argument("--values", action="store_true", help="also compare the results with NumPy")
    args = ap.parse_args(argv)
    k, m, n = args.shape
    rows = run(k, m, n, args.versions, args.values)
    text, ok = table(rows, load_kernels().PUBLISHED_MS, args.tolerance)  # type: ignore[attr-defined]
    print(f"NKI matmul tutorial, bf16, lhsT ({k}, {m}) x rhs ({k}, {n}); published: trn1 at (8192, 4096) x "
          f"(8192, 8192)")
    print(text)
    for r in rows:
        if "max_rel_error" in r:
            print(f"{r['version']}: max relative error vs NumPy {float(r['max_rel_error']):.2e}")
    print("(modeled latency: nki-emulator cost model, deterministic; wall time: this machine, informative only)")
    if args.check and not ok:
        print(f"a modeled ratio is more than {args.tolerance:.0%} from the published one", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
