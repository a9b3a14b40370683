"""workspace/executeCommand handlers (also what code lenses and code actions invoke)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path
from speedpatch.errors import StaleError, UserError

from . import params
from .engine import api
from .gpu import CONFIGURE_GPU, configure_gpu
from .lenses import APPLY, CANCEL, OPTIMIZE, RESUME, SHOW_DIFF
from .positions import minimal_edit
from .reports import candidate_payload
from .session import OPEN_DIFF, Session

log = logging.getLogger(__name__)

RUNS = "speedpatch.runs"
ALL = [OPTIMIZE, CANCEL, SHOW_DIFF, APPLY, RESUME, RUNS, CONFIGURE_GPU]


def register(server: LanguageServer, session: Session) -> None:
    @server.command(OPTIMIZE)
    async def optimize(*args):
        arg = params.first_arg(args)
        uri, kernel = params.text(arg, "uri"), params.text(arg, "kernel")
        await engine_loaded()
        try:
            run_id = session.start_run(uri, kernel, bool(arg.get("quick")))
        except UserError as exc:
            session.show(f"speedpatch: {exc}", types.MessageType.Error)
            raise JsonRpcInvalidRequest(str(exc)) from exc
        return {"runId": run_id}

    @server.command(RESUME)
    async def resume(*args):
        arg = params.first_arg(args)
        await engine_loaded()
        try:
            run_id = session.resume_run(params.text(arg, "runId"))
        except UserError as exc:
            session.show(f"speedpatch: {exc}", types.MessageType.Error)
            raise JsonRpcInvalidRequest(str(exc)) from exc
        return {"runId": run_id}

    @server.command(CANCEL)
    def cancel(*args):
        arg = params.first_arg(args)
        run_id = arg.get("runId")
        if not run_id:
            view = session.view(params.text(arg, "uri"), params.text(arg, "kernel"))
            run_id = view.job.run_id if view is not None and view.job is not None else None
        return {"cancelled": bool(run_id) and session.cancel(str(run_id))}

    @server.command(SHOW_DIFF)
    def show_diff(*args):
        arg = params.first_arg(args)
        payload = candidate(
            session, params.text(arg, "runId"), params.text(arg, "candidateId", required=False)
        )
        server.protocol.notify(
            OPEN_DIFF,
            {"runId": payload["runId"], "candidateId": payload["candidateId"], "title": payload["title"]},
        )
        return payload

    @server.command(APPLY)
    async def apply(*args):
        arg = params.first_arg(args)
        await engine_loaded()
        return await apply_run(server, session, params.text(arg, "runId"))

    @server.command(RUNS)
    def runs(*args):
        return session.all_summaries()

    @server.command(CONFIGURE_GPU)
    async def configure(*args):
        """Set up cuda-ssh in the kernel's folder's speedpatch.toml and open it at the host line."""
        path = session.path_of(params.text(params.first_arg(args), "uri"))
        if path is None:
            raise JsonRpcInvalidParams("only files on disk have a workspace folder")
        folder = session.folder_for(path)
        try:
            config, line, changed = configure_gpu(Path(folder.config_path))
        except (ValueError, OSError) as exc:
            session.show(f"speedpatch: cannot set up a GPU backend: {exc}", types.MessageType.Error)
            raise JsonRpcInvalidRequest(str(exc)) from exc
        if changed:
            session.on_config_change(folder)
        uri = from_fs_path(str(config)) or str(config)
        where = types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0))
        caps = server.client_capabilities.window if server.client_capabilities else None
        if caps and caps.show_document and caps.show_document.support:
            await server.window_show_document_async(
                types.ShowDocumentParams(uri=uri, take_focus=True, selection=where)
            )
        session.show(f"speedpatch: set host = \"...\" under [backend.cuda-ssh] in {config.name} (a machine with a GPU and nvcc that ssh reaches)")
        return {"uri": uri, "line": line, "changed": changed}


async def engine_loaded() -> None:
    """Import the engine off the event loop (it may still be loading in the background after start-up)."""
    await asyncio.get_running_loop().run_in_executor(None, api)


def candidate(session: Session, run_id: str, candidate_id: str) -> dict[str, Any]:
    located = session.locate(run_id)
    if located is None:
        raise JsonRpcInvalidParams(f"no run {run_id!r}")
    folder, record = located
    try:
        return candidate_payload(folder.store, record, folder.index.path_of(record), candidate_id or None)
    except KeyError as exc:
        raise JsonRpcInvalidParams(str(exc).strip("'\"")) from exc


async def apply_run(server: LanguageServer, session: Session, run_id: str) -> dict[str, Any]:
    """Send the winner as a workspace/applyEdit, only if the kernel still matches the run's start."""
    located = session.locate(run_id)
    if located is None:
        raise JsonRpcInvalidParams(f"no run {run_id!r}")
    folder, record = located
    uri = session.uri_for_path(folder.index.path_of(record))
    current = session.text_of(uri)
    if current is None:
        return _refuse(session, f"cannot read {uri}")
    try:
        new_text = api().apply_text(record, current)
    except StaleError as exc:
        return _refuse(session, f"speedpatch: not applied, the result is stale: {exc}")
    except UserError as exc:
        return _refuse(session, f"speedpatch: not applied: {exc}")
    if new_text == current:
        return {"applied": False, "message": "the rewrite is already in the document"}
    doc = server.workspace.text_documents.get(uri)
    encoding = server.workspace.position_encoding or types.PositionEncodingKind.Utf16
    edit = minimal_edit(current, new_text, encoding)
    change = types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(
            uri=uri, version=doc.version if doc else None
        ),
        edits=[edit],
    )
    label = f"speedpatch: apply {record.kernel} rewrite"
    result = await server.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=types.WorkspaceEdit(document_changes=[change]), label=label)
    )
    if not result.applied:
        return _refuse(
            session, f"speedpatch: the editor refused the edit: {result.failure_reason or 'no reason given'}"
        )
    await _bring_forward(server, uri)
    return {"applied": True, "message": f"applied {record.kernel} rewrite; save to accept and re-verify it"}


async def _bring_forward(server: LanguageServer, uri: str) -> None:
    """Show the edited file, focused, wherever Apply was clicked (a notification, the Runs view, a diff).

    The user's next step is to save it; and VS Code drops a pending code-lens request when its editor
    loses focus (asking again only when it regains it), so the lens refresh that follows the edit's
    didChange is only honoured by an editor that has, or gets, the focus."""
    caps = server.client_capabilities.window if server.client_capabilities else None
    if not (caps and caps.show_document and caps.show_document.support):
        return
    try:
        await server.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True))
    except Exception as exc:  # the edit is applied either way; showing it is a courtesy
        log.info("could not show %s after applying: %s", uri, exc)


def _refuse(session: Session, message: str) -> dict[str, Any]:
    session.show(message, types.MessageType.Warning)
    return {"applied": False, "message": message}
