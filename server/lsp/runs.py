"""The run manager: searches queue up and run one at a time on a background worker thread.

The engine call (speedpatch.api.optimize) blocks for minutes; it runs here, never on the LSP event loop,
and candidates are evaluated in subprocesses by the backends, so the server keeps answering. Every engine
Event updates the job's live state and is handed to a listener (the run controller), which turns it into LSP
progress, speedpatch/runUpdate and refreshes. Nothing here knows LSP.

A new search is written to its folder's store as "queued" the moment it is submitted, so a search the user
asked for outlives this process: if the server stops before its turn, the store shows it as interrupted
("queued when the server stopped") and Resume runs it from the start. Cancelling a queued search ends it
at once, stored as cancelled.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from speedpatch.config import Config
from speedpatch.engine import events as ev
from speedpatch.errors import UserError
from speedpatch.model import Problem
from speedpatch.states import EvalStatus, JobStatus, RunStatus

from .engine import api
from .failures import Failures

log = logging.getLogger(__name__)


@dataclass
class Job:
    run_id: str
    uri: str
    path: str  # normalised absolute path
    problem: Problem
    config: Config
    store: Any = None  # the run store of the job's workspace folder (it writes there)
    folder: str = ""  # root of that workspace folder
    quick: bool = False
    resume: bool = False  # continue a stored interrupted/cancelled run instead of starting one
    cancel: threading.Event = field(default_factory=threading.Event)
    token: str = ""  # work-done progress token ("" when the client has no progress support)
    state: JobStatus = JobStatus.QUEUED  # its place in this server's queue
    status: str = RunStatus.QUEUED  # the store's run status once known (a plain str from engine events)
    iteration: int = 0
    iterations: int = 0
    evaluated: int = 0
    correct: int = 0
    baseline_value: float | None = None
    best_value: float | None = None
    unit: str = ""
    speedup: float | None = None
    message: str = ""
    reverifying: str = ""  # the backend re-checking the winner, while it does (engine/reverify.py)
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    started: float | None = None  # time.monotonic() when the worker took it (progress shows the elapsed time)
    failures: Failures = field(default_factory=Failures)  # failed candidates so far, as of the last iteration

    @property
    def kernel(self) -> str:
        return self.problem.kernel.name

    @property
    def target(self) -> str:
        return self.problem.target

    @property
    def backend(self) -> str:
        return self.problem.backend

    def absorb(self, event: ev.Event) -> None:
        """Fold one engine event into the live state shown while the run is active."""
        data = event.data
        if event.kind == ev.RUN_STARTED:
            self.iterations = int(data.get("iterations") or self.iterations)
            self.status = RunStatus.RUNNING
        elif event.kind == ev.BASELINE:
            value, unit = _value(data.get("candidate"))
            self.baseline_value, self.unit = value, unit or self.unit
            self.best_value = value if self.best_value is None else self.best_value
        elif event.kind == ev.ITERATION_STARTED:
            self.iteration = int(data.get("iteration") or self.iteration)
            self.iterations = int(data.get("iterations") or self.iterations)
        elif event.kind == ev.CANDIDATE:
            self.evaluated = int(data.get("evaluated", self.evaluated))
            self.correct = int(data.get("correct", self.correct))
            value, _ = _value(data.get("candidate"), only_ok=True)
            if value is not None and (self.best_value is None or value < self.best_value):
                self.best_value = value
                self._update_speedup()
        elif event.kind == ev.ITERATION_FINISHED:
            self.iteration = int(data.get("iteration") or self.iteration)
            value, _ = _value(data.get("best"), only_ok=True)
            if value is not None:
                self.best_value = value
            self.speedup = data.get("speedup") or self.speedup
            self._update_speedup()
        elif event.kind == ev.REVERIFYING:
            self.reverifying = str(data.get("backend") or "")
        elif event.kind == ev.RUN_FINISHED:
            self.reverifying = ""
            self.status = str(data.get("status") or RunStatus.FINISHED)
            self.message = str(data.get("message") or "")
            self.speedup = data.get("speedup") or self.speedup

    def _update_speedup(self) -> None:
        if self.baseline_value and self.best_value:
            self.speedup = self.baseline_value / self.best_value


def _value(candidate: Any, only_ok: bool = False) -> tuple[float | None, str]:
    if not isinstance(candidate, dict) or not isinstance(candidate.get("evaluation"), dict):
        return None, ""
    evaluation = candidate["evaluation"]
    if only_ok and evaluation.get("status") != EvalStatus.OK:
        return None, ""
    return evaluation.get("value"), str(evaluation.get("unit") or "")


Listener = Callable[[Job, "ev.Event | None"], None]
"""Called (from worker threads) after a job changed: with the engine event, or None for queue changes."""


class RunManager:
    """One worker for all workspace folders: the accelerator (or CPU) that measures candidates is shared,
    so searches never run side by side; each job writes to its own folder's store."""

    def __init__(self, listener: Listener):
        self._listener = listener
        self._queue: queue.Queue[Job | None] = queue.Queue()
        self._jobs: dict[str, Job] = {}  # queued and running jobs
        self._lock = threading.Lock()
        self._worker = threading.Thread(target=self._work, name="speedpatch-runs", daemon=True)
        self._worker.start()

    def submit(self, job: Job) -> int:
        """Queue a job; returns how many jobs are ahead of it. A new search is stored as queued first (a
        resumed one is already stored, as interrupted or cancelled, and stays so until it starts)."""
        if not job.resume:
            try:
                job.store.queue_run(job.run_id, job.problem, job.iterations, job.config.to_dict())
            except Exception as exc:  # a full disk or a locked store: say so now, not when its turn comes
                raise UserError(f"cannot record the run in {job.store.path}: {exc}") from exc
        with self._lock:
            ahead = len(self._jobs)
            self._jobs[job.run_id] = job
        self._queue.put(job)
        return ahead

    def cancel(self, run_id: str) -> bool:
        """Cancel a queued or running job. A running one stops at the engine's next check (the engine
        stores it as cancelled); a queued one ends now and the worker skips it when its turn comes."""
        with self._lock:
            job = self._jobs.get(run_id)
            if job is None:
                return False
            job.cancel.set()
            unstarted = job.state == JobStatus.QUEUED
            if unstarted:
                del self._jobs[run_id]
        if unstarted:
            self._end_unstarted(job)
        return True

    def _end_unstarted(self, job: Job) -> None:
        message = "cancelled before it started"
        if not job.resume:  # a resumed run was never marked queued: it stays as it was stored
            try:
                job.store.set_status(job.run_id, RunStatus.CANCELLED, message)
            except Exception:
                log.exception("storing the cancel of run %s failed", job.run_id)
        job.status, job.message = RunStatus.CANCELLED, message
        job.state = JobStatus.DONE
        self._safe_notify(job, None)

    def active(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def get(self, run_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(run_id)

    def job_for(self, path: str, kernel: str) -> Job | None:
        with self._lock:
            return next((j for j in self._jobs.values() if j.path == path and j.kernel == kernel), None)

    def position(self, run_id: str) -> int:
        with self._lock:
            return list(self._jobs).index(run_id) if run_id in self._jobs else -1

    def shutdown(self) -> None:
        """The running search is cancelled (stored as cancelled, resumable). Queued ones are left as
        stored: once this process has exited they read as interrupted, ready to be resumed."""
        with self._lock:
            running = {run_id: job for run_id, job in self._jobs.items() if job.state == JobStatus.RUNNING}
            self._jobs = running  # the worker skips the others
        for job in running.values():
            job.cancel.set()
        self._queue.put(None)

    def join(self, timeout: float) -> None:
        self._worker.join(timeout)

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            with self._lock:
                if self._jobs.get(job.run_id) is not job:
                    continue  # cancelled (and ended) while it waited, or dropped at shutdown
                job.state = JobStatus.RUNNING
            try:
                self._run(job)
            except Exception:  # the worker must survive anything one job does
                log.exception("run %s crashed", job.run_id)
            finally:
                job.state = JobStatus.DONE
                with self._lock:
                    self._jobs.pop(job.run_id, None)
                self._safe_notify(job, None)

    def _run(self, job: Job) -> None:
        job.status = RunStatus.RUNNING
        job.started = time.monotonic()
        self._safe_notify(job, None)

        def on_event(event: ev.Event) -> None:
            job.absorb(event)
            self._safe_notify(job, event)

        try:
            if job.resume:
                record = api().resume(job.run_id, job.store, job.config, on_event=on_event, cancel=job.cancel)
            else:
                record = api().optimize(
                    job.problem, job.config, job.store, on_event=on_event, cancel=job.cancel, run_id=job.run_id
                )
            job.status = record.status
            job.message = record.message or job.message
            job.speedup = record.speedup
        except UserError as exc:
            self._fail(job, str(exc))
        except Exception as exc:
            log.exception("run %s failed", job.run_id)
            self._fail(job, f"{type(exc).__name__}: {exc}")

    @staticmethod
    def _fail(job: Job, message: str) -> None:
        """If the engine failed before it took the run over (a bad menu, an unusable backend), the queued
        placeholder must not stay queued (it would come back as "queued when the server stopped"). Stored
        first, so whoever sees the job failed finds the store saying so too."""
        if not job.resume:  # a resumed run keeps what the store says (the engine records its own failures)
            try:
                if job.store.get_run(job.run_id).status == RunStatus.QUEUED:
                    job.store.set_status(job.run_id, RunStatus.FAILED, message)
            except Exception:
                log.exception("storing the failure of run %s failed", job.run_id)
        job.status, job.message = RunStatus.FAILED, message

    def _safe_notify(self, job: Job, event: ev.Event | None) -> None:
        try:
            self._listener(job, event)
        except Exception:
            log.exception("run listener failed")
