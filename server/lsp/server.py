"""The speedpatch language server: creation, LSP feature handlers, and main() (stdio)."""

from __future__ import annotations

import logging
import os
import sys

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from . import commands, requests
from .actions import actions_for, quick_fixes
from .documents import kernel_at_line
from .hints import explain, hint_for
from .lenses import lenses_for, syntax_lenses
from .positions import line_end
from .session import Session

log = logging.getLogger(__name__)

VERSION = "0.1.0"


class SpeedpatchServer(LanguageServer):
    def report_server_error(self, error: Exception, source) -> None:
        # Log instead of popping an "Error in server" message for every failed notification: the
        # handlers report user-facing problems themselves with clear messages.
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)


def create_server() -> SpeedpatchServer:
    server = SpeedpatchServer("speedpatch", VERSION, text_document_sync_kind=types.TextDocumentSyncKind.Full)
    session = Session(server)
    server.session = session  # type: ignore[attr-defined]

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        session.initialize(params)

    @server.feature(types.INITIALIZED)
    def initialized(params: types.InitializedParams) -> None:
        session.start_watching()
        session.refresh_editor()

    @server.feature(types.SHUTDOWN)
    def shutdown(params: None) -> None:
        session.shutdown()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        session.publish_diagnostics(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        session.publish_diagnostics(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        session.on_save(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        session.detector.forget(uri)
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        if isinstance(params.settings, dict) and params.settings:
            session.set_client_settings(params.settings)
            return
        # pull-model clients send an empty notification: ask for the "speedpatch" section instead
        caps = server.client_capabilities.workspace if server.client_capabilities else None
        if caps and caps.configuration:
            query = types.ConfigurationParams(items=[types.ConfigurationItem(section="speedpatch")])
            server.workspace_configuration(
                query, callback=lambda found: session.set_client_settings(found[0] if found else None)
            )

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_workspace_folders(params: types.DidChangeWorkspaceFoldersParams) -> None:
        # pygls advertises workspaceFolders {supported, changeNotifications} and keeps its own list;
        # the session opens and closes each folder's configuration, store and watch
        session.change_folders(list(params.event.added or []), list(params.event.removed or []))

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancel(params: types.WorkDoneProgressCancelParams) -> None:
        session.cancel_token(params.token)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.RefactorRewrite, types.CodeActionKind.QuickFix]
        ),
    )
    def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        views, _, _ = session.views(uri)
        here = kernel_at_line([v.kernel for v in views], params.range.start.line, params.range.end.line)
        out: list[types.CodeAction] = []
        for view in views:
            if view.kernel in here:
                out += actions_for(view, uri)
        out += quick_fixes(list(params.context.diagnostics or []))
        only = params.context.only
        if only:
            out = [a for a in out if a.kind and any(a.kind.startswith(str(k)) for k in only)]
        return out

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(params: types.CodeLensParams) -> list[types.CodeLens]:
        uri = params.text_document.uri
        views, detection, _ = session.views(uri)
        return syntax_lenses(detection) + [lens for view in views for lens in lenses_for(view, uri)]

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
    def inlay_hint(params: types.InlayHintParams) -> list[types.InlayHint]:
        uri = params.text_document.uri
        views, _, text = session.views(uri)
        encoding = server.workspace.position_encoding or types.PositionEncodingKind.Utf16
        first, last = params.range.start.line, params.range.end.line
        out = []
        for view in views:
            if first <= view.kernel.signature_line <= last:
                hint = hint_for(view, line_end(text, view.kernel.signature_line, encoding))
                if hint is not None:
                    out.append(hint)
        return out

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        """On a kernel's signature line: what its last figures say and how they were measured."""
        views, _, _ = session.views(params.text_document.uri)
        for view in views:
            if view.kernel.signature_line == params.position.line:
                text = explain(view)
                if text:
                    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))
        return None

    commands.register(server, session)
    requests.register(server, session)
    return server


def main(argv: list[str] | None = None) -> int:
    """Serve over stdio. Logs go to stderr at WARNING: pygls logs whole messages at INFO, and those can
    hold the API key sent in initializationOptions, which must never be logged."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="speedpatch-lsp %(levelname)s %(message)s"
    )
    logging.getLogger("pygls").setLevel(logging.WARNING)
    # stdout is the LSP channel: keep a private copy of it for pygls and point file descriptor 1 (and
    # sys.stdout) at stderr, so a stray print or a child process writing to its stdout cannot corrupt it.
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    server = create_server()
    server.start_io(stdin=sys.stdin.buffer, stdout=channel)
    return 0
