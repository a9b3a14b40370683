"""workspace/executeCommand handlers (also what code lenses and code actions invoke)."""

from __future__ import annotations

import asyncio
import functools
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.uris import from_fs_path
from speedpatch.errors import StaleError, UserError

from .arguments import (
    CancelArgs,
    CandidateArgs,
    DocumentArgs,
    NoArgs,
    OptimizeArgs,
    RunArgs,
    command_argument,
)
from .controller import APPLY_BUTTON, REPORT_BUTTON, SHOW_DIFF_BUTTON
from .engine import api
from .gpu import CONFIGURE_GPU, configure_gpu
from .lenses import APPLY, CANCEL, OPTIMIZE, RESUME, SHOW_DIFF
from .positions import minimal_edit
from .reports import candidate_payload
from .state import ServerState, SpeedpatchServer

log = logging.getLogger(__name__)

RUNS = "speedpatch.runs"
ALL = [OPTIMIZE, CANCEL, SHOW_DIFF, APPLY, RESUME, RUNS, CONFIGURE_GPU]
OPEN_DIFF = "speedpatch/openDiff"
OPEN_REPORT = "speedpatch/openReport"


async def optimize(ls: SpeedpatchServer, *args: Any) -> dict[str, Any]:
    """Start a search on a kernel: [{"uri", "kernel", "quick"?}] -> {"runId"}."""
    arg = command_argument(OptimizeArgs, args, OPTIMIZE)
    await engine_loaded()
    try:
        run_id = ls.state.runs.start_run(arg.uri, arg.kernel, arg.quick)
    except UserError as exc:
        ls.state.show(f"speedpatch: {exc}", types.MessageType.Error)
        raise JsonRpcInvalidRequest(str(exc)) from exc
    return {"runId": run_id}


async def resume(ls: SpeedpatchServer, *args: Any) -> dict[str, Any]:
    """Continue an interrupted or cancelled run in place: [{"runId"}] -> {"runId"}."""
    arg = command_argument(RunArgs, args, RESUME)
    await engine_loaded()
    try:
        run_id = ls.state.runs.resume_run(arg.run_id)
    except UserError as exc:
        ls.state.show(f"speedpatch: {exc}", types.MessageType.Error)
        raise JsonRpcInvalidRequest(str(exc)) from exc
    return {"runId": run_id}


def cancel(ls: SpeedpatchServer, *args: Any) -> dict[str, Any]:
    """Cancel a queued or running search: [{"runId"}] or [{"uri", "kernel"}] -> {"cancelled"}."""
    arg = command_argument(CancelArgs, args, CANCEL)
    state = ls.state
    run_id = arg.run_id
    if not run_id:
        view = state.views.view(arg.uri, arg.kernel)
        run_id = view.job.run_id if view is not None and view.job is not None else ""
    return {"cancelled": bool(run_id) and state.runs.cancel(run_id)}


def show_diff(ls: SpeedpatchServer, *args: Any) -> dict[str, Any]:
    """A candidate's diff (the run's best by default), and speedpatch/openDiff so the client shows it."""
    arg = command_argument(CandidateArgs, args, SHOW_DIFF)
    payload = candidate(ls, arg.run_id, arg.candidate_id)
    _open_diff(ls, payload)
    return payload


async def apply(ls: SpeedpatchServer, *args: Any) -> dict[str, Any]:
    """Apply a run's winner to its document: [{"runId"}] -> {"applied", "message"}."""
    arg = command_argument(RunArgs, args, APPLY)
    await engine_loaded()
    return await apply_run(ls, arg.run_id)


def runs(ls: SpeedpatchServer, *args: Any) -> list[dict[str, Any]]:
    """The summaries of every open folder's runs."""
    command_argument(NoArgs, args, RUNS)
    return ls.state.runs.all_summaries()


async def configure(ls: SpeedpatchServer, *args: Any) -> dict[str, Any]:
    """Set up cuda-ssh in the kernel's folder's speedpatch.toml and open it at the host line."""
    state = ls.state
    path = state.views.path_of(command_argument(DocumentArgs, args, CONFIGURE_GPU).uri)
    if path is None:
        raise JsonRpcInvalidParams("only files on disk have a workspace folder")
    folder = state.views.folder_for(path)
    try:
        config, line, changed = configure_gpu(Path(folder.config_path))
    except (ValueError, OSError) as exc:
        state.show(f"speedpatch: cannot set up a GPU backend: {exc}", types.MessageType.Error)
        raise JsonRpcInvalidRequest(str(exc)) from exc
    if changed:
        state.on_config_change(folder)
    uri = from_fs_path(str(config)) or str(config)
    where = types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0))
    caps = ls.client_capabilities.window if ls.client_capabilities else None
    if caps and caps.show_document and caps.show_document.support:
        await ls.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True, selection=where))
    state.show(f"speedpatch: set host = \"...\" under [backend.cuda-ssh] in {config.name} (a machine with a GPU and nvcc that ssh reaches)")
    return {"uri": uri, "line": line, "changed": changed}


async def result_button(ls: SpeedpatchServer, run_id: str, button: str) -> None:
    """What a button of the end-of-search message does (controller.RunController._ask)."""
    if button == SHOW_DIFF_BUTTON:
        _open_diff(ls, candidate(ls, run_id, ""))
    elif button == APPLY_BUTTON:
        await apply_run(ls, run_id)
    elif button == REPORT_BUTTON:
        ls.protocol.notify(OPEN_REPORT, {"runId": run_id})


def register(server: SpeedpatchServer) -> None:
    """Register the commands (vscode-languageclient registers their ids in VS Code from this list)."""
    for name, handler in [
        (OPTIMIZE, optimize), (RESUME, resume), (CANCEL, cancel), (SHOW_DIFF, show_diff), (APPLY, apply),
        (RUNS, runs), (CONFIGURE_GPU, configure),
    ]:
        server.command(name)(handler)
    server.state.runs.on_button = functools.partial(result_button, server)


def _open_diff(ls: SpeedpatchServer, payload: dict[str, Any]) -> None:
    ls.protocol.notify(
        OPEN_DIFF, {"runId": payload["runId"], "candidateId": payload["candidateId"], "title": payload["title"]}
    )


async def engine_loaded() -> None:
    """Import the engine off the event loop (it may still be loading in the background after start-up)."""
    await asyncio.get_running_loop().run_in_executor(None, api)


def candidate(ls: SpeedpatchServer, run_id: str, candidate_id: str) -> dict[str, Any]:
    """The speedpatch/candidate payload of a run's candidate (its best when candidate_id is "")."""
    located = ls.state.runs.locate(run_id)
    if located is None:
        raise JsonRpcInvalidParams(f"no run {run_id!r}")
    folder, record = located
    try:
        return candidate_payload(folder.store, record, folder.index.path_of(record), candidate_id or None)
    except KeyError as exc:
        raise JsonRpcInvalidParams(str(exc).strip("'\"")) from exc


async def apply_run(ls: SpeedpatchServer, run_id: str) -> dict[str, Any]:
    """Send the winner as a workspace/applyEdit, only if the kernel still matches the run's start."""
    server, state = ls, ls.state
    located = state.runs.locate(run_id)
    if located is None:
        raise JsonRpcInvalidParams(f"no run {run_id!r}")
    folder, record = located
    uri = state.views.uri_for_path(folder.index.path_of(record))
    current = state.views.text_of(uri)
    if current is None:
        return _refuse(state, f"cannot read {uri}")
    try:
        new_text = api().apply_text(record, current)
    except StaleError as exc:
        return _refuse(state, f"speedpatch: not applied, the result is stale: {exc}")
    except UserError as exc:
        return _refuse(state, f"speedpatch: not applied: {exc}")
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
            state, f"speedpatch: the editor refused the edit: {result.failure_reason or 'no reason given'}"
        )
    await _bring_forward(server, uri)
    return {"applied": True, "message": f"applied {record.kernel} rewrite; save to accept and re-verify it"}


async def _bring_forward(server: SpeedpatchServer, uri: str) -> None:
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


def _refuse(state: ServerState, message: str) -> dict[str, Any]:
    state.show(message, types.MessageType.Warning)
    return {"applied": False, "message": message}
