"""The speedpatch language server: the LSP feature handlers, create_server() and main() (stdio).

One module-level handler per LSP method, each given the server as `ls` (pygls passes it to a handler whose
first parameter is named so) and delegating to `ls.state` (state.py); create_server() registers them, the
commands (commands.py) and the custom requests (requests.py) on a fresh server.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from lsprotocol import types
from speedpatch.redact import redact

from . import commands, requests
from .actions import actions_for, quick_fixes
from .documents import kernel_at_line
from .hints import explain, hint_for
from .lenses import lenses_for, syntax_lenses
from .positions import line_start
from .state import SpeedpatchServer

log = logging.getLogger(__name__)

VERSION = "0.1.0"
CODE_ACTION_OPTIONS = types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.RefactorRewrite, types.CodeActionKind.QuickFix]
)


def initialize(ls: SpeedpatchServer, params: types.InitializeParams) -> None:
    """Open the workspace folders with the editor's settings; start the run worker."""
    ls.state.initialize(params)


def initialized(ls: SpeedpatchServer, params: types.InitializedParams) -> None:
    """Watch the folders; show what the documents opened so far hold."""
    ls.state.start_watching()
    ls.state.refresh_editor()


def shutdown(ls: SpeedpatchServer, params: None) -> None:
    """Stop watching; the running search is cancelled (stored, resumable)."""
    ls.state.shutdown()


def did_open(ls: SpeedpatchServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.state.publish_diagnostics(params.text_document.uri)


def did_change(ls: SpeedpatchServer, params: types.DidChangeTextDocumentParams) -> None:
    """Diagnostics follow the text, and so do the lenses (a refresh when what they say changed)."""
    ls.state.publish_diagnostics(params.text_document.uri)


def did_save(ls: SpeedpatchServer, params: types.DidSaveTextDocumentParams) -> None:
    """Accept on save: a saved applied rewrite is re-verified (accept.py)."""
    ls.state.accept.on_save(params.text_document.uri)


def did_close(ls: SpeedpatchServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.state.forget(params.text_document.uri)


def did_change_configuration(ls: SpeedpatchServer, params: types.DidChangeConfigurationParams) -> None:
    """New editor settings: pushed in the notification, or pulled with workspace/configuration."""
    if isinstance(params.settings, dict) and params.settings:
        ls.state.set_client_settings(params.settings)
        return
    # pull-model clients send an empty notification: ask for the "speedpatch" section instead
    caps = ls.client_capabilities.workspace if ls.client_capabilities else None
    if caps and caps.configuration:
        query = types.ConfigurationParams(items=[types.ConfigurationItem(section="speedpatch")])
        ls.workspace_configuration(
            query, callback=lambda found: ls.state.set_client_settings(found[0] if found else None)
        )


def did_change_workspace_folders(ls: SpeedpatchServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    # pygls advertises workspaceFolders {supported, changeNotifications} and keeps its own list;
    # the state opens and closes each folder's configuration, store and watch
    ls.state.change_folders(list(params.event.added or []), list(params.event.removed or []))


def progress_cancel(ls: SpeedpatchServer, params: types.WorkDoneProgressCancelParams) -> None:
    """The progress notification's Cancel button: cancel that search."""
    ls.state.runs.cancel_token(params.token)


def code_action(ls: SpeedpatchServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """Optimize / Cancel / Show diff / Apply for the kernels under the cursor, and quick fixes."""
    uri = params.text_document.uri
    views, _, _ = ls.state.views.views(uri)
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


def code_lens(ls: SpeedpatchServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    """Each kernel's state and the commands that fit it (lenses.py)."""
    uri = params.text_document.uri
    views, detection, _ = ls.state.views.views(uri)
    return syntax_lenses(detection) + [lens for view in views for lens in lenses_for(view, uri)]


def inlay_hint(ls: SpeedpatchServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    """The verdict in a few words before each kernel's signature (hints.py)."""
    uri = params.text_document.uri
    views, _, text = ls.state.views.views(uri)
    encoding = ls.workspace.position_encoding or types.PositionEncodingKind.Utf16
    first, last = params.range.start.line, params.range.end.line
    out = []
    for view in views:
        if first <= view.kernel.signature_line <= last:
            hint = hint_for(view, line_start(text, view.kernel.signature_line, encoding))
            if hint is not None:
                out.append(hint)
    return out


def hover(ls: SpeedpatchServer, params: types.HoverParams) -> types.Hover | None:
    """On a kernel's signature line: what its last figures say and how they were measured."""
    views, _, _ = ls.state.views.views(params.text_document.uri)
    for view in views:
        if view.kernel.signature_line == params.position.line:
            text = explain(view)
            if text:
                return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))
    return None


FEATURES: list[tuple[str, Any, Any]] = [  # (LSP method, its options or None, handler)
    (types.INITIALIZE, None, initialize),
    (types.INITIALIZED, None, initialized),
    (types.SHUTDOWN, None, shutdown),
    (types.TEXT_DOCUMENT_DID_OPEN, None, did_open),
    (types.TEXT_DOCUMENT_DID_CHANGE, None, did_change),
    (types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False), did_save),
    (types.TEXT_DOCUMENT_DID_CLOSE, None, did_close),
    (types.WORKSPACE_DID_CHANGE_CONFIGURATION, None, did_change_configuration),
    (types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, None, did_change_workspace_folders),
    (types.WINDOW_WORK_DONE_PROGRESS_CANCEL, None, progress_cancel),
    (types.TEXT_DOCUMENT_CODE_ACTION, CODE_ACTION_OPTIONS, code_action),
    (types.TEXT_DOCUMENT_CODE_LENS, None, code_lens),
    (types.TEXT_DOCUMENT_INLAY_HINT, None, inlay_hint),
    (types.TEXT_DOCUMENT_HOVER, None, hover),
]


def create_server() -> SpeedpatchServer:
    """A fresh server with every feature, command and custom request registered."""
    server = SpeedpatchServer("speedpatch", VERSION, text_document_sync_kind=types.TextDocumentSyncKind.Full)
    for method, options, handler in FEATURES:
        server.feature(method, options)(handler)
    commands.register(server)
    requests.register(server)
    return server


class ScrubbedFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def main(argv: list[str] | None = None) -> int:
    """Serve over stdio. Logs go to stderr at WARNING: pygls logs whole messages at INFO, and those can
    hold the API key sent in initializationOptions, which must never be logged."""
    stderr = logging.StreamHandler(sys.stderr)
    # the editor shows stderr in its output: a logged exception may quote a key
    stderr.setFormatter(ScrubbedFormatter("speedpatch-lsp %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[stderr])
    logging.getLogger("pygls").setLevel(logging.WARNING)
    # stdout is the LSP channel: keep a private copy of it for pygls and point file descriptor 1 (and
    # sys.stdout) at stderr, so a stray print or a child process writing to its stdout cannot corrupt it.
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    server = create_server()
    server.start_io(stdin=sys.stdin.buffer, stdout=channel)
    return 0
