"""LSP work-done progress for searches: one server-created token per run, cancellable from the UI.

Called on the loop thread only. A run may end before the client has acknowledged its token; `end` is then
sent as soon as `begin` has been.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from speedpatch.states import JobStatus

from .formatting import speedup_text
from .runs import Job


def elapsed_text(seconds: float) -> str:
    """'12 s', '3 min 05 s': how long the search has run (a progress message is read at a glance)."""
    seconds = int(seconds)
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60:02d} s"


def token_for(run_id: str, attempt: int = 0) -> str:
    # a resumed run reports under a new token: a client may not reuse a token it already ended
    return f"speedpatch-run-{run_id}" + (f"-{attempt}" if attempt else "")


class RunProgress:
    def __init__(self, server: LanguageServer, queue_position: Callable[[str], int]):
        self.server = server
        self.queue_position = queue_position
        self._begun: set[str] = set()

    def supported(self) -> bool:
        caps = self.server.client_capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)

    def begin(self, job: Job) -> None:
        if not job.token:
            return

        def on_created(*_: Any) -> None:
            ahead = max(self.queue_position(job.run_id), 0)
            queued = job.state != JobStatus.RUNNING and ahead
            self.server.work_done_progress.begin(
                job.token,
                types.WorkDoneProgressBegin(
                    title=f"Optimizing {job.kernel} ({job.backend})",
                    cancellable=True,
                    message=f"queued behind {ahead} run(s)" if queued else "starting",
                    percentage=0,
                ),
            )
            self._begun.add(job.token)
            if job.state == JobStatus.DONE:
                self.end(job)

        self.server.work_done_progress.create(job.token, callback=on_created)

    def report(self, job: Job) -> None:
        if job.token not in self._begun:
            return
        parts = []
        if job.reverifying:
            parts.append(f"re-verifying the winner on {job.reverifying}")
        elif job.iterations:
            parts.append(f"iteration {job.iteration}/{job.iterations}" if job.iteration else "measuring the original")
        parts.append(f"{job.evaluated} evaluated, {job.correct} correct")
        if job.speedup:
            parts.append(f"best {speedup_text(job.speedup)}")
        if job.started is not None:
            parts.append(f"{elapsed_text(time.monotonic() - job.started)} so far")
        percentage = int(100 * max(job.iteration - 1, 0) / job.iterations) if job.iterations else None
        self.server.work_done_progress.report(
            job.token,
            types.WorkDoneProgressReport(message=", ".join(parts), percentage=percentage, cancellable=True),
        )

    def end(self, job: Job) -> None:
        if job.token not in self._begun:
            return
        self._begun.discard(job.token)
        text = job.status
        if job.speedup:
            text += f", best {speedup_text(job.speedup)}"
        if job.message:
            text += f": {job.message}"
        self.server.work_done_progress.end(job.token, types.WorkDoneProgressEnd(message=text))
        self.server.work_done_progress.tokens.pop(job.token, None)
