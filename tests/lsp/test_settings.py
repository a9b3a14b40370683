"""Editor settings reach the engine; bad ones are reported; the API key is never echoed."""

from __future__ import annotations

import pytest
from lsp_editor import OFFLINE, action_parts
from lsprotocol import types
from pygls.exceptions import JsonRpcException

pytestmark = pytest.mark.asyncio


async def test_did_change_configuration_switches_the_backend(start_editor, toy_workspace):
    editor = await start_editor(toy_workspace, OFFLINE)
    uri = editor.open(toy_workspace / "sum.toy")
    assert await editor.lens_titles(uri) == ["Optimize kernel_sum (toy-count)"]
    refreshes = editor.lens_refreshes
    # VS Code sends the section under its name; the object may also come bare
    editor.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"speedpatch": {**OFFLINE, "backends": {"toy": "toy-turbo"}}}
        )
    )
    (title,) = await editor.lens_titles(uri)
    assert title.startswith("speedpatch: cannot optimize kernel_sum:") and "toy-turbo" in title
    assert editor.lens_refreshes > refreshes
    (action,) = await editor.actions(uri, 7)  # offered greyed out, with the reason
    assert action_parts(action)[1] == "" and "toy-turbo" in action.disabled.reason
    editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=OFFLINE))
    assert await editor.lens_titles(uri) == ["Optimize kernel_sum (toy-count)"]


async def test_invalid_setting_is_reported_by_key_and_blocks_runs(start_editor, toy_workspace):
    secret = "sk-do-not-echo-777"
    settings = {**OFFLINE, "search": {"iterations": "many"}, "llm": {"apiKey": secret}}
    editor = await start_editor(toy_workspace, settings)
    uri = editor.open(toy_workspace / "sum.toy")
    await editor.until(lambda: editor.client.messages, what="the configuration error message")
    message = editor.client.messages[0]
    assert message.type == types.MessageType.Error and "search.iterations" in message.message
    assert secret not in message.message
    with pytest.raises(JsonRpcException, match="configuration"):
        await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})


async def test_quick_and_budget_settings_bound_the_search(start_editor, toy_workspace):
    editor = await start_editor(toy_workspace, {**OFFLINE, "budget": {"maxEvaluations": 2}})
    uri = editor.open(toy_workspace / "sum.toy")
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    summary = await editor.run_end(started["runId"])
    assert summary["evaluations"]["total"] <= 2


async def test_empty_configuration_change_pulls_the_speedpatch_section(start_editor, toy_workspace):
    editor = await start_editor(toy_workspace, OFFLINE)
    uri = editor.open(toy_workspace / "sum.toy")
    editor.client.set_configuration({**OFFLINE, "backends": {"toy": "toy-turbo"}}, section="speedpatch")
    editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

    async def pulled():
        titles = await editor.lens_titles(uri)
        return titles if "toy-turbo" in titles[0] else None

    await editor.until(pulled, 10, "the pulled settings to apply")


async def test_a_bad_value_from_the_editor_is_reported_under_the_editor_settings_name(start_editor, toy_workspace):
    editor = await start_editor(toy_workspace, {**OFFLINE, "budget": {"maxSeconds": -3}})
    await editor.until(lambda: editor.client.messages, what="the configuration error message")
    message = editor.client.messages[0].message
    assert "budget.max_seconds: must be >= 0, got -3" in message
    assert "(the editor setting speedpatch.budget.maxSeconds)" in message
