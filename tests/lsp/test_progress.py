"""Background searches: work-done progress, cancellation from the progress UI, queueing, responsiveness."""

from __future__ import annotations

import re

import pytest
from lsp_editor import TWO_KERNELS, slow_toy, toy_file
from lsprotocol import types

# one server for the module; each test works on its own file
pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_search_reports_begin_iterations_and_end(shared_editor):
    editor = shared_editor
    uri = editor.open(toy_file(editor.root, "progress.toy"))
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    summary = await editor.run_end(started["runId"])
    token = f"speedpatch-run-{started['runId']}"

    def ended():
        reports = editor.client.progress_reports.get(token, [])
        return reports if reports and reports[-1].kind == "end" else None

    reports = await editor.until(ended, what="the progress end")
    begin, *middle, end = reports
    assert begin.kind == "begin" and begin.title == "Optimizing kernel_sum (toy-count)" and begin.cancellable
    messages = [r.message for r in middle]
    assert any(re.fullmatch(r"iteration 1/2, 0 evaluated, 0 correct, \d+ s so far", m) for m in messages)
    # every iteration the search reached is reported (the offline proposer may run out of moves before 2)
    assert any(m.startswith(f"iteration {summary['iteration']}/2") for m in messages)
    assert any(f"best {summary['speedup']:.2f}x" in m for m in messages)
    assert end.message.startswith("finished, best")

    # speedpatch/runUpdate followed the run from start to end
    updates = [u for u in editor.run_updates if u["runId"] == started["runId"]]
    assert updates[0]["status"] == "running" and updates[-1]["status"] == "finished"
    assert any(u["iteration"] == summary["iteration"] for u in updates)


async def test_cancel_from_the_progress_ui_stops_the_run_and_keeps_the_best_so_far(shared_editor):
    editor = shared_editor
    uri = editor.open(slow_toy(editor.root, seconds=1.0, name="cancelled.toy"))
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    token = f"speedpatch-run-{started['runId']}"

    def evaluated_some():
        counts = [
            re.search(r"(\d+) evaluated", r.message or "")
            for r in editor.client.progress_reports.get(token, [])
        ]
        return any(m and int(m.group(1)) >= 1 for m in counts)

    await editor.until(evaluated_some, what="a first evaluated candidate")
    editor.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    summary = await editor.run_end(started["runId"])
    assert summary["status"] == "cancelled"
    assert summary["baselineValue"] is not None  # the run was stored with what it had measured
    await editor.until(
        lambda: editor.client.progress_reports[token][-1].kind == "end", what="the progress end"
    )
    assert editor.client.progress_reports[token][-1].message.startswith("cancelled")


async def test_a_second_run_queues_behind_the_first_and_then_runs(shared_editor):
    editor = shared_editor
    (editor.root / "two.toy").write_text("import time\ntime.sleep(0.2)\n" + TWO_KERNELS)
    uri = editor.open(editor.root / "two.toy")
    first = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_a", "quick": True})
    second = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_b", "quick": True})
    titles = await editor.lens_titles(uri)
    assert "speedpatch: queued" in titles
    queued = await editor.request("speedpatch/runs", {})
    assert {r["runId"]: r["status"] for r in queued}[second["runId"]] == "queued"
    assert (await editor.run_end(first["runId"]))["status"] == "finished"
    assert (await editor.run_end(second["runId"]))["status"] == "finished"


async def test_server_answers_requests_while_a_search_runs(shared_editor):
    editor = shared_editor
    uri = editor.open(slow_toy(editor.root, seconds=1.0, name="busy.toy"))
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    for _ in range(5):
        titles = await editor.lens_titles(uri)
        assert titles[-1] == "Cancel" and (
            titles[0].startswith("speedpatch: searching, ") or titles[0] == "speedpatch: queued"
        )
        assert await editor.actions(uri, 9)
    await editor.command("speedpatch.cancel", {"runId": started["runId"]})
    await editor.run_end(started["runId"])
