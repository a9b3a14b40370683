"""How runs, candidates and evaluations look in a terminal (rich) and as JSON."""

from __future__ import annotations

import difflib
import textwrap
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from speedpatch.figures import speedup_text, value_text
from speedpatch.model import Candidate, Evaluation
from speedpatch.states import EvalStatus, RunStatus
from speedpatch.store import RunRecord
from speedpatch.verdict import NOT_FASTER


def cell(ev: Evaluation | None) -> str:
    """An evaluation's figure as a table shows it: '-' when there is none."""
    return value_text(ev.value if ev else None, ev.unit if ev else "", missing="-")


def run_message(record: RunRecord) -> str:
    """The run's message as the command line says it: an interrupted run's says how to continue it."""
    message = record.message
    # (a store written by an older speedpatch may hold the advice in the message already)
    if record.status == RunStatus.INTERRUPTED and "speedpatch resume" not in message:
        message = "; ".join(filter(None, [message, f"continue it with: speedpatch resume {record.run_id}"]))
    return message


def verdict_text(record: RunRecord) -> str:
    """The run's verdict as the table and the runs list show it (the same words as the editor)."""
    v = record.verdict
    if v.speedup is None:
        return "-"
    text = v.short if v.kind != NOT_FASTER else f"{speedup_text(v.speedup)} ({v.text})"
    return " ".join([text, *(f"({flag})" for flag in v.flags)])


def receipt_text(ev: Evaluation | None) -> str:
    if ev is None or not ev.receipt:
        return ""
    return ", ".join(f"{k}: {v}" for k, v in ev.receipt.items())


def display_path(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return path


def unified_diff(before: str, after: str, path: str) -> str:
    path = display_path(path).lstrip("/")
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
        )
    )


def run_json(record: RunRecord) -> dict[str, Any]:
    base = record.baseline.evaluation if record.baseline else None
    best = record.best.evaluation if record.best else None
    return {
        "run_id": record.run_id,
        "status": record.status,
        "message": run_message(record),
        "kernel": record.kernel,
        "path": record.path,
        "target": record.target,
        "backend": record.backend,
        "baseline": {"value": base.value if base else None, "unit": base.unit if base else ""},
        "best": {
            "value": best.value if best else None,
            "unit": best.unit if best else "",
            "candidate_id": record.best.id if record.best else None,
        },
        "speedup": record.speedup,
        "verdict": record.verdict.to_dict(),
        "evaluations": record.evaluations,
        "llm": record.llm,
        "seconds": round(record.seconds, 3),
        "receipt": best.receipt if best else {},
    }


WIDE = 150  # a terminal this wide also gets the file and both figures in the runs table


def runs_table(records: list[RunRecord], width: int = WIDE) -> Table:
    """The stored runs, newest first: what tells them apart, and below WIDE columns nothing more (ten folded
    columns broke even the headers at 80: 'statu/s'); `speedpatch show RUN` and `runs --json` have the rest."""
    wide = width >= WIDE
    table = Table(title="speedpatch runs", box=box.SIMPLE_HEAD, show_edge=False, collapse_padding=True)
    table.add_column("run", no_wrap=True, min_width=8)  # what every other command needs: never cut
    table.add_column("status", no_wrap=True)
    table.add_column("kernel", overflow="fold")
    if wide:
        table.add_column("file", overflow="fold")
    table.add_column("backend", overflow="fold")
    if wide:
        table.add_column("iter", no_wrap=True)
        table.add_column("baseline", no_wrap=True)
        table.add_column("best", no_wrap=True)
    table.add_column("speedup", overflow="fold")
    table.add_column("created", no_wrap=True)
    for r in records:
        created = r.created[: 16 if wide else 10].replace("T", " ")  # ISO: the date, and the minute when wide
        row = [r.run_id, r.status, r.kernel, r.backend, verdict_text(r), created]
        if wide:
            base = r.baseline.evaluation if r.baseline else None
            best = r.best.evaluation if r.best else None
            row[3:4] = [Path(r.path).name, r.backend, f"{r.iteration}/{r.iterations}", cell(base), cell(best)]
        table.add_row(*row)
    return table


def result_table(record: RunRecord) -> Table:
    table = Table(title=f"run {record.run_id}: {record.kernel} ({record.target}, {record.backend})", show_header=False)
    table.add_column("what")
    table.add_column("value")
    base = record.baseline.evaluation if record.baseline else None
    best = record.best.evaluation if record.best else None
    message = run_message(record)
    table.add_row("status", escape(record.status + (f" - {message}" if message else "")))
    table.add_row("baseline", cell(base))
    table.add_row("best", cell(best) + (escape(f"  [{record.best.id}]") if record.best else ""))
    table.add_row("speedup", verdict_text(record))
    table.add_row("evaluations", f"{record.evaluations.get('total', 0)} ({record.evaluations.get('correct', 0)} correct)")
    table.add_row("LLM", f"{record.llm.get('calls', 0)} calls, {record.llm.get('prompt_tokens', 0)} prompt + "
                  f"{record.llm.get('completion_tokens', 0)} completion tokens")
    table.add_row("search time", f"{record.seconds:.1f} s")
    if record.verdict.how:
        table.add_row("how it was measured", "")
    for label, value in record.verdict.how:
        table.add_row(f"  {label}", escape(value))
    return table


def candidates_table(cands: list[Candidate]) -> Table:
    table = Table(title="candidates")
    for col in ("id", "parent", "model", "status", "value", "plan"):
        table.add_column(col, overflow="fold")
    for c in cands:
        ev = c.evaluation
        plan = " ".join(c.plan.split())
        table.add_row(
            c.id, c.parent_id or "", c.model, ev.status if ev else "pending",
            cell(ev),
            escape(textwrap.shorten(plan, 100, placeholder=" ...")),
        )
    return table


def print_evaluation(console: Console, ev: Evaluation, backend: str) -> None:
    if (ev.receipt or {}).get("measured_on") == "compile-only" and ev.correct:
        # nothing ran: neither correctness nor speed is known, whatever the status word says
        console.print(f"[bold]compiled, not run[/bold] on {backend}: correctness and speed are unknown "
                      "(this backend only builds; run it on a backend that executes, see `speedpatch backends`)")
    elif ev.status == EvalStatus.INFRA_ERROR:  # the backend failed, not the program: nothing was judged
        console.print(f"[bold]not evaluated[/bold] ({ev.status}): {backend} could not run it, so its correctness "
                      "and speed are unknown")
    else:
        verdict = "correct" if ev.correct else "NOT correct"
        console.print(f"[bold]{verdict}[/bold] ({ev.status}) on {backend}: {cell(ev)}")
    if ev.message:
        console.print(ev.message, markup=False)
    if ev.feedback:
        for k, v in ev.feedback.items():
            console.print(f"  {k}: {v}", markup=False)
    if ev.receipt:
        console.print(f"measured: {receipt_text(ev)}", markup=False)
