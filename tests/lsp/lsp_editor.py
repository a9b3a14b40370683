"""Helpers to drive the real `python -m speedpatch.lsp` process over stdio with pytest-lsp's LanguageClient.

`Editor` plays the part of an editor: it keeps the documents it opened, applies workspace/applyEdit
requests to them, records the server's notifications and answers its refresh requests.
"""

from __future__ import annotations

import ast
import asyncio
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

TESTS = Path(__file__).resolve().parents[1]
FINAL = {"finished", "cancelled", "failed", "interrupted"}


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS / "toy"), str(TESTS), env.get("PYTHONPATH", "")])
    env["SPEEDPATCH_TARGET_MODULES"] = "toy_target"
    env.pop("SPEEDPATCH_API_KEY", None)
    env.pop("OPENAI_API_KEY", None)
    env.update(extra or {})
    return env


def plain(value: Any) -> Any:
    """Results of custom requests come back as namedtuples; compare them as dicts."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


class Editor:
    def __init__(self, client: LanguageClient, root: Path):
        self.client = client
        self.root = root
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.run_updates: list[dict[str, Any]] = []
        self.open_diffs: list[dict[str, Any]] = []
        self.open_reports: list[dict[str, Any]] = []
        self.edits: list[types.ApplyWorkspaceEditParams] = []
        self.runs_changed = 0
        self.message_requests: list[types.ShowMessageRequestParams] = []
        self.answer: str | None = None  # the button the "user" presses on window/showMessageRequest
        self.lens_refreshes = 0
        # what the editor sent and was asked, in order: ("change", uri, version) and ("lens-refresh",)
        self.timeline: list[tuple[Any, ...]] = []
        self.hint_refreshes = 0
        self.stderr = b""
        self.capabilities: types.ServerCapabilities | None = None

    def uri(self, path: Path | str) -> str:
        return from_fs_path(str(Path(path).resolve())) or ""

    def folder(self, path: Path) -> types.WorkspaceFolder:
        return types.WorkspaceFolder(uri=self.uri(path), name=path.name)

    def change_folders(self, added: tuple[Path, ...] = (), removed: tuple[Path, ...] = ()) -> None:
        """workspace/didChangeWorkspaceFolders, as VS Code sends it when folders are added or removed."""
        self.client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[self.folder(p) for p in added], removed=[self.folder(p) for p in removed]
                )
            )
        )

    # documents -------------------------------------------------------------------------------------
    def open(self, path: Path, text: str | None = None, language: str = "plaintext") -> str:
        uri = self.uri(path)
        self.texts[uri] = path.read_text() if text is None else text
        self.versions[uri] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id=language, version=1, text=self.texts[uri]
                )
            )
        )
        return uri

    def change(self, uri: str, text: str) -> None:
        self.texts[uri] = text
        self.versions[uri] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        self.timeline.append(("change", uri, self.versions[uri]))

    def save(self, uri: str) -> None:
        _path(uri).write_text(self.texts[uri])
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    # requests --------------------------------------------------------------------------------------
    async def lenses(self, uri: str) -> list[types.CodeLens]:
        found = await self.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        return list(found or [])

    async def lens_titles(self, uri: str) -> list[str]:
        return [lens.command.title for lens in await self.lenses(uri) if lens.command]

    async def actions(
        self, uri: str, line: int, diagnostics: list[types.Diagnostic] | None = None
    ) -> list[Any]:
        where = types.Range(
            start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)
        )
        found = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=where,
                context=types.CodeActionContext(diagnostics=diagnostics or []),
            )
        )
        return list(found or [])

    async def hints(self, uri: str) -> list[types.InlayHint]:
        lines = self.texts[uri].count("\n") + 1
        found = await self.client.text_document_inlay_hint_async(
            types.InlayHintParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(
                    start=types.Position(line=0, character=0), end=types.Position(line=lines, character=0)
                ),
            )
        )
        return list(found or [])

    async def command(self, name: str, *args: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(args))
        )

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        return plain(await self.client.protocol.send_request_async(method, params))

    # waiting ---------------------------------------------------------------------------------------
    async def until(self, check: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = check()
            if asyncio.iscoroutine(result):
                result = await result
            if result:
                return result
            await asyncio.sleep(0.05)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")

    async def run_end(self, run_id: str, timeout: float = 60.0) -> dict[str, Any]:
        def ended() -> dict[str, Any] | None:
            return next((u for u in self.run_updates if u["runId"] == run_id and u["status"] in FINAL), None)

        return await self.until(ended, timeout, f"run {run_id} to end")

    def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        return list(self.client.diagnostics.get(uri, []))


def _path(uri: str) -> Path:
    from pygls.uris import to_fs_path

    return Path(to_fs_path(uri) or uri)


def _install_handlers(editor: Editor) -> None:
    client = editor.client

    @client.feature("speedpatch/runUpdate")
    def run_update(params: Any) -> None:
        editor.run_updates.append(plain(params))

    @client.feature("speedpatch/openDiff")
    def open_diff(params: Any) -> None:
        editor.open_diffs.append(plain(params))

    @client.feature("speedpatch/openReport")
    def open_report(params: Any) -> None:
        editor.open_reports.append(plain(params))

    @client.feature("speedpatch/runsChanged")
    def runs_changed(params: Any) -> None:
        editor.runs_changed += 1

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(params: Any) -> None:
        editor.lens_refreshes += 1
        editor.timeline.append(("lens-refresh",))

    @client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def hint_refresh(params: Any) -> None:
        editor.hint_refreshes += 1

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def message_request(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        editor.message_requests.append(params)
        chosen = [a for a in params.actions or [] if a.title == editor.answer]
        return chosen[0] if chosen else None

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        editor.edits.append(params)
        for change in params.edit.document_changes or []:
            uri = change.text_document.uri
            for edit in change.edits:
                editor.texts[uri] = _apply(editor.texts[uri], edit)
            editor.change(uri, editor.texts[uri])
        return types.ApplyWorkspaceEditResult(applied=True)


def _apply(text: str, edit: types.TextEdit) -> str:
    # test documents are ASCII, so UTF-16 positions are character offsets
    lines = text.split("\n")

    def offset(pos: types.Position) -> int:
        return sum(len(line) + 1 for line in lines[: pos.line]) + pos.character

    return text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]


async def launch(
    root: Path,
    settings: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    caps: str = "visual-studio-code",
    folders: list[Path] | None = None,
) -> Editor:
    """Start the server process for workspace `root` and initialize it like an editor would; `folders`
    (root first) opens a multi-root workspace."""
    client = make_test_lsp_client()
    editor = Editor(client, root)
    _install_handlers(editor)
    await client.start_io(sys.executable, "-m", "speedpatch.lsp", env=server_env(env), cwd=str(root))
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(caps),
            root_uri=editor.uri(root),
            workspace_folders=[editor.folder(f) for f in folders or [root]],
            initialization_options=settings or {},
        )
    )
    editor.capabilities = result.capabilities
    return editor


async def stop_editor(editor: Editor) -> None:
    if editor.client._stop_event.is_set():
        return
    try:
        await asyncio.wait_for(editor.client.shutdown_session(), timeout=15)
    except Exception:
        pass
    await editor.client.stop()


async def kill_server(editor: Editor) -> None:
    """SIGKILL the server process, as a crash or a killed editor would: no shutdown, nothing cleaned up."""
    server = editor.client._server
    assert server is not None
    server.kill()
    await server.wait()
    await editor.client.stop()


OFFLINE = {"offline": True, "search": {"iterations": 2, "beam": 1, "plans": 4, "codes": 1}}


def action_parts(action: Any) -> tuple[str, str, list[Any]]:
    """(title, command id, arguments) of a code action.

    pygls 2.1.1's client structures a CodeAction that holds a command as a plain Command whose `command`
    field is the repr of the nested command dict (see shared/notes/vscode-e2e.md); undo that here."""
    if isinstance(action, types.CodeAction):
        cmd = action.command
        return action.title, cmd.command if cmd else "", list(cmd.arguments or []) if cmd else []
    nested = action.command
    if isinstance(nested, str) and nested.startswith("{"):
        data = ast.literal_eval(nested)
        return action.title, data["command"], list(data.get("arguments") or [])
    return action.title, nested, list(action.arguments or [])


def slow_toy(root: Path, seconds: float = 0.4, name: str = "slow.toy") -> Path:
    """The toy example whose harness sleeps on every evaluation, so a search lasts long enough to cancel."""
    from toy_target import EXAMPLE

    path = root / name
    path.write_text(f"import time\ntime.sleep({seconds})\n" + EXAMPLE)
    return path


TWO_KERNELS = """\
INPUTS = [([1, 2, 3, 4, 5, 6, 7, 8],)]


def reference(xs):
    return sum(xs)


def kernel_a(xs):
    total = 0
    for x in xs:
        total += x
    return total


def kernel_b(xs):
    total = 0
    for x in xs:
        total += x
    return total


MOVES = {"Use the builtin sum.": "def kernel_a(xs):\\n    return sum(xs)\\n"}
"""


def toy_file(root: Path, name: str, prefix: str = "") -> Path:
    """A copy of the toy example under its own name: tests sharing one server each work on their own
    file, so their runs and lenses never meet."""
    from toy_target import EXAMPLE

    path = root / name
    path.write_text(prefix + EXAMPLE)
    return path
