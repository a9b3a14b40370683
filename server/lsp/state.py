"""The language server object and the state it carries: settings -> config per workspace folder, the
parts that do the work (document views, staleness tracking, the run controller, accept on save, the file
watcher), and the editor refresh that follows any change.

Each workspace folder has its own configuration, run store and index (folders.py); a document is served
by the folder that owns it. One run controller serves all folders, one search at a time.

Threading: LSP handlers run on the asyncio loop thread. Searches run on the run worker thread,
re-verifications on a one-thread executor, the file watcher on watchdog's thread. Anything those threads
want to send to the client goes through `post`, so all outgoing messages are written from the loop thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path
from speedpatch.config import Config
from speedpatch.redact import known_secrets, redact, redact_data

from . import settings as settings_mod
from .accept import AcceptOnSave
from .backends import BackendChooser
from .controller import RunController
from .diagnostics import diagnostics_for
from .documents import Detection, Detector
from .docviews import DocumentViews
from .engine import find_findings, find_kernels, find_syntax_error, warm_up
from .folders import Folder, Folders, config_error_messages, initial_roots
from .index import norm_path
from .staleness import StalenessTracker
from .views import KernelView

if TYPE_CHECKING:
    from pygls.server import ServerErrors

    from .watcher import WorkspaceWatcher

log = logging.getLogger(__name__)

RUNS_CHANGED = "speedpatch/runsChanged"


class ScrubbedProtocol(LanguageServerProtocol):
    """Every message to the editor passes redact, at the one place they all leave: a key quoted in an
    error response's traceback, a log message or any text a handler forgot to scrub stays here."""

    def _send_data(self, data: Any) -> None:
        if data and known_secrets():
            data = redact_data(json.loads(json.dumps(data, default=self._serialize_message)))
        super()._send_data(data)


class SpeedpatchServer(LanguageServer):
    """pygls's server with speedpatch's state; handlers reach it as `ls.state`."""

    def __init__(self, name: str, version: str, **kwargs: Any):
        super().__init__(name, version, protocol_cls=ScrubbedProtocol, **kwargs)
        self.state = ServerState(self)

    def report_server_error(self, error: Exception, source: ServerErrors) -> None:
        # Log instead of popping an "Error in server" message for every failed notification: the
        # handlers report user-facing problems themselves with clear messages.
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)


class ServerState:
    def __init__(self, server: LanguageServer):
        self.server = server
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread: int | None = None
        self.fallback_root = Path.cwd()  # the first folder at start (or cwd): reopened when none is left
        self.client_settings: dict[str, Any] = {}
        self.folders = Folders()
        self.detector = Detector(find_kernels, find_findings, find_syntax_error)
        self.backends = BackendChooser()
        # the views, the staleness and the run controller refer to each other through these late lookups
        self.views = DocumentViews(
            server, self.folders, self.detector, self.backends,
            job_for=lambda path, kernel: self.runs.job_for(path, kernel),
            external_staleness=lambda run_id: self.staleness.external(run_id),
        )
        self.staleness = StalenessTracker(self.views)
        self.runs = RunController(
            server, self.folders, self.views, self.staleness, self.make_config, self.post, self.show,
            self.refresh_editor,
        )
        self.accept = AcceptOnSave(self.views, self.make_config, self.show, self.refresh_editor)
        self.watcher: WorkspaceWatcher | None = None
        self._lens_states: dict[str, tuple] = {}  # uri -> what its lenses showed last (see publish_diagnostics)

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
        self.runs.start()

    def _open_folder(self, root: str, name: str) -> Folder:
        folder = Folder(Path(norm_path(root)), name, lambda m: self.show(m, types.MessageType.Warning))
        self._load_config(folder)
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
            self.runs.cancel_in(folder)
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

    def start_watching(self) -> None:
        warm_up()
        from .watcher import WorkspaceWatcher  # watchdog and the targets load after start-up, not before it

        self.watcher = WorkspaceWatcher(self.folders, self.on_store_change, self.on_config_change, self.on_disk_change)
        self.watcher.start(self.folders.all())

    def shutdown(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        self.runs.shutdown()
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
        # the editor's messages are shown, and often logged: no known secret (a key in a quoted base URL)
        self.post(self.server.window_show_message, types.ShowMessageParams(type=kind, message=redact(message)))

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
            self._load_config(folder)
        self.backends.clear()
        self._announce_config_errors(folders)

    def _load_config(self, folder: Folder) -> None:
        if folder.reload_config(self.overrides()):
            folder.config_error = settings_mod.name_setting(folder.config_error, self.client_settings)

    def _announce_config_errors(self, folders: list[Folder]) -> None:
        for message in config_error_messages(folders, named=len(self.folders) > 1):
            self.show(message, types.MessageType.Error)

    # ---------------------------------------------------------------- changes (watcher thread)
    def on_disk_change(self, path: str) -> None:
        """A kernel file changed on disk outside the editor: its runs may have gone stale (or fresh)."""
        if self.staleness.on_disk_change(path):
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
        """Ask the client to re-request lenses and hints; re-publish diagnostics of open documents.
        Safe from any thread (posted to the loop thread)."""
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
        views, detection, text = self.views.views(uri)
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

    def forget(self, uri: str) -> None:
        """A document was closed: drop what was cached for it and clear its diagnostics."""
        self.detector.forget(uri)
        self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def _lens_state(views: list[KernelView], detection: Detection) -> tuple:
    """What the lenses of a document depend on, besides live jobs (those refresh on their own events)."""
    return (detection.syntax, tuple(
        (v.kernel.name, v.runnable, v.freshness, v.record.run_id if v.record else None,
         v.verification.state if v.verification else None, v.saved)
        for v in views
    ))
