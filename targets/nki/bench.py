"""Baseline vs best modeled latency on the NKI examples with the offline proposer (no LLM).

`python -m speedpatch.targets.nki.bench [--iterations N] [EXAMPLE ...]` prints the table; `speedpatch bench
nki` does the same through the CLI. Latencies come from the nki-emulator cost model (deterministic).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "nki"


def bench_example(path: Path, iterations: int = 3) -> dict[str, Any]:
    """One offline search over the example's kernel; a row for format_table."""
    from speedpatch import api
    from speedpatch.config import load_config
    from speedpatch.errors import UserError
    from speedpatch.store import Store

    row: dict[str, Any] = {"example": path.stem, "baseline": None, "best": None, "unit": "", "speedup": None,
                           "plan": "", "status": ""}
    with tempfile.TemporaryDirectory(prefix="speedpatch-nki-bench-") as ws:
        config = load_config(None, {"offline": True, "search": {"iterations": iterations}})
        config.workspace = ws
        try:
            problem = api.make_problem(str(path), path.read_text(encoding="utf-8"), None, config, "nki-emulator")
            store = Store(Path(ws))
            record = api.optimize(problem, config, store)
        except UserError as exc:
            row["status"] = f"error: {exc}"
            return row
        base = record.baseline.evaluation if record.baseline else None
        best = record.best.evaluation if record.best else None
        row.update(status=record.status, baseline=base.value if base else None, best=best.value if best else None,
                   unit=base.unit if base else "", speedup=record.speedup)
        if record.best is not None:
            row["plan"] = " / ".join(_short(c.plan) for c in store.lineage(record.run_id, record.best.id) if c.plan)
    return row


def _short(plan: str, limit: int = 48) -> str:
    first = plan.split(" so ")[0].split(". ")[0]
    return first if len(first) <= limit else first[: limit - 3] + "..."


def format_table(rows: list[dict[str, Any]]) -> str:
    """example | baseline | best | speedup | steps, one line per example."""

    def value(v: Any, unit: str) -> str:
        return f"{v:.2f} {unit}" if isinstance(v, (int, float)) else "-"

    header = ("example", "baseline", "best", "speedup", "steps")
    lines = [(r["example"], value(r.get("baseline"), r.get("unit", "")), value(r.get("best"), r.get("unit", "")),
              f"{r['speedup']:.2f}x" if r.get("speedup") else (r.get("status") or "-"), r.get("plan", "") or "")
             for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines, strict=False)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths[:-1]) + "  {}"
    out = [fmt.format(*header), fmt.format(*["-" * w for w in widths[:-1]], "-" * 5)]
    out += [fmt.format(*line) for line in lines]
    return "\n".join(out) + "\n(modeled latency from the nki-emulator cost model: deterministic, not measured)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("examples", nargs="*", help="example names (default: all)")
    args = ap.parse_args(argv)
    paths = sorted(EXAMPLES.glob("*.py"))
    if args.examples:
        paths = [p for p in paths if p.stem in args.examples]
    print(format_table([bench_example(p, args.iterations) for p in paths]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
