"""`speedpatch bench TARGET`: the offline search over every example of a target, as a table."""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from speedpatch import api, targets
from speedpatch.cli.render import run_message
from speedpatch.config import load_config
from speedpatch.errors import UserError
from speedpatch.figures import speedup_text, value_text
from speedpatch.states import RunStatus
from speedpatch.store import Store

REPO_EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ERROR = "error"  # a row's status when its example could not be searched at all (else the run's RunStatus)


def _examples(args: argparse.Namespace) -> list[Path]:
    folder = Path(args.examples) if args.examples else None
    if folder is not None and not folder.is_dir():
        raise UserError(f"--examples {args.examples}: no such folder")
    if folder is None:
        for candidate in (Path.cwd() / "examples" / args.target, REPO_EXAMPLES / args.target):
            if candidate.is_dir():
                folder = candidate
                break
    if folder is None or not folder.is_dir():
        raise UserError(f"no examples folder for {args.target}; pass --examples DIR")
    target = targets.get_target(args.target)
    found = sorted(p for p in folder.iterdir() if p.suffix in target.extensions and p.is_file())
    files = [p for p in found if p.name in args.only or p.stem in args.only] if args.only else found
    if found and not files:
        raise UserError(f"{folder}: no example named {', '.join(args.only)}; examples: {', '.join(p.name for p in found)}")
    if not files:
        raise UserError(f"{folder}: no {args.target} examples found")
    return files


def _stdout_json(rows: Any) -> None:
    print(json.dumps(rows))


def run_bench(args: argparse.Namespace, out: Console, err: Console,
              print_json: Callable[[Any], None] = _stdout_json) -> int:
    """With --json the rows go to print_json: the command line's reserved stdout (cli.main._print_json), since
    everything else written to file descriptor 1 then goes to stderr."""
    if getattr(args, "paper", False):
        return run_paper_bench(args, out, err, print_json)
    rows = []
    for path in _examples(args):
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="speedpatch-bench-") as ws:
            config = load_config(None, {"offline": True, "search": {"iterations": args.iterations}})
            config.workspace = ws
            row: dict[str, Any] = {"example": path.name}
            try:
                text = path.read_text(encoding="utf-8")
                kernels = [k for k in api.find_kernels(str(path), text) if k.runnable]
                problem = api.make_problem(str(path), text, kernels[0].name if kernels else None, config)
                store = Store(ws)
                record = api.optimize(problem, config, store)
                base = record.baseline.evaluation if record.baseline else None
                best = record.best.evaluation if record.best else None
                row.update({
                    "kernel": problem.kernel.name, "status": record.status, "unit": base.unit if base else "",
                    "baseline": base.value if base else None, "best": best.value if best else None,
                    "speedup": record.speedup, "utilization": (best.feedback or {}).get("utilization") if best else None,
                    "plan": " / ".join(c.plan for c in store.lineage(record.run_id, record.best.id) if c.plan)
                    if record.best else "",
                    "message": (run_message(record).splitlines() or [""])[0],
                    "evaluations": sum(1 for c in store.candidates(record.run_id) if c.evaluation is not None),
                })
            except UserError as exc:
                row.update({"status": ERROR, "message": str(exc)})
            row["seconds"] = round(time.monotonic() - started, 1)
            if row.get("evaluations"):  # candidates evaluated (baseline included) per minute of search
                row["evals_per_min"] = round(60.0 * row["evaluations"] / max(row["seconds"], 0.1), 1)
            rows.append(row)
            if not args.json:
                speedup = speedup_text(row["speedup"]) if row.get("speedup") else ""
                err.print(f"{path.name}: {row.get('status')} {speedup}".rstrip(), markup=False)
    if args.json:
        print_json(rows)
        return 0
    iterations = f"{args.iterations} iteration{'s' if args.iterations != 1 else ''}"
    table = Table(title=f"speedpatch bench {args.target} (offline proposer, {iterations})", box=box.SIMPLE_HEAD,
                  show_edge=False, collapse_padding=True)
    # one-word headers, no longer than the longest word below them: 80 columns hold the table unbroken
    for col in ("example", "baseline", "best", "speedup", "util", "seconds", "evals/min", "status"):
        table.add_column(col, overflow="fold")
    for r in rows:
        util = r.get("utilization")
        table.add_row(
            r["example"], value_text(r.get("baseline"), r.get("unit", ""), "-"), value_text(r.get("best"), r.get("unit", ""), "-"),
            speedup_text(r.get("speedup") or None, missing="-"),
            f"{util:.1%}" if isinstance(util, (int, float)) else (str(util) if util else "-"),
            f"{r['seconds']:.1f}", f"{r['evals_per_min']:.1f}" if r.get("evals_per_min") else "-",
            escape(r.get("status", "") + (f": {r['message']}" if r.get("message") else "")),
        )
    out.print(table)
    return 0 if all(r.get("status") == RunStatus.FINISHED for r in rows) else 1


# ----------------------------------------------------------------------------------- --paper (Gemmini)
PAPER_DRAM_BYTES_PER_CYCLE = 8  # the cycle model's DRAM rate (timing_params.h: T_DRAM_BYTES_PER_CYCLE)
PAPER_PEAK_MACS_PER_CYCLE = 16 * 16


def paper_roofline(text: str) -> dict[str, float] | None:
    """MACs, the fewest DRAM bytes (every operand read once, the output written once) and the utilization
    the roofline allows: compute cycles / max(compute cycles, DRAM cycles)."""
    from speedpatch.targets.gemmini.moves import eval_int, int_defines

    d = int_defines(text)

    def val(name: str) -> int | None:
        return eval_int(name, d) if name in d else None

    i, j, k = val("MAT_DIM_I"), val("MAT_DIM_J"), val("MAT_DIM_K")
    if i and j and k:
        macs, nbytes = i * j * k, i * k + k * j + i * j
    else:
        batch, dim, ich, och = val("BATCH_SIZE"), val("IN_DIM"), val("IN_CHANNELS"), val("OUT_CHANNELS")
        kdim, out_dim = val("KERNEL_DIM"), val("OUT_DIM")
        if not (batch and dim and ich and och and kdim and out_dim):
            return None
        macs = batch * out_dim * out_dim * och * kdim * kdim * ich
        nbytes = batch * dim * dim * ich + kdim * kdim * ich * och + 4 * och + batch * out_dim * out_dim * och
    compute = macs / PAPER_PEAK_MACS_PER_CYCLE
    memory = nbytes / PAPER_DRAM_BYTES_PER_CYCLE
    return {"macs": macs, "min_bytes": nbytes, "roof_util": compute / max(compute, memory)}


def _util(ev: object | None) -> float | None:
    fb = getattr(ev, "feedback", None) or {}
    u = fb.get("utilization")
    return float(u) if isinstance(u, (int, float)) else None


def run_paper_bench(args: argparse.Namespace, out: Console, err: Console,
                    print_json: Callable[[Any], None] = _stdout_json) -> int:
    """The Autocomp paper's setup on Gemmini: for each of its problems, the library call as the baseline, the
    unoptimized explicit code as the search's start, the best the (offline) search finds from that start,
    utilization, and the roofline (peak compute vs. the fewest DRAM bytes)."""
    if args.target != "gemmini":
        raise UserError("--paper is defined for the gemmini target only")
    folder = Path(args.examples) if args.examples else REPO_EXAMPLES / "gemmini" / "paper"
    starts = sorted(folder.glob("*_explicit.c"))
    if args.only:
        starts = [p for p in starts if p.name in args.only or p.stem in args.only
                  or p.name.replace("_explicit", "") in args.only or p.stem.replace("_explicit", "") in args.only]
    if not starts:
        raise UserError(f"{folder}: no *_explicit.c starting points (the paper's problems)")
    rows = []
    for start in starts:
        base = start.with_name(start.name.replace("_explicit", ""))
        started = time.monotonic()
        row: dict[str, Any] = {"problem": base.stem}
        with tempfile.TemporaryDirectory(prefix="speedpatch-bench-") as ws:
            config = load_config(None, {"offline": True, "search": {"iterations": args.iterations}})
            config.workspace = ws
            try:
                lib_text = base.read_text(encoding="utf-8")
                lib_kernels = [k for k in api.find_kernels(str(base), lib_text) if k.runnable]
                lib_problem = api.make_problem(str(base), lib_text, lib_kernels[0].name if lib_kernels else None, config)
                lib = api.evaluate(lib_problem, None, config)
                text = start.read_text(encoding="utf-8")
                kernels = [k for k in api.find_kernels(str(start), text) if k.runnable]
                problem = api.make_problem(str(start), text, kernels[0].name if kernels else None, config)
                record = api.optimize(problem, config, Store(ws))
                first = record.baseline.evaluation if record.baseline else None
                best = record.best.evaluation if record.best else None
                roof = paper_roofline(lib_text) or {}
                row.update({
                    "unit": lib.unit, "library": lib.value if lib.correct else None, "library_util": _util(lib),
                    "start": first.value if first else None, "start_util": _util(first),
                    "best": best.value if best else None, "best_util": _util(best),
                    "vs_library": (lib.value / best.value) if (lib.correct and lib.value and best and best.value) else None,
                    "vs_start": (first.value / best.value) if (first and first.value and best and best.value) else None,
                    "roof_util": roof.get("roof_util"), "status": record.status,
                    "reverified": str((best.receipt or {}).get("reverified", "-")) if best else "-",
                    "message": (run_message(record).splitlines() or [""])[0],
                })
            except UserError as exc:
                row.update({"status": ERROR, "message": str(exc)})
        row["seconds"] = round(time.monotonic() - started, 1)
        rows.append(row)
        if not args.json:
            err.print(f"{base.name}: {row.get('status')}")
    if args.json:
        print_json(rows)
        return 0

    def pct(x: object) -> str:
        return f"{x:.1%}" if isinstance(x, (int, float)) else "-"

    def ratio(x: object) -> str:
        return speedup_text(x if isinstance(x, (int, float)) else None, missing="-")

    table = Table(title=f"speedpatch bench gemmini --paper (offline proposer, {args.iterations} iterations; "
                        "start = unoptimized explicit code, as in the paper)")
    for col in ("problem", "library", "util", "explicit start", "best found", "util", "vs library", "vs start",
                "roofline util", "re-verified", "status"):
        table.add_column(col, overflow="fold")
    for r in rows:
        unit = str(r.get("unit") or "")
        table.add_row(str(r["problem"]), value_text(r.get("library"), unit, "-"), pct(r.get("library_util")),
                      value_text(r.get("start"), unit, "-"), value_text(r.get("best"), unit, "-"), pct(r.get("best_util")),
                      ratio(r.get("vs_library")), ratio(r.get("vs_start")), pct(r.get("roof_util")),
                      str(r.get("reverified", "-")),
                      str(r.get("status", "")) + (f": {r['message']}" if r.get("message") else ""))
    out.print(table)
    for kind, prefix in (("GEMMs", "matmul_"), ("convolutions", "conv_")):
        ratios = [float(r["vs_library"]) for r in rows
                  if str(r["problem"]).startswith(prefix) and isinstance(r.get("vs_library"), (int, float))]
        if ratios:
            geomean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            out.print(f"{kind}: best found vs library, geomean {geomean:.2f}x over {len(ratios)} problem(s)")
    return 0 if all(r.get("status") == RunStatus.FINISHED for r in rows) else 1
