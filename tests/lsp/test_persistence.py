"""State lives in the run store: it survives restarts and includes runs the CLI made."""

from __future__ import annotations

import subprocess
import sys

import pytest
from lsp_editor import OFFLINE, server_env, stop_editor

pytestmark = pytest.mark.asyncio


@pytest.mark.slow
async def test_results_and_verification_survive_a_server_restart(start_editor, toy_workspace):
    path = toy_workspace / "sum.toy"
    first = await start_editor(toy_workspace, OFFLINE)
    uri = first.open(path)
    started = await first.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum", "quick": True})
    summary = await first.run_end(started["runId"])
    before = await first.lens_titles(uri)
    await stop_editor(first)

    second = await start_editor(toy_workspace, OFFLINE)
    uri = second.open(path)
    assert await second.lens_titles(uri) == before
    runs = await second.request("speedpatch/runs", {})
    assert [(r["runId"], r["status"]) for r in runs] == [(summary["runId"], "finished")]

    # accept the rewrite, then restart again: the re-verified numbers are still shown
    assert (await second.command("speedpatch.apply", {"runId": summary["runId"]}))["applied"]
    second.save(uri)

    async def verified():
        return [t for t in await second.lens_titles(uri) if t.startswith("verified")]

    lens = await second.until(verified, 30, "the re-verified lens")
    await stop_editor(second)
    third = await start_editor(toy_workspace, OFFLINE)
    uri = third.open(path)
    assert (await third.lens_titles(uri))[0] == lens[0]


@pytest.mark.slow
async def test_a_run_made_by_the_cli_shows_up_without_a_restart(start_editor, toy_workspace):
    editor = await start_editor(toy_workspace, OFFLINE)
    uri = editor.open(toy_workspace / "sum.toy")
    assert await editor.lens_titles(uri) == ["Optimize kernel_sum (toy-count)"]
    refreshes = editor.lens_refreshes
    cli = [
        sys.executable,
        "-m",
        "speedpatch.cli.main",
        "--workspace",
        str(toy_workspace),
        "optimize",
        str(toy_workspace / "sum.toy"),
        "--kernel",
        "kernel_sum",
        "--offline",
        "-T",
        "1",
        "--json",
    ]
    done = subprocess.run(cli, env=server_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr

    async def shown():
        titles = await editor.lens_titles(uri)
        return titles if "faster" in titles[0] else None

    titles = await editor.until(shown, 15, "the CLI run in the lens")
    assert "(toy-count)" in titles[0]
    assert editor.lens_refreshes > refreshes  # the client was told to re-request lenses
