"""Searches queued behind another one are in the run store from the moment they are asked for: a server
that dies before their turn does not lose them. They come back resumable; nothing restarts on its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_editor import OFFLINE, Editor, action_parts, kill_server, server_env, slow_toy, stop_editor, toy_file
from speedpatch.store import Store

OWN_SERVER = pytest.mark.asyncio(loop_scope="function")
SEARCH = {**OFFLINE, "search": {"iterations": 1, "beam": 1, "plans": 2, "codes": 1}}
QUEUED_HINT = "queued when the server stopped; resume it to run"


async def queue_behind_a_slow_run(editor: Editor, root: Path) -> tuple[str, list[str]]:
    """Start a slow search, wait until it runs, and queue two more behind it (a.toy, b.toy);
    returns the slow run's id and the queued runs' ids."""
    slow = editor.open(slow_toy(root, seconds=3.0))
    slow_id = (await editor.command("speedpatch.optimize", {"uri": slow, "kernel": "kernel_sum"}))["runId"]
    await editor.until(
        lambda: any(u["runId"] == slow_id and u["status"] == "running" for u in editor.run_updates),
        what="the slow search to start",
    )
    # the live job says running a moment before the engine stores it so: a kill in between would leave it
    # stored as queued (load-sensitive); wait for the store
    store = Store(root)
    await editor.until(lambda: store.get_run(slow_id).status == "running", what="the store to say running")
    queued = []
    for name in ("a.toy", "b.toy"):
        uri = editor.open(toy_file(root, name))
        queued.append((await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"}))["runId"])
    return slow_id, queued


async def killed_with_two_queued(start_editor, root: Path) -> tuple[str, list[str]]:
    """A server that is killed (no shutdown) while one search runs and two wait behind it."""
    editor = await start_editor(root, SEARCH)
    slow_id, queued = await queue_behind_a_slow_run(editor, root)
    await kill_server(editor)
    return slow_id, queued


def kernel_line(editor: Editor, uri: str) -> int:
    return editor.texts[uri].splitlines().index("def kernel_sum(xs):")


@pytest.mark.slow
@OWN_SERVER
async def test_runs_queued_when_the_server_was_killed_are_listed_as_resumable(start_editor, toy_workspace):
    slow_id, queued = await killed_with_two_queued(start_editor, toy_workspace)
    editor = await start_editor(toy_workspace, SEARCH)
    runs = {r["runId"]: r for r in await editor.request("speedpatch/runs", {})}
    for run_id in queued:
        assert runs[run_id]["status"] == "interrupted"
        assert runs[run_id]["message"] == f"{QUEUED_HINT}: speedpatch resume {run_id}"
    # the search that was running is not restarted on its own (it may be what killed the server)
    assert runs[slow_id]["status"] == "interrupted" and QUEUED_HINT not in runs[slow_id]["message"]


@pytest.mark.slow
@OWN_SERVER
async def test_a_clean_shutdown_keeps_queued_runs_resumable_and_cancels_the_running_one(start_editor, toy_workspace):
    first = await start_editor(toy_workspace, SEARCH)
    slow_id, queued = await queue_behind_a_slow_run(first, toy_workspace)
    await stop_editor(first)  # the editor closes: shutdown, exit
    assert first.client._server is not None and first.client._server.returncode is not None
    editor = await start_editor(toy_workspace, SEARCH)
    runs = {r["runId"]: r for r in await editor.request("speedpatch/runs", {})}
    assert [runs[run_id]["message"] for run_id in queued] == [
        f"{QUEUED_HINT}: speedpatch resume {run_id}" for run_id in queued
    ]
    assert runs[slow_id]["status"] == "cancelled"


@pytest.mark.slow
@OWN_SERVER
async def test_a_kernel_whose_queued_run_was_lost_offers_resume_in_its_lens_and_actions(start_editor, toy_workspace):
    _, queued = await killed_with_two_queued(start_editor, toy_workspace)
    editor = await start_editor(toy_workspace, SEARCH)
    uri = editor.open(toy_workspace / "a.toy")
    titles = await editor.lens_titles(uri)
    assert titles == [
        f"speedpatch: {QUEUED_HINT}: speedpatch resume {queued[0]}", "Resume", "Optimize kernel_sum (toy-count)"
    ]
    offered = [action_parts(a) for a in await editor.actions(uri, kernel_line(editor, uri))]
    assert ("Resume optimization of kernel_sum (interrupted)", "speedpatch.resume", [{"runId": queued[0]}]) in offered


@pytest.mark.slow
@OWN_SERVER
async def test_resuming_a_run_that_was_queued_when_the_server_died_runs_it_to_the_end(start_editor, toy_workspace):
    _, queued = await killed_with_two_queued(start_editor, toy_workspace)
    editor = await start_editor(toy_workspace, SEARCH)
    assert (await editor.command("speedpatch.resume", {"runId": queued[0]})) == {"runId": queued[0]}
    summary = await editor.run_end(queued[0])
    assert summary["status"] == "finished" and summary["speedup"] > 1
    assert summary["evaluations"]["total"] >= 2  # the baseline was measured first, then candidates


@pytest.mark.slow
@OWN_SERVER
async def test_the_cli_resumes_a_run_that_was_queued_when_the_server_died(start_editor, toy_workspace):
    _, queued = await killed_with_two_queued(start_editor, toy_workspace)
    cli = [sys.executable, "-m", "speedpatch.cli.main", "--workspace", str(toy_workspace), "resume", queued[1], "--json"]
    done = subprocess.run(cli, env=server_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "finished" and result["speedup"] > 1


@OWN_SERVER
async def test_cancelling_a_queued_run_leaves_it_cancelled_in_the_store(start_editor, toy_workspace):
    editor = await start_editor(toy_workspace, SEARCH)
    slow_id, queued = await queue_behind_a_slow_run(editor, toy_workspace)
    assert Store(toy_workspace).get_run(queued[0]).status == "queued"  # stored the moment it was asked for
    assert await editor.command("speedpatch.cancel", {"runId": queued[0]}) == {"cancelled": True}
    assert (await editor.run_end(queued[0]))["status"] == "cancelled"
    stored = Store(toy_workspace).get_run(queued[0])
    assert (stored.status, stored.message) == ("cancelled", "cancelled before it started")
    listed = {r["runId"]: r["status"] for r in await editor.request("speedpatch/runs", {})}
    assert listed[queued[0]] == "cancelled" and listed[slow_id] == "running"  # the others go on


@OWN_SERVER
async def test_the_cli_refuses_to_resume_a_run_still_queued_in_a_live_server(start_editor, toy_workspace):
    editor = await start_editor(toy_workspace, SEARCH)
    _, queued = await queue_behind_a_slow_run(editor, toy_workspace)
    cli = [sys.executable, "-m", "speedpatch.cli.main", "--workspace", str(toy_workspace), "resume", queued[0]]
    done = subprocess.run(cli, env=server_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and f"run {queued[0]} is still queued in another process" in done.stderr


@OWN_SERVER
async def test_a_queued_run_that_fails_before_it_starts_is_stored_as_failed(start_editor, toy_workspace):
    (toy_workspace / "speedpatch.toml").write_text('[menus]\ntoy = "no-such-menu.toml"\n')
    editor = await start_editor(toy_workspace, SEARCH)
    uri = editor.open(toy_workspace / "sum.toy")
    run_id = (await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"}))["runId"]
    summary = await editor.run_end(run_id)
    assert summary["status"] == "failed" and "no-such-menu.toml" in summary["message"]
    stored = Store(toy_workspace).get_run(run_id)
    assert stored.status == "failed" and "no-such-menu.toml" in stored.message  # not left "queued"
