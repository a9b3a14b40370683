"""Multi-root workspaces: every workspace folder behaves as if it were opened alone (its speedpatch.toml,
its run store), while one server lists the runs of all of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_editor import Editor, slow_toy, toy_file
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from speedpatch.store import Store

pytestmark = pytest.mark.asyncio

# the editor settings leave the search shape to each folder's speedpatch.toml
SETTINGS = {"offline": True}


def folder(parent: Path, name: str, toml: str) -> Path:
    """A workspace folder holding the toy example (sum.toy) and this speedpatch.toml."""
    root = parent / name
    root.mkdir()
    toy_file(root, "sum.toy")
    (root / "speedpatch.toml").write_text(toml)
    return root


def searching(iterations: int) -> str:
    return f"[search]\niterations = {iterations}\nbeam = 1\nplans = 2\ncodes = 1\n"


NO_BACKEND = '[backends]\ntoy = "toy-turbo"\n'  # a backend the toy target does not have


async def optimize(editor: Editor, root: Path) -> dict:
    uri = editor.open(root / "sum.toy")
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    return await editor.run_end(started["runId"])


def stored_ids(root: Path) -> set[str]:
    return {r.run_id for r in Store(root).list_runs()}


async def test_server_advertises_workspace_folder_change_notifications(start_editor, tmp_path):
    a = folder(tmp_path, "a", searching(1))
    editor = await start_editor(a, SETTINGS)
    folders = editor.capabilities.workspace.workspace_folders
    assert folders.supported and folders.change_notifications


async def test_kernel_in_second_folder_runs_with_its_config_into_its_store(start_editor, tmp_path):
    a, b = folder(tmp_path, "a", searching(1)), folder(tmp_path, "b", searching(2))
    editor = await start_editor(a, SETTINGS, folders=[a, b])
    summary = await optimize(editor, b)
    assert summary["status"] == "finished" and summary["iterations"] == 2  # b's speedpatch.toml
    assert stored_ids(b) == {summary["runId"]}
    assert stored_ids(a) == set()


async def test_each_folder_shows_its_kernels_with_its_own_backends(start_editor, tmp_path):
    a, b = folder(tmp_path, "a", NO_BACKEND), folder(tmp_path, "b", searching(1))
    editor = await start_editor(a, SETTINGS, folders=[a, b])
    (title_a,) = await editor.lens_titles(editor.open(a / "sum.toy"))
    assert title_a.startswith("speedpatch: cannot optimize kernel_sum:") and "toy-turbo" in title_a
    assert await editor.lens_titles(editor.open(b / "sum.toy")) == ["Optimize kernel_sum (toy-count)"]


async def test_nested_folder_owns_its_files_and_outside_files_fall_back_to_the_first(start_editor, tmp_path):
    outer = folder(tmp_path, "outer", NO_BACKEND)
    inner = folder(outer, "inner", searching(1))
    elsewhere = folder(tmp_path, "elsewhere", searching(1))
    editor = await start_editor(outer, SETTINGS, folders=[outer, inner])
    assert await editor.lens_titles(editor.open(inner / "sum.toy")) == ["Optimize kernel_sum (toy-count)"]
    (title,) = await editor.lens_titles(editor.open(elsewhere / "sum.toy"))
    assert "toy-turbo" in title  # outside every folder: the first folder's speedpatch.toml applies


async def test_runs_list_holds_the_runs_of_all_folders_labelled_with_their_folder(start_editor, tmp_path):
    a, b = folder(tmp_path, "a", searching(1)), folder(tmp_path, "b", searching(1))
    editor = await start_editor(a, SETTINGS, folders=[a, b])
    in_a, in_b = await optimize(editor, a), await optimize(editor, b)
    runs = await editor.request("speedpatch/runs", {})
    assert {(r["runId"], r["folder"], r["folderUri"]) for r in runs} == {
        (in_a["runId"], "a", editor.uri(a)),
        (in_b["runId"], "b", editor.uri(b)),
    }
    report = await editor.request("speedpatch/runReport", {"runId": in_b["runId"]})
    assert report["run"]["folder"] == "b"
    diff = await editor.command("speedpatch.showDiff", {"runId": in_b["runId"]})
    assert diff["uri"] == editor.uri(b / "sum.toy")


async def test_configuration_error_in_one_folder_leaves_the_other_working(start_editor, tmp_path):
    a = folder(tmp_path, "a", '[search]\niterations = "many"\n')
    b = folder(tmp_path, "b", searching(1))
    editor = await start_editor(a, SETTINGS, folders=[a, b])
    await editor.until(lambda: editor.client.messages, what="the configuration error message")
    (message,) = editor.client.messages
    assert message.type == types.MessageType.Error
    assert "configuration error in a:" in message.message and "search.iterations" in message.message
    with pytest.raises(JsonRpcException, match="configuration"):
        await editor.command("speedpatch.optimize", {"uri": editor.open(a / "sum.toy"), "kernel": "kernel_sum"})
    assert (await optimize(editor, b))["status"] == "finished"


async def test_editing_one_folders_config_reports_it_for_that_folder_only(start_editor, tmp_path):
    a, b = folder(tmp_path, "a", searching(1)), folder(tmp_path, "b", searching(1))
    editor = await start_editor(a, SETTINGS, folders=[a, b])
    uri_a = editor.open(a / "sum.toy")
    assert await editor.lens_titles(uri_a) == ["Optimize kernel_sum (toy-count)"]
    (b / "speedpatch.toml").write_text(NO_BACKEND)

    async def b_reloaded():
        return "toy-turbo" in (await editor.lens_titles(editor.open(b / "sum.toy")))[0]

    await editor.until(b_reloaded, 15, "b's edited speedpatch.toml to apply")
    assert await editor.lens_titles(uri_a) == ["Optimize kernel_sum (toy-count)"]


async def test_added_folder_optimizes_its_kernels_with_its_own_config(start_editor, tmp_path):
    a, b = folder(tmp_path, "a", NO_BACKEND), folder(tmp_path, "b", searching(2))
    editor = await start_editor(a, SETTINGS)
    uri = editor.open(b / "sum.toy")
    assert "toy-turbo" in (await editor.lens_titles(uri))[0]  # outside the workspace: a's config
    editor.change_folders(added=(b,))

    async def optimizable():
        return await editor.lens_titles(uri) == ["Optimize kernel_sum (toy-count)"]

    await editor.until(optimizable, 10, "the added folder's config to apply")
    summary = await optimize(editor, b)
    assert summary["iterations"] == 2 and stored_ids(b) == {summary["runId"]}


async def test_removed_folder_drops_its_runs_from_the_list(start_editor, tmp_path):
    a, b = folder(tmp_path, "a", searching(1)), folder(tmp_path, "b", searching(1))
    editor = await start_editor(a, SETTINGS, folders=[a, b])
    in_b = await optimize(editor, b)
    assert [r["runId"] for r in await editor.request("speedpatch/runs", {})] == [in_b["runId"]]
    editor.change_folders(removed=(b,))
    await editor.until(lambda: editor.runs_changed, 10, "speedpatch/runsChanged")
    assert await editor.request("speedpatch/runs", {}) == []
    assert stored_ids(b) == {in_b["runId"]}  # closed, not deleted: adding b back shows it again


async def test_searches_of_different_folders_queue_behind_one_another(start_editor, tmp_path):
    a, b = folder(tmp_path, "a", searching(1)), folder(tmp_path, "b", searching(1))
    editor = await start_editor(a, SETTINGS, folders=[a, b])
    slow = editor.open(slow_toy(a, seconds=0.3))
    first = await editor.command("speedpatch.optimize", {"uri": slow, "kernel": "kernel_sum"})
    uri_b = editor.open(b / "sum.toy")
    second = await editor.command("speedpatch.optimize", {"uri": uri_b, "kernel": "kernel_sum"})
    statuses = {r["runId"]: r["status"] for r in await editor.request("speedpatch/runs", {})}
    assert statuses[second["runId"]] == "queued"  # one worker for all folders
    assert (await editor.run_end(first["runId"]))["status"] == "finished"
    assert (await editor.run_end(second["runId"]))["status"] == "finished"


async def test_removing_a_folder_cancels_its_search(start_editor, tmp_path):
    a, b = folder(tmp_path, "a", searching(1)), folder(tmp_path, "b", searching(2))
    editor = await start_editor(a, SETTINGS, folders=[a, b])
    uri = editor.open(slow_toy(b, seconds=1.0))
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})

    def measured_baseline():  # by then the run is in b's store
        return any(u["runId"] == started["runId"] and u["baselineValue"] for u in editor.run_updates)

    await editor.until(measured_baseline, what="the baseline")
    editor.change_folders(removed=(b,))
    assert (await editor.run_end(started["runId"]))["status"] == "cancelled"
    assert stored_ids(b) == {started["runId"]}  # kept in b's store, resumable once b is back


async def test_readded_folder_lists_its_cancelled_run_again_and_resumes_it_there(start_editor, tmp_path):
    a, b = folder(tmp_path, "a", searching(1)), folder(tmp_path, "b", searching(2))
    editor = await start_editor(a, SETTINGS, folders=[a, b])
    uri = editor.open(slow_toy(b, seconds=0.3))
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    run_id = started["runId"]
    await editor.until(lambda: any(u["runId"] == run_id and u["baselineValue"] for u in editor.run_updates))
    editor.change_folders(removed=(b,))
    assert (await editor.run_end(run_id))["status"] == "cancelled"
    editor.change_folders(added=(b,))
    await editor.until(lambda: editor.runs_changed >= 2, 10, "the second speedpatch/runsChanged")
    assert [(r["runId"], r["folder"]) for r in await editor.request("speedpatch/runs", {})] == [(run_id, "b")]
    seen = len(editor.run_updates)
    await editor.command("speedpatch.resume", {"runId": run_id})

    def finished():
        return any(u["runId"] == run_id and u["status"] == "finished" for u in editor.run_updates[seen:])

    await editor.until(finished, 60, "the resumed run to finish")
    (record,) = Store(b).list_runs()
    assert record.run_id == run_id and record.status == "finished" and record.iterations == 2


async def test_saved_rewrite_is_reverified_into_its_folders_store(start_editor, tmp_path):
    a, b = folder(tmp_path, "a", searching(1)), folder(tmp_path, "b", searching(1))
    editor = await start_editor(a, SETTINGS, folders=[a, b])
    summary = await optimize(editor, b)
    uri = editor.uri(b / "sum.toy")
    assert (await editor.command("speedpatch.apply", {"runId": summary["runId"]}))["applied"]
    editor.save(uri)

    async def verified():
        return [t for t in await editor.lens_titles(uri) if t.startswith("verified ")]

    await editor.until(verified, 30, "the re-verified lens")
    assert (b / ".speedpatch" / "lsp-verifications.json").is_file()
    assert not (a / ".speedpatch" / "lsp-verifications.json").exists()
