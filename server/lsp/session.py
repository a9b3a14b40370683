"""The server's state and its glue: settings -> config, documents -> kernel views, runs -> LSP messages.

Each workspace folder has its own configuration, run store and index (folders.py); a document is served
by the folder that owns it. One run manager serves all folders, one search at a time.

Threading: LSP handlers run on the asyncio loop thread. Searches run on the RunManager's worker thread,
re-verifications on a one-thread executor, the file watcher on watchdog's thread. Anything those threads
want to send to the client goes through `post`, so all outgoing messages are written from the loop thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from speedpatch.config import Config
from speedpatch.engine import events as ev
from speedpatch.errors import UserError
from speedpatch.model import Kernel
from speedpatch.store import RunRecord

from . import settings as settings_mod
from .accept import AcceptOnSave
from .backends import BackendChooser
from .diagnostics import diagnostics_for
from .documents import Detection, Detector, kernel_named
from .engine import api, find_findings, find_kernels, find_syntax_error, warm_up
from .failures import Failures, tally
from .folders import Folder, Folders, config_error_messages, initial_roots
from .index import norm_path
from .lenses import RESUMABLE
from .progress import RunProgress, token_for
from .reports import summary_of_job, summary_of_record
from .runs import DONE, Job, RunManager
from .views import APPLIED, STALE, KernelView, disk_staleness, freshness, has_winner, verification_for

log = logging.getLogger(__name__)

RUN_UPDATE = "speedpatch/runUpdate"
OPEN_DIFF = "speedpatch/openDiff"
OPEN_REPORT = "speedpatch/openReport"
RUNS_CHANGED = "speedpatch/runsChanged"
SHOW_DIFF_BUTTON, APPLY_BUTTON, REPORT_BUTTON = "Show diff", "Apply", "Show report"
_REPORTED_EVENTS = {ev.RUN_STARTED, ev.BASELINE, ev.ITERATION_STARTED, ev.ITERATION_FINISHED, ev.RUN_FINISHED}


class Session:
    def __init__(self, server: LanguageServer):
        self.server = server
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread: int | None = None
        self.fallback_root = Path.cwd()  # the first folder at start (or cwd): reopened when none is left
        self.client_settings: dict[str, Any] = {}
        self.folders = Folders()
        self.detector = Detector(find_kernels, find_findings, find_syntax_error)
        self.backends = BackendChooser()
        self.runs: RunManager | None = None
        self.accept = AcceptOnSave(self)
        self.progress = RunProgress(server, lambda run_id: self.runs.position(run_id) if self.runs else -1)
        self.external_stale: dict[str, str] = {}  # run id -> why (file changed on disk outside the editor)
        self.finished_jobs: dict[str, Job] = {}  # runs that ended before the store knew them
        self._winner_texts: dict[tuple[str, str], str | None] = {}
        self._lens_states: dict[str, tuple] = {}  # uri -> what its lenses showed last (see publish_diagnostics)
        self.watcher: Any = None

    # ---------------------------------------------------------------- lifecycle
    def initialize(self, params: types.InitializeParams) -> None:
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()
        roots = initial_roots(params)
        if roots:
            self.fallback_root = Path(norm_path(roots[0][0]))
        self.client_settings = settings_mod.unwrap(params.initialization_options)
        for root, name in roots:
            self._open_folder(root, name)
        if not len(self.folders):
            self._open_folder(str(self.fallback_root), "")
        self._announce_config_errors(self.folders.all())
        self.runs = RunManager(self._on_job)

    def _open_folder(self, root: str, name: str) -> Folder:
        folder = Folder(Path(norm_path(root)), name, lambda m: self.show(m, types.MessageType.Warning))
        folder.reload_config(self.overrides())
        self.folders.add(folder)
        return folder

    def change_folders(self, added: list[types.WorkspaceFolder], removed: list[types.WorkspaceFolder]) -> None:
        """workspace/didChangeWorkspaceFolders: open added folders, close removed ones. Searches of a
        removed folder are cancelled (as closing a window would stop them); they stay resumable there."""
        for gone in removed:
            root = to_fs_path(gone.uri)
            folder = self.folders.remove(norm_path(root)) if root else None
            if folder is None:
                continue
            if self.watcher is not None:
                self.watcher.unwatch(folder)
            for job in self.runs.active() if self.runs else []:
                if job.folder == str(folder.root):
                    self.runs.cancel(job.run_id)
        opened = []
        for new in added:
            root = to_fs_path(new.uri)
            if root and self.folders.get(norm_path(root)) is None:
                opened.append(self._open_folder(root, new.name))
        if not len(self.folders):  # the last one went: files are served as before any folder was open
            opened.append(self._open_folder(str(self.fallback_root), ""))
        self.backends.clear()
        self._announce_config_errors(opened)
        if self.watcher is not None:
            for folder in opened:
                self.watcher.watch(folder)
        self.server.protocol.notify(RUNS_CHANGED, {})
        self.refresh_editor()

    def folder_for(self, path: str) -> Folder:
        return self.folders.owner(path)

    def locate(self, run_id: str) -> tuple[Folder, RunRecord] | None:
        """The stored run with this id and the folder whose store holds it."""
        for folder in self.folders.all():
            record = folder.index.get(run_id)
            if record is not None:
                return folder, record
        return None

    def start_watching(self) -> None:
        warm_up()
        from .watcher import WorkspaceWatcher

        self.watcher = WorkspaceWatcher(self)
        self.watcher.start(self.folders.all())

    def shutdown(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        if self.runs is not None:
            self.runs.shutdown()
            self.runs.join(timeout=5)
        self.accept.shutdown()

    # ---------------------------------------------------------------- threads -> loop
    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run fn on the LSP loop thread (directly when already there)."""
        if self.loop is None or threading.get_ident() == self.loop_thread:
            fn(*args)
            return
        try:
            self.loop.call_soon_threadsafe(self._safely, fn, *args)
        except RuntimeError:  # loop closed: the session is over
            pass

    @staticmethod
    def _safely(fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("sending to the client failed")

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.post(self.server.window_show_message, types.ShowMessageParams(type=kind, message=message))

    # ---------------------------------------------------------------- configuration
    def set_client_settings(self, raw: Any) -> None:
        self.client_settings = settings_mod.unwrap(raw)
        self.reload_config(self.folders.all())
        self.refresh_editor()

    def overrides(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The editor settings (same for every folder) as config overrides, plus extra ones."""
        overrides = settings_mod.to_overrides(self.client_settings)
        return settings_mod.merge(overrides, extra) if extra else overrides

    def make_config(self, folder: Folder, extra: dict[str, Any] | None = None) -> Config:
        return folder.make_config(self.overrides(extra))

    def reload_config(self, folders: list[Folder]) -> None:
        """Reload these folders' configurations and report new errors; a folder with an error keeps its
        last good configuration (its kernels still show) and refuses runs until it is fixed."""
        for folder in folders:
            folder.reload_config(self.overrides())
        self.backends.clear()
        self._announce_config_errors(folders)

    def _announce_config_errors(self, folders: list[Folder]) -> None:
        for message in config_error_messages(folders, named=len(self.folders) > 1):
            self.show(message, types.MessageType.Error)

    # ---------------------------------------------------------------- documents and views
    def path_of(self, uri: str) -> str | None:
        if not uri.startswith("file:"):
            return None
        fs = to_fs_path(uri)
        return norm_path(fs) if fs else None

    def text_of(self, uri: str) -> str | None:
        """The editor's buffer when open, else the file on disk."""
        try:
            doc = self.server.workspace.text_documents.get(uri)
        except RuntimeError:
            doc = None
        if doc is not None:
            return doc.source
        path = self.path_of(uri)
        if path is None:
            return None
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def detect(self, uri: str) -> tuple[Detection, str, str | None]:
        text = self.text_of(uri)
        path = self.path_of(uri)
        if text is None or path is None:
            return Detection(), text or "", path
        return self.detector.detect(uri, path, text), text, path

    def views(self, uri: str) -> tuple[list[KernelView], Detection, str]:
        detection, text, path = self.detect(uri)
        if path is None:
            return [], detection, text
        return [self._view(k, path, detection) for k in detection.kernels], detection, text

    def view(self, uri: str, kernel: str) -> KernelView | None:
        views, _, _ = self.views(uri)
        return next((v for v in views if v.kernel.name == kernel), None)

    def _view(self, kernel: Kernel, path: str, detection: Detection) -> KernelView:
        folder = self.folder_for(path)
        backend = self.backends.backend_for(kernel.target, folder.config)
        runnable, reason, untimed = kernel.runnable, kernel.reason, False
        if runnable and detection.syntax:
            # the baseline would fail to compile: say why now, where the user is typing
            runnable, reason = False, f"the file does not parse ({detection.syntax})"
        if runnable:
            if not backend:
                runnable, reason = False, f"no backend configured for target {kernel.target}"
            else:
                avail = self.backends.availability(kernel.target, backend, folder.config)
                if not avail.usable:
                    runnable, reason = False, f"backend {backend} is not usable here: {avail.reason}"
                    untimed = self.backends.cannot_time(kernel.target, backend)
        view = KernelView(kernel=kernel, backend=backend, runnable=runnable, reason=reason, untimed=untimed)
        assert self.runs is not None
        view.job = self.runs.job_for(path, kernel.name)
        record = folder.index.latest(path, kernel.name)
        if record is None or (view.job is not None and view.job.run_id == record.run_id):
            return view
        view.record = record
        state, why = freshness(
            record, kernel, self.winner_text(record), self.external_stale.get(record.run_id, "")
        )
        view.freshness, view.stale_reason = state, why
        if state == APPLIED:
            view.verification = verification_for(folder.verifications.get(record.run_id), kernel)
            view.saved = self._disk_holds(path, kernel)
        return view

    def _disk_holds(self, path: str, kernel: Kernel) -> bool:
        """Whether the file on disk has this kernel text (an applied rewrite that was saved)."""
        try:
            disk = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        on_disk = kernel_named(self.detector.detect(f"speedpatch-disk:{path}", path, disk).kernels, kernel.name)
        return on_disk is not None and on_disk.text.rstrip() == kernel.text.rstrip()

    def winner_text(self, record: RunRecord) -> str | None:
        """The winning candidate's kernel text (what the document holds once the rewrite is applied)."""
        if record.best is None or record.baseline is None or record.best.id == record.baseline.id:
            return None
        # (run, candidate) names immutable content, so entries never go stale
        key = (record.run_id, record.best.id)
        if key in self._winner_texts:
            return self._winner_texts[key]
        found = self.detector.detect(f"speedpatch-run:{record.run_id}", record.path, record.best.source)
        winner = kernel_named(found.kernels, record.kernel)
        text = winner.text if winner else None
        self._winner_texts[key] = text
        return text

    def is_stale(self, folder: Folder, record: RunRecord) -> bool:
        if record.run_id in self.external_stale:
            return True
        path = folder.index.path_of(record)
        uri = self.uri_for_path(path)
        text = self.text_of(uri)
        if text is None:
            return False
        found = self.detector.detect(uri, path, text)
        state, _ = freshness(record, kernel_named(found.kernels, record.kernel), self.winner_text(record))
        return state == STALE

    def uri_for_path(self, path: str) -> str:
        # prefer the exact uri the editor used for an open document
        for uri in list(self.server.workspace.text_documents):
            if self.path_of(uri) == path:
                return uri
        return from_fs_path(path) or path

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
        summary = summary_of_record(record, folder.index.path_of(record), self.is_stale(folder, record))
        return _labelled(summary, folder)

    def _job_summary(self, job: Job) -> dict[str, Any]:
        return _labelled(summary_of_job(job), self.folders.get(job.folder))

    # ---------------------------------------------------------------- runs
    def start_run(self, uri: str, kernel: str, quick: bool) -> str:
        assert self.runs is not None
        path = self.path_of(uri)
        text = self.text_of(uri)
        if path is None or text is None:
            raise UserError(f"cannot optimize {uri}: only files on disk can be optimized")
        folder = self.folder_for(path)
        if folder.config_error:
            raise UserError(f"fix the configuration first: {folder.config_error}")
        view = self.view(uri, kernel)
        if view is None:
            names = ", ".join(v.kernel.name for v in self.views(uri)[0]) or "none"
            raise UserError(f"no kernel named {kernel!r} in {Path(path).name} (kernels found: {names})")
        if not view.runnable:
            raise UserError(f"cannot optimize {kernel}: {view.reason}")
        if view.job is not None:
            raise UserError(f"{kernel} is already being optimized (run {view.job.run_id})")
        config = self.make_config(folder, settings_mod.QUICK_OVERRIDES if quick else None)
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
        job = Job(run_id=record.run_id, uri=self.uri_for_path(path), path=path, problem=record.problem,
                  config=self.make_config(folder), store=folder.store, folder=str(folder.root), resume=True)
        job.iterations = record.iterations
        return self._submit(job)

    def _submit(self, job: Job) -> str:
        assert self.runs is not None
        if self.progress.supported():
            job.token = token_for(job.run_id, time.monotonic_ns() if job.resume else 0)
        self.runs.submit(job)
        self.progress.begin(job)
        self.refresh_editor()
        return job.run_id

    def cancel(self, run_id: str) -> bool:
        assert self.runs is not None
        return self.runs.cancel(run_id)

    def cancel_token(self, token: Any) -> None:
        assert self.runs is not None
        for job in self.runs.active():
            if job.token and job.token == token:
                self.runs.cancel(job.run_id)

    def _on_job(self, job: Job, event: ev.Event | None) -> None:
        """Called on the run worker thread after every change of a job."""
        folder = self.folders.get(job.folder)
        kind = event.kind if event is not None else None
        if kind == ev.WARNING:
            self.post(
                self.server.window_log_message,
                types.LogMessageParams(
                    type=types.MessageType.Warning, message=str(event.data.get("message"))
                ),
            )
            return
        if kind == ev.CANDIDATE:
            self.post(self.progress.report, job)
            return
        if folder is not None and (kind in _REPORTED_EVENTS or job.state == DONE):
            folder.index.refresh()  # the store changed: load it here, off the loop thread
        if kind in (ev.ITERATION_FINISHED, ev.RUN_FINISHED) or job.state == DONE:
            job.failures = self._failures_of(job.store, job.run_id)
        if job.state == DONE:
            if folder is None or folder.index.get(job.run_id) is None:
                self.finished_jobs[job.run_id] = job
            self.post(self._job_done, job)
            return
        self.post(self._job_changed, job)

    def _job_changed(self, job: Job) -> None:
        self.progress.report(job)
        # with the job's own count: the summary may already be the stored run's, which has none
        self._send_update(job.run_id, {"failures": job.failures.to_dict()})
        self.refresh_editor()

    def _failures_of(self, store: Any, run_id: str) -> Failures:
        """The run's failed candidates as stored (worker thread: the store read stays off the loop)."""
        try:
            return tally(store.candidates(run_id))
        except Exception:  # a store being replaced under us: the counts are a courtesy, never an error
            log.exception("counting the failed candidates of run %s failed", run_id)
            return Failures()

    def _job_done(self, job: Job) -> None:
        self.progress.end(job)
        # the stored run's summary now, with the failures this search counted (stored summaries leave
        # them to the report: counting them for every listed run would read every candidate)
        self._send_update(job.run_id, {"failures": job.failures.to_dict()})
        self.refresh_editor()
        failed = f" ({job.failures.text()})" if job.failures.failed else ""
        if job.status == "failed":
            self.show(f"speedpatch: optimizing {job.kernel} failed: {job.message}", types.MessageType.Error)
        elif job.status == "interrupted":  # e.g. the LLM endpoint failed; the run is stored, resumable
            self.show(
                f"speedpatch: optimizing {job.kernel} stopped: {job.message}{failed}", types.MessageType.Warning
            )
        elif job.speedup and job.speedup > 1.0:
            asyncio.ensure_future(self._offer_result(job))
        elif job.status == "finished" and job.failures.failed:
            # nothing faster, and some candidates failed: say why, the report has each one's reason
            text = (f"speedpatch: no faster version of {job.kernel} in {Path(job.path).name} found; "
                    f"{job.failures.text()} — see the report")
            asyncio.ensure_future(self._ask(job, text, [REPORT_BUTTON]))

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
        """An Info message about a finished search with buttons, and what the chosen one does."""
        actions = [types.MessageActionItem(title=title) for title in buttons]
        try:
            chosen = await self.server.window_show_message_request_async(
                types.ShowMessageRequestParams(type=types.MessageType.Info, message=text, actions=actions)
            )
        except Exception:  # the client went away or cannot show requests
            log.info("the result message of run %s was not answered", job.run_id)
            return
        from .commands import apply_run, candidate  # the command handlers import this module

        if chosen is not None and chosen.title == SHOW_DIFF_BUTTON:
            payload = candidate(self, job.run_id, "")
            self.server.protocol.notify(
                OPEN_DIFF,
                {"runId": payload["runId"], "candidateId": payload["candidateId"], "title": payload["title"]},
            )
        elif chosen is not None and chosen.title == APPLY_BUTTON:
            await apply_run(self.server, self, job.run_id)
        elif chosen is not None and chosen.title == REPORT_BUTTON:
            self.server.protocol.notify(OPEN_REPORT, {"runId": job.run_id})

    def _send_update(self, run_id: str, extra: dict[str, Any] | None = None) -> None:
        summary = self.summary(run_id)
        if summary is not None:
            self.server.protocol.notify(RUN_UPDATE, {**summary, **(extra or {})})

    # ---------------------------------------------------------------- accept on save
    def on_save(self, uri: str) -> None:
        self.accept.on_save(uri)

    # ---------------------------------------------------------------- external changes
    def on_disk_change(self, path: str) -> None:
        """A kernel file changed on disk (watcher thread). Saves from the editor leave disk == buffer and
        are not external; anything else that no longer matches a run's start or winner marks it stale."""
        # any folder's runs may describe the file (nested folders: the outer one may hold older runs)
        records = [r for folder in self.folders.all() for r in folder.index.for_path(path)]
        if not records:
            return  # no run describes this file: nothing can go stale
        uri = self.uri_for_path(path)
        try:
            disk = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            disk = None
        buffer = self.server.workspace.text_documents.get(uri)
        if buffer is not None and disk is not None and buffer.source == disk:
            return
        changed = False
        for record in records:
            current = None
            if disk is not None:
                found = self.detector.detect(f"speedpatch-disk:{path}", path, disk)
                current = kernel_named(found.kernels, record.kernel)
            why = disk_staleness(record, disk, current, self.winner_text(record))
            if why and self.external_stale.get(record.run_id) != why:
                self.external_stale[record.run_id] = why
                changed = True
            elif not why and record.run_id in self.external_stale:
                del self.external_stale[record.run_id]
                changed = True
        if changed:
            self.post(self.refresh_editor)

    def on_store_change(self, folder: Folder | None = None) -> None:
        """A store changed (watcher thread): this folder's, or any (the periodic poll)."""
        reloaded = [f.index.refresh() for f in ([folder] if folder else self.folders.all())]
        if any(reloaded):
            self.post(self.refresh_editor)

    def on_config_change(self, folder: Folder) -> None:
        self.reload_config([folder])
        self.post(self.refresh_editor)

    # ---------------------------------------------------------------- editor refresh
    def _refresh_lenses_if_changed(self, uri: str, views: list[KernelView], detection: Detection) -> None:
        """An edit that changes what the lenses say (the rewrite applied, the kernel edited, a typo that
        breaks parsing) asks for new lenses at once: VS Code re-requests them only after a delay, so the
        lens would contradict the inlay hint meanwhile."""
        state = _lens_state(views, detection)
        before = self._lens_states.get(uri)
        self._lens_states[uri] = state
        if before is None or before == state:
            return
        caps = self.server.client_capabilities.workspace if self.server.client_capabilities else None
        if caps and caps.code_lens and caps.code_lens.refresh_support:
            self.server.workspace_code_lens_refresh(None)

    def refresh_editor(self) -> None:
        """Ask the client to re-request lenses and hints; re-publish diagnostics of open documents."""
        if threading.get_ident() != self.loop_thread:
            self.post(self.refresh_editor)
            return
        caps = self.server.client_capabilities.workspace if self.server.client_capabilities else None
        if caps and caps.code_lens and caps.code_lens.refresh_support:
            self.server.workspace_code_lens_refresh(None)
        if caps and caps.inlay_hint and caps.inlay_hint.refresh_support:
            self.server.workspace_inlay_hint_refresh(None)
        for uri in list(self.server.workspace.text_documents):
            self.publish_diagnostics(uri)

    def publish_diagnostics(self, uri: str) -> None:
        views, detection, text = self.views(uri)
        self._refresh_lenses_if_changed(uri, views, detection)
        doc = self.server.workspace.text_documents.get(uri)
        encoding = self.server.workspace.position_encoding or types.PositionEncodingKind.Utf16
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri,
                version=doc.version if doc else None,
                diagnostics=diagnostics_for(views, detection, text, encoding),
            )
        )


def _lens_state(views: list[KernelView], detection: Detection) -> tuple:
    """What the lenses of a document depend on, besides live jobs (those refresh on their own events)."""
    return (detection.syntax, tuple(
        (v.kernel.name, v.runnable, v.freshness, v.record.run_id if v.record else None,
         v.verification.state if v.verification else None, v.saved)
        for v in views
    ))


def _labelled(summary: dict[str, Any], folder: Folder | None) -> dict[str, Any]:
    """Name the workspace folder a run belongs to (extra fields, see docs/lsp-protocol.md)."""
    if folder is not None:
        summary["folder"] = folder.name
        summary["folderUri"] = folder.uri
    return summary
