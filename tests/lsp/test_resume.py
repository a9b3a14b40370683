"""An interrupted run (its LLM endpoint went down) is offered for resuming, and continues in place."""

from __future__ import annotations

import pytest
from lsprotocol import types

OWN_SERVER = pytest.mark.asyncio(loop_scope="function")
FAST = "```python\ndef kernel_sum(xs):\n    return sum(xs)\n```"


def titles(actions: list) -> list[str]:
    return [a.title for a in actions if isinstance(a, (types.CodeAction, types.Command))]


@OWN_SERVER
async def test_interrupted_run_is_resumed_from_a_code_action(start_editor, toy_workspace):
    from support.fake_openai import FakeOpenAI, phase_of

    endpoint_up = False

    def script(request):
        if not endpoint_up:
            return (503, {"error": {"message": "the model is down for maintenance"}})
        return "Use the builtin sum." if phase_of(request) == "plan" else FAST

    (toy_workspace / "speedpatch.toml").write_text("[llm]\nretries = 0\n")
    with FakeOpenAI(script) as llm:
        settings = {"llm": {"baseUrl": llm.base_url, "models": ["m"]},
                    "search": {"iterations": 1, "beam": 1, "plans": 1, "codes": 1}}
        editor = await start_editor(toy_workspace, settings)
        uri = editor.open(toy_workspace / "sum.toy")
        started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
        interrupted = await editor.run_end(started["runId"])
        assert interrupted["status"] == "interrupted"

        line = editor.texts[uri].splitlines().index("def kernel_sum(xs):")
        offered = await editor.actions(uri, line)
        assert "Resume optimization of kernel_sum (interrupted)" in titles(offered)

        endpoint_up = True
        seen = len(editor.run_updates)
        resumed = await editor.command("speedpatch.resume", {"runId": started["runId"]})
        assert resumed["runId"] == started["runId"]

        def finished():
            updates = editor.run_updates[seen:]
            return next((u for u in updates if u["runId"] == resumed["runId"] and u["status"] == "finished"), None)

        summary = await editor.until(finished, timeout=60, what="the resumed run to finish")
    assert summary["speedup"] > 1


@OWN_SERVER
async def test_a_finished_run_cannot_be_resumed(start_editor, toy_workspace):
    from lsp_editor import OFFLINE

    editor = await start_editor(toy_workspace, {**OFFLINE, "search": {"iterations": 1, "beam": 1}})
    uri = editor.open(toy_workspace / "sum.toy")
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    await editor.run_end(started["runId"])
    with pytest.raises(Exception, match="only interrupted or cancelled runs can be resumed"):
        await editor.command("speedpatch.resume", {"runId": started["runId"]})
