"""A rich progress display driven by engine events."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from speedpatch.engine import events as ev
from speedpatch.figures import speedup_text


class SearchProgress:
    def __init__(self, console: Console, enabled: bool = True) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=console,
            disable=not enabled,
            transient=False,
        )
        self.task: TaskID | None = None
        self.best = "baseline"
        self.warnings: list[str] = []  # every warning of the run, also for --json

    def __enter__(self) -> SearchProgress:
        return self  # the display starts with the run: an error before it leaves no empty progress line

    def __exit__(self, *exc: Any) -> None:
        if self.task is not None:
            self.progress.__exit__(*exc)

    def __call__(self, event: ev.Event) -> None:
        d = event.data
        if event.kind == ev.WARNING:  # before the run starts too (set-up warnings), and with --json
            self.warnings.append(str(d["message"]))
            self.console.print(f"[yellow]warning:[/yellow] {escape(str(d['message']))}", highlight=False)
        elif event.kind == ev.RUN_STARTED:
            self.progress.start()
            self.task = self.progress.add_task(
                f"{d['kernel']} on {d['backend']}", total=d["iterations"], status="measuring baseline"
            )
        elif self.task is None:
            return
        elif event.kind == ev.BASELINE:
            cand = d["candidate"]["evaluation"]
            self.progress.update(self.task, status=f"baseline {cand.get('value')} {cand.get('unit', '')}")
        elif event.kind == ev.ITERATION_STARTED:
            self.progress.update(self.task, status=f"iteration {d['iteration']}/{d['iterations']}, best {self.best}")
        elif event.kind == ev.CANDIDATE:
            self.progress.update(
                self.task, status=f"{d['evaluated']} evaluated, {d['correct']} correct, best {self.best}"
            )
        elif event.kind == ev.ITERATION_FINISHED:
            if d.get("speedup"):
                self.best = speedup_text(d["speedup"])
            self.progress.update(self.task, completed=d["iteration"], status=f"best {self.best}")
        elif event.kind == ev.REVERIFYING:
            self.progress.update(self.task, status=f"re-verifying the winner on {d['backend']}")
        elif event.kind == ev.RUN_FINISHED:
            self.progress.update(self.task, status=f"{d['status']}, best {self.best}")
