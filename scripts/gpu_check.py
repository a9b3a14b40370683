#!/usr/bin/env python3
"""End-to-end CUDA check for a machine with a GPU (short enough for a 10-minute window).

For every example in examples/cuda: the compile-only report (cuda-compile), then, when this machine has
a GPU, the baseline timed by cuda-local, an offline search through speedpatch.api (deterministic menu
moves, no LLM) and the best candidate, printed as a table with each measurement's receipt.
Without a GPU it prints the compile-only table, says why nothing was timed, and exits 0.

    .venv/bin/python scripts/gpu_check.py [--iterations 1] [--trials 30] [--only matmul,softmax]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "cuda"


def _fmt_ci(ev: Any) -> str:
    ci = (ev.receipt or {}).get("ci") or {}
    if ev.value is None:
        return "-"
    return f"{ev.value:.4g} ms [{ci.get('low_ms', 0):.4g}, {ci.get('high_ms', 0):.4g}]"


def element_of(path: Path, text: str) -> str:
    """The buffers' type of a .cu problem (fp32, fp16, bf16), as its harness selects it."""
    from speedpatch.targets.cuda.problem import split_problem

    layout = split_problem(text, str(path))
    return layout.element if layout is not None else "?"


def compile_table(paths: list[Path], api: Any, config: Any) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        text = path.read_text()
        problem = api.make_problem(str(path), text, None, config, backend="cuda-compile")
        ev = api.evaluate(problem, None, config)
        kernels = ev.feedback.get("kernels", {})
        summary = "; ".join(
            f"{name}: {k['registers']} regs, spills {k['spill_stores_bytes']} B, "
            f"occupancy {k.get('occupancy', {}).get('occupancy', '?')}" for name, k in kernels.items())
        rows.append({"example": path.name, "element": element_of(path, text), "status": ev.status, "kernels": summary,
                     "seconds": round(ev.seconds, 1)})
    return rows


def gpu_rows(paths: list[Path], api: Any, config: Any, store_root: Path) -> list[dict[str, Any]]:
    from speedpatch.store import Store

    rows = []
    for path in paths:
        text = path.read_text()
        problem = api.make_problem(str(path), text, None, config, backend="cuda-local")
        started = time.monotonic()
        store = Store(store_root / path.stem)
        record = api.optimize(problem, config, store)
        base, best = record.baseline, record.best
        row: dict[str, Any] = {"example": path.name, "element": element_of(path, text), "run": record.status,
                               "message": record.message, "seconds": round(time.monotonic() - started, 1)}
        if base is not None and base.evaluation is not None:
            row["baseline"] = _fmt_ci(base.evaluation)
            row["receipt"] = {k: base.evaluation.receipt.get(k) for k in ("device", "compiler_version", "flags", "inputs",
                                                                          "tolerance", "trials", "warmups", "statistic",
                                                                          "date")}
        if best is not None and best.evaluation is not None:
            ev = best.evaluation
            row["best"] = _fmt_ci(ev)
            row["best_plan"] = best.plan or "(baseline)"
            row["speedup_vs_baseline_in_run"] = ev.feedback.get("speedup_vs_baseline")
            row["speedup_ci"] = ev.feedback.get("speedup_ci")
            row["verdict"] = ev.feedback.get("verdict")
            row["achieved"] = {k: ev.feedback.get(k) for k in ("achieved_gflops", "peak_gflops_fp32", "achieved_gbps",
                                                                "peak_gbps")}
        row["evaluations"] = record.evaluations
        rows.append(row)
    return rows


def kernelbench_row(trials: int) -> dict[str, Any] | None:
    """The KernelBench-style example, when torch is importable here."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return None
    from speedpatch.model import Kernel
    from speedpatch.targets.base import EvalContext
    from speedpatch.targets.cuda.backends.local import CudaLocalBackend

    path = EXAMPLES / "kernelbench_relu.py"
    with tempfile.TemporaryDirectory() as work:
        ctx = EvalContext(Kernel("ModelNew", "cuda", 0, 0, 0, 0, 0, ""), str(path), Path(work), 300,
                          {"trials": trials})
        ev = CudaLocalBackend().evaluate(path.read_text(), ctx)
    return {"example": path.name, "status": ev.status, "message": ev.message, "candidate": _fmt_ci(ev),
            "pytorch_reference_ms": ev.feedback.get("pytorch_reference_ms")}


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n== {title} ==")
    for row in rows:
        receipt = row.pop("receipt", None)
        print(" | ".join(f"{k}: {v}" for k, v in row.items()))
        if receipt:
            print("   receipt: " + json.dumps(receipt, default=str))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=1)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--only", default="", help="comma-separated example stems")
    args = ap.parse_args()

    from speedpatch import api
    from speedpatch.config import load_config
    from speedpatch.targets.cuda.backends.local import CudaLocalBackend

    paths = sorted(EXAMPLES.glob("*.cu"))
    if args.only:
        wanted = set(args.only.split(","))
        paths = [p for p in paths if p.stem in wanted]
    settings = {"trials": args.trials, "warmup": 3, "seeds": 3}
    config = load_config(None, {
        "offline": True,
        "search": {"iterations": args.iterations, "beam": 2, "workers": 4, "eval_timeout": 300},
        "backend": {"cuda-local": settings},
    })
    print_table("compile-only (cuda-compile, sm_90)", compile_table(paths, api, config))
    local = CudaLocalBackend().availability()
    if not local.usable:
        print(f"\nno timing: {local.reason}")
        return 0
    print(f"\nGPU: {local.reason}")
    with tempfile.TemporaryDirectory() as store_root:
        print_table(f"cuda-local: baseline, offline search ({args.iterations} iteration(s)), best",
                    gpu_rows(paths, api, config, Path(store_root)))
    kb = kernelbench_row(args.trials)
    if kb is not None:
        print_table("KernelBench-style (torch)", [kb])
    return 0


if __name__ == "__main__":
    sys.exit(main())
