"""A result only applies to the code it was measured on: edits in the editor or on disk make it stale."""

from __future__ import annotations

import pytest
from lsp_editor import Editor, toy_file
from lsprotocol import types

# one server for the module (each test works on its own file); the config test starts its own
pytestmark = pytest.mark.asyncio(loop_scope="module")


async def finished_run(editor: Editor, uri: str) -> dict:
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum", "quick": True})
    summary = await editor.run_end(started["runId"])
    assert summary["speedup"] > 1.0
    return summary


async def test_apply_is_refused_when_the_kernel_changed_since_the_run(shared_editor):
    editor = shared_editor
    uri = editor.open(toy_file(editor.root, "edited.toy"))
    edits, messages = len(editor.edits), len(editor.client.messages)
    summary = await finished_run(editor, uri)
    edited = editor.texts[uri].replace("total = 0", "total = 0  # counts up", 1)
    editor.change(uri, edited)

    result = await editor.command("speedpatch.apply", {"runId": summary["runId"]})
    assert result["applied"] is False and "stale" in result["message"]
    assert len(editor.edits) == edits  # no workspace/applyEdit was sent
    assert editor.texts[uri] == edited

    def stale_messages():
        return [m for m in editor.client.messages[messages:] if "stale" in m.message]

    shown = await editor.until(stale_messages, what="the stale showMessage")
    assert shown[0].type == types.MessageType.Warning

    titles = await editor.lens_titles(uri)
    assert (
        titles[0].startswith("speedpatch: last result is stale")
        and "Optimize kernel_sum (toy-count)" in titles
    )
    assert not [d for d in editor.diagnostics(uri) if d.code == "ready-rewrite"]


async def test_editing_only_the_harness_keeps_the_rewrite_applicable(shared_editor):
    editor = shared_editor
    uri = editor.open(toy_file(editor.root, "harness.toy"))
    summary = await finished_run(editor, uri)
    editor.change(uri, "# a comment above the harness\n" + editor.texts[uri])
    result = await editor.command("speedpatch.apply", {"runId": summary["runId"]})
    assert result["applied"] is True
    assert editor.texts[uri].startswith("# a comment above the harness\n")
    assert "return sum(xs)" in editor.texts[uri]


async def test_file_changed_on_disk_outside_the_editor_marks_the_result_stale(shared_editor):
    editor = shared_editor
    path = toy_file(editor.root, "external.toy")
    uri = editor.open(path)
    summary = await finished_run(editor, uri)
    assert any(t.startswith(f"{summary['speedup']:.2f}x faster") for t in await editor.lens_titles(uri))

    # e.g. a `git checkout` rewrote the harness while the editor still shows the old buffer
    path.write_text(path.read_text().replace("list(range(30))", "list(range(40))"))

    async def stale():
        return [t for t in await editor.lens_titles(uri) if "stale" in t]

    lens = (await editor.until(stale, 15, "the stale lens"))[0]
    assert "changed on disk outside the editor" in lens
    runs = await editor.request("speedpatch/runs", {})
    assert [r["stale"] for r in runs if r["runId"] == summary["runId"]] == [True]


@pytest.mark.asyncio(loop_scope="function")
async def test_speedpatch_toml_changes_are_reloaded(start_editor, toy_workspace):
    editor = await start_editor(toy_workspace, {})
    uri = editor.open(toy_workspace / "sum.toy")
    assert await editor.lens_titles(uri) == ["Optimize kernel_sum (toy-count)"]
    (toy_workspace / "speedpatch.toml").write_text('[backends]\ntoy = "toy-turbo"\n')

    async def reloaded():
        titles = await editor.lens_titles(uri)
        return titles if "toy-turbo" in titles[0] else None

    titles = await editor.until(reloaded, 15, "the config reload")
    assert titles[0].startswith("speedpatch: cannot optimize kernel_sum:")
