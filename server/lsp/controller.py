"""The run controller: starts, resumes and cancels searches, and turns what happens to them into LSP
messages (progress, speedpatch/runUpdate, the end-of-search message with its buttons) and run summaries.

Searches run on the RunManager's worker thread; `_on_job` is called there and hands everything it sends
to the loop thread through `post`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from speedpatch.config import Config
from speedpatch.engine import events as ev
from speedpatch.errors import UserError
from speedpatch.states import JobStatus, RunStatus
from speedpatch.store import RunRecord

from . import settings as settings_mod
from .compiler import compiler_errors, relabel
from .docviews import DocumentViews
from .engine import api
from .failures import Failures, first_line, tally
from .folders import Folder, Folders
from .lenses import RESUMABLE, baseline_failure
from .progress import RunProgress, token_for
from .reports import summary_of_job, summary_of_record
from .runs import Job, RunManager
from .staleness import StalenessTracker
from .views import has_winner

log = logging.getLogger(__name__)

RUN_UPDATE = "speedpatch/runUpdate"
SHOW_DIFF_BUTTON, APPLY_BUTTON, REPORT_BUTTON = "Show diff", "Apply", "Show report"
_REPORTED_EVENTS = {ev.RUN_STARTED, ev.BASELINE, ev.ITERATION_STARTED, ev.ITERATION_FINISHED, ev.RUN_FINISHED}

ButtonHandler = Callable[[str, str], Awaitable[None]]
"""(run id, the button pressed on an end-of-search message) -> what it does (the commands module's)."""


class RunController:
    def __init__(
        self,
        server: LanguageServer,
        folders: Folders,
        views: DocumentViews,
        staleness: StalenessTracker,
        make_config: Callable[[Folder, dict[str, Any] | None], Config],
        post: Callable[..., None],
        show: Callable[[str, types.MessageType], None],
        refresh_editor: Callable[[], None],
    ):
        self.server = server
        self.folders = folders
        self.views = views
        self.staleness = staleness
        self._make_config = make_config
        self._post = post
        self._show = show
        self._refresh_editor = refresh_editor
        self.on_button: ButtonHandler | None = None  # set by whoever registers the commands
        self.runs: RunManager | None = None
        self.progress = RunProgress(server, lambda run_id: self.runs.position(run_id) if self.runs else -1)
        self.finished_jobs: dict[str, Job] = {}  # runs that ended before the store knew them

    def start(self) -> None:
        """Start the worker thread (at initialize, once the client's capabilities are known)."""
        self.runs = RunManager(self._on_job)

    def shutdown(self) -> None:
        if self.runs is not None:
            self.runs.shutdown()
            self.runs.join(timeout=5)

    def job_for(self, path: str, kernel: str) -> Job | None:
        assert self.runs is not None
        return self.runs.job_for(path, kernel)

    def locate(self, run_id: str) -> tuple[Folder, RunRecord] | None:
        """The stored run with this id and the folder whose store holds it."""
        for folder in self.folders.all():
            record = folder.index.get(run_id)
            if record is not None:
                return folder, record
        return None

    # ---------------------------------------------------------------- summaries
    def summary(self, run_id: str) -> dict[str, Any] | None:
        assert self.runs is not None
        job = self.runs.get(run_id)
        if job is not None:
            return self._job_summary(job)
        located = self.locate(run_id)
        if located is not None:
            return self.record_summary(*located)
        job = self.finished_jobs.get(run_id)
        return self._job_summary(job) if job else None

    def all_summaries(self) -> list[dict[str, Any]]:
        """Runs of every open folder: active ones first, then each folder's stored runs."""
        assert self.runs is not None
        open_roots = {str(f.root) for f in self.folders.all()}
        out = [self._job_summary(j) for j in self.runs.active() if j.folder in open_roots]
        seen = {s["runId"] for s in out}
        for folder in self.folders.all():
            for record in folder.index.all():
                if record.run_id not in seen:
                    out.append(self.record_summary(folder, record))
                    seen.add(record.run_id)
        out += [
            self._job_summary(j)
            for j in self.finished_jobs.values()
            if j.run_id not in seen and j.folder in open_roots
        ]
        return out

    def record_summary(self, folder: Folder, record: RunRecord) -> dict[str, Any]:
        stale = self.staleness.is_stale(folder, record)
        return _labelled(summary_of_record(record, folder.index.path_of(record), stale), folder)

    def _job_summary(self, job: Job) -> dict[str, Any]:
        return _labelled(summary_of_job(job), self.folders.get(job.folder))

    # ---------------------------------------------------------------- starting and stopping
    def start_run(self, uri: str, kernel: str, quick: bool) -> str:
        assert self.runs is not None
        views = self.views
        path = views.path_of(uri)
        text = views.text_of(uri)
        if path is None or text is None:
            raise UserError(f"cannot optimize {uri}: only files on disk can be optimized")
        folder = views.folder_for(path)
        if folder.config_error:
            raise UserError(f"fix the configuration first: {folder.config_error}")
        view = views.view(uri, kernel)
        if view is None:
            names = ", ".join(v.kernel.name for v in views.views(uri)[0]) or "none"
            raise UserError(f"no kernel named {kernel!r} in {Path(path).name} (kernels found: {names})")
        if not view.runnable:
            raise UserError(f"cannot optimize {kernel}: {view.reason}")
        if view.job is not None:
            raise UserError(f"{kernel} is already being optimized (run {view.job.run_id})")
        config = self._make_config(folder, settings_mod.QUICK_OVERRIDES if quick else None)
        problem = api().make_problem(path, text, kernel, config, backend=view.backend)
        job = Job(
            run_id=api().new_run_id(), uri=uri, path=path, problem=problem, config=config,
            store=folder.store, folder=str(folder.root), quick=quick,
        )
        job.iterations = config.search.iterations
        return self._submit(job)

    def resume_run(self, run_id: str) -> str:
        """Continue a stored run that was interrupted (process gone, LLM down) or cancelled."""
        assert self.runs is not None
        located = self.locate(run_id)
        if located is None:
            raise UserError(f"no run {run_id!r} in this workspace")
        folder, record = located
        if folder.config_error:
            raise UserError(f"fix the configuration first: {folder.config_error}")
        if record.status not in RESUMABLE:
            raise UserError(f"run {run_id} is {record.status}; only interrupted or cancelled runs can be resumed")
        if self.runs.get(record.run_id) is not None:
            raise UserError(f"run {record.run_id} is already queued or running")
        path = folder.index.path_of(record)
        # this session's endpoint and key reach the LLM; the search itself continues as stored
        job = Job(run_id=record.run_id, uri=self.views.uri_for_path(path), path=path, problem=record.problem,
                  config=self._make_config(folder, None), store=folder.store, folder=str(folder.root),
                  resume=True)
        job.iterations = record.iterations
        return self._submit(job)

    def _submit(self, job: Job) -> str:
        assert self.runs is not None
        if self.progress.supported():
            job.token = token_for(job.run_id, time.monotonic_ns() if job.resume else 0)
        self.runs.submit(job)
        self.progress.begin(job)
        self._refresh_editor()
        return job.run_id

    def cancel(self, run_id: str) -> bool:
        assert self.runs is not None
        return self.runs.cancel(run_id)

    def cancel_token(self, token: Any) -> None:
        assert self.runs is not None
        for job in self.runs.active():
            if job.token and job.token == token:
                self.runs.cancel(job.run_id)

    def cancel_in(self, folder: Folder) -> None:
        """Cancel the searches of a folder that was closed (stored as cancelled: resumable there)."""
        runs = self.runs
        if runs is None:
            return
        for job in runs.active():
            if job.folder == str(folder.root):
                runs.cancel(job.run_id)

    # ---------------------------------------------------------------- what happens to a job
    def _on_job(self, job: Job, event: ev.Event | None) -> None:
        """Called on the run worker thread after every change of a job."""
        folder = self.folders.get(job.folder)
        kind = event.kind if event is not None else None
        if kind == ev.WARNING:
            assert event is not None
            self._post(
                self.server.window_log_message,
                types.LogMessageParams(
                    type=types.MessageType.Warning, message=str(event.data.get("message"))
                ),
            )
            return
        if kind in (ev.CANDIDATE, ev.REVERIFYING):
            self._post(self.progress.report, job)
            return
        if folder is not None and (kind in _REPORTED_EVENTS or job.state == JobStatus.DONE):
            folder.index.refresh()  # the store changed: load it here, off the loop thread
        if kind in (ev.ITERATION_FINISHED, ev.RUN_FINISHED) or job.state == JobStatus.DONE:
            job.failures = self._failures_of(job.store, job.run_id)
        if job.state == JobStatus.DONE:
            if folder is None or folder.index.get(job.run_id) is None:
                self.finished_jobs[job.run_id] = job
            self._post(self._job_done, job)
            return
        self._post(self._job_changed, job)

    def _failures_of(self, store: Any, run_id: str) -> Failures:
        """The run's failed candidates as stored (worker thread: the store read stays off the loop)."""
        try:
            return tally(store.candidates(run_id))
        except Exception:  # a store being replaced under us: the counts are a courtesy, never an error
            log.exception("counting the failed candidates of run %s failed", run_id)
            return Failures()

    def _job_changed(self, job: Job) -> None:
        self.progress.report(job)
        # with the job's own count: the summary may already be the stored run's, which has none
        self._send_update(job.run_id, {"failures": job.failures.to_dict()})
        self._refresh_editor()

    def _job_done(self, job: Job) -> None:
        self.progress.end(job)
        # the stored run's summary now, with the failures this search counted (stored summaries leave
        # them to the report: counting them for every listed run would read every candidate)
        self._send_update(job.run_id, {"failures": job.failures.to_dict()})
        self._refresh_editor()
        failed = f" ({job.failures.text()})" if job.failures.failed else ""
        if job.status == RunStatus.FAILED:
            self._show(self._failure_text(job), types.MessageType.Error)
        elif job.status == RunStatus.INTERRUPTED:  # e.g. the LLM endpoint failed; stored, resumable
            self._show(
                f"speedpatch: optimizing {job.kernel} stopped: {job.message}{failed}", types.MessageType.Warning
            )
        elif job.speedup and job.speedup > 1.0:
            asyncio.ensure_future(self._offer_result(job))
        elif job.status == RunStatus.FINISHED and job.failures.failed:
            # nothing faster, and some candidates failed: say why, the report has each one's reason
            text = (f"speedpatch: no faster version of {job.kernel} in {Path(job.path).name} found; "
                    f"{job.failures.text()} — see the report")
            asyncio.ensure_future(self._ask(job, text, [REPORT_BUTTON]))

    def _failure_text(self, job: Job) -> str:
        """Why a search failed, in one line. When the user's own code failed its first evaluation, it says
        so as the lens does, with the compiler's first error at the user's line (the scratch copy's path and
        the repeated log stay out: the Problems view has every error at its place)."""
        located = self.locate(job.run_id)
        record = located[1] if located else None
        failure = baseline_failure(record) if record is not None else ""
        ev = record.baseline.evaluation if record is not None and record.baseline is not None else None
        if not failure or ev is None:
            return f"speedpatch: optimizing {job.kernel} failed: {job.message}"
        errors = compiler_errors(f"{ev.message}\n{ev.log or ''}", job.path)
        if errors:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            why = f"{Path(job.path).name} line {errors[0].line + 1}: {errors[0].message}{more}"
        else:
            why = first_line(relabel(ev.message or ev.status, job.path))
        return f"speedpatch: {job.kernel} {failure}: {why}; see Problems"

    async def _offer_result(self, job: Job) -> None:
        """The finished search, with its next steps as buttons (Show diff, Apply; the report when candidates
        failed, which it explains one by one)."""
        located = self.locate(job.run_id)
        record = located[1] if located else None
        if record is None or not has_winner(record):
            return
        text = f"speedpatch: {job.kernel} in {Path(job.path).name} can run {record.verdict.short}"
        buttons = [SHOW_DIFF_BUTTON, APPLY_BUTTON]
        if job.failures.failed:
            text += f"; {job.failures.text()} — see the report"
            buttons.append(REPORT_BUTTON)
        await self._ask(job, text, buttons)

    async def _ask(self, job: Job, text: str, buttons: list[str]) -> None:
        """An Info message about a finished search with buttons; the chosen one goes to on_button."""
        actions = [types.MessageActionItem(title=title) for title in buttons]
        try:
            chosen = await self.server.window_show_message_request_async(
                types.ShowMessageRequestParams(type=types.MessageType.Info, message=text, actions=actions)
            )
        except Exception:  # the client went away or cannot show requests
            log.info("the result message of run %s was not answered", job.run_id)
            return
        if chosen is not None and self.on_button is not None:
            await self.on_button(job.run_id, chosen.title)

    def _send_update(self, run_id: str, extra: dict[str, Any] | None = None) -> None:
        summary = self.summary(run_id)
        if summary is not None:
            self.server.protocol.notify(RUN_UPDATE, {**summary, **(extra or {})})


def _labelled(summary: dict[str, Any], folder: Folder | None) -> dict[str, Any]:
    """Name the workspace folder a run belongs to (extra fields, see docs/lsp-protocol.md)."""
    if folder is not None:
        summary["folder"] = folder.name
        summary["folderUri"] = folder.uri
    return summary
