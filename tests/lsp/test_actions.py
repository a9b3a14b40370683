"""Every code action the server offers on a kernel, and what each one does."""

from __future__ import annotations

import pytest
from lsp_editor import action_parts, slow_toy, toy_file

# one server for the module; each test works on its own file
pytestmark = pytest.mark.asyncio(loop_scope="module")

KERNEL_LINE = 7  # `def kernel_sum(xs):` in the toy example


async def titles_and_commands(editor, uri, line=KERNEL_LINE):
    return [action_parts(a) for a in await editor.actions(uri, line)]


async def test_kernel_offers_optimize_with_its_backend_and_a_quick_variant(shared_editor):
    editor = shared_editor
    uri = editor.open(editor.root / "sum.toy")
    actions = await titles_and_commands(editor, uri)
    assert actions == [
        ("Optimize kernel_sum (toy-count)", "speedpatch.optimize", [{"uri": uri, "kernel": "kernel_sum"}]),
        (
            "Optimize kernel_sum (quick: 1 iteration, fewer candidates)",
            "speedpatch.optimize",
            [{"uri": uri, "kernel": "kernel_sum", "quick": True}],
        ),
    ]


async def test_no_actions_outside_kernels(shared_editor):
    editor = shared_editor
    uri = editor.open(editor.root / "sum.toy")
    assert await editor.actions(uri, 0) == []  # the INPUTS line belongs to the harness


async def test_quick_optimize_runs_a_single_small_iteration(shared_editor):
    editor = shared_editor
    uri = editor.open(toy_file(editor.root, "quick.toy"))
    _, command, args = (await titles_and_commands(editor, uri))[1]
    started = await editor.command(command, *args)
    summary = await editor.run_end(started["runId"])
    assert summary["iterations"] == 1 and summary["status"] == "finished"


async def test_cancel_action_is_offered_while_running_and_stops_the_run(shared_editor):
    editor = shared_editor
    uri = editor.open(slow_toy(editor.root))
    line = KERNEL_LINE + 2  # two lines of sleep before the example
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    actions = await titles_and_commands(editor, uri, line)
    assert actions == [
        ("Cancel optimization of kernel_sum", "speedpatch.cancel", [{"runId": started["runId"]}])
    ]
    assert await editor.command("speedpatch.cancel", {"uri": uri, "kernel": "kernel_sum"}) == {
        "cancelled": True
    }
    summary = await editor.run_end(started["runId"])
    assert summary["status"] == "cancelled"
    assert await editor.command("speedpatch.cancel", {"runId": started["runId"]}) == {"cancelled": False}


async def test_winner_adds_show_diff_and_apply_with_its_speedup(shared_editor):
    editor = shared_editor
    uri = editor.open(toy_file(editor.root, "winner.toy"))
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    summary = await editor.run_end(started["runId"])
    actions = await titles_and_commands(editor, uri)
    run = [{"runId": summary["runId"]}]
    assert ("Show diff", "speedpatch.showDiff", run) in actions
    apply = [a for a in actions if a[1] == "speedpatch.apply"]
    assert apply == [(f"Apply rewrite ({summary['speedup']:.2f}x faster)", "speedpatch.apply", run)]

    # applied: the kernel now is the winner, so Apply and Show diff are no longer offered as actions
    assert (await editor.command("speedpatch.apply", *run))["applied"] is True
    commands = [a[1] for a in await titles_and_commands(editor, uri)]
    assert "speedpatch.apply" not in commands and "speedpatch.optimize" in commands


async def test_runs_command_lists_the_same_summaries_as_the_request(shared_editor):
    editor = shared_editor
    uri = editor.open(toy_file(editor.root, "listed.toy"))
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum", "quick": True})
    await editor.run_end(started["runId"])
    listed = await editor.command("speedpatch.runs")
    assert started["runId"] in [r["runId"] for r in listed]
    assert listed == await editor.request("speedpatch/runs", {})
