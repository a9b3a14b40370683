"""`speedpatch bench TARGET`: the offline search over every example of a target, as a table."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from speedpatch import api, targets
from speedpatch.cli.render import fmt_value
from speedpatch.config import load_config
from speedpatch.errors import UserError
from speedpatch.store import Store

REPO_EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _examples(args: argparse.Namespace) -> list[Path]:
    folder = Path(args.examples) if args.examples else None
    if folder is None:
        for candidate in (Path.cwd() / "examples" / args.target, REPO_EXAMPLES / args.target):
            if candidate.is_dir():
                folder = candidate
                break
    if folder is None or not folder.is_dir():
        raise UserError(f"no examples folder for {args.target}; pass --examples DIR")
    target = targets.get_target(args.target)
    files = sorted(p for p in folder.iterdir() if p.suffix in target.extensions and p.is_file())
    if args.only:
        files = [p for p in files if p.name in args.only or p.stem in args.only]
    if not files:
        raise UserError(f"{folder}: no {args.target} examples found")
    return files


def run_bench(args: argparse.Namespace, out: Console, err: Console) -> int:
    rows = []
    for path in _examples(args):
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="speedpatch-bench-") as ws:
            config = load_config(None, {"offline": True, "search": {"iterations": args.iterations}})
            config.workspace = ws
            row = {"example": path.name}
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
                    "message": record.message.splitlines()[0] if record.message else "",
                })
            except UserError as exc:
                row.update({"status": "error", "message": str(exc)})
            row["seconds"] = round(time.monotonic() - started, 1)
            rows.append(row)
            if not args.json:
                err.print(f"{path.name}: {row.get('status')} {row.get('speedup') or ''}")
    if args.json:
        print(json.dumps(rows))
        return 0
    table = Table(title=f"speedpatch bench {args.target} (offline proposer, {args.iterations} iterations)")
    for col in ("example", "baseline", "best", "speedup", "utilization", "search s", "status"):
        table.add_column(col, overflow="fold")
    for r in rows:
        util = r.get("utilization")
        table.add_row(
            r["example"], fmt_value(r.get("baseline"), r.get("unit", "")), fmt_value(r.get("best"), r.get("unit", "")),
            f"{r['speedup']:.2f}x" if r.get("speedup") else "-",
            f"{util:.1%}" if isinstance(util, (int, float)) else (str(util) if util else "-"),
            f"{r['seconds']:.1f}", r.get("status", "") + (f": {r['message']}" if r.get("message") else ""),
        )
    out.print(table)
    return 0 if all(r.get("status") == "finished" for r in rows) else 1
