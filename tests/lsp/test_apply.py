"""Applying a rewrite: the lenses follow the document's content, and the edited file is brought forward."""

from __future__ import annotations

import pytest
from lsp_editor import Editor, toy_file

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def finished_run(editor: Editor, name: str) -> tuple[str, dict]:
    uri = editor.open(toy_file(editor.root, name))
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum", "quick": True})
    summary = await editor.run_end(started["runId"])
    assert summary["speedup"] and summary["speedup"] > 1.0

    async def offered() -> bool:
        return any(t.startswith("Apply (") for t in await editor.lens_titles(uri))

    await editor.until(offered, what="the Apply lens")
    return uri, summary


async def test_the_edit_of_an_apply_is_followed_by_a_lens_refresh_and_applied_lenses(shared_editor):
    editor = shared_editor
    uri, summary = await finished_run(editor, "refresh.toy")
    assert (await editor.command("speedpatch.apply", {"runId": summary["runId"]}))["applied"]
    change = max(i for i, event in enumerate(editor.timeline) if event[:2] == ("change", uri))

    # VS Code asks for lenses again only when told to (or after its own delay): the edit must tell it
    await editor.until(
        lambda: ("lens-refresh",) in editor.timeline[change + 1 :], what="a lens refresh after the edit"
    )
    titles = await editor.lens_titles(uri)
    assert any(t.startswith("applied: ") and t.endswith("save to re-verify") for t in titles), titles
    assert not any(t.startswith("Apply (") for t in titles)


async def test_apply_shows_the_edited_file_with_the_focus(shared_editor):
    editor = shared_editor
    uri, summary = await finished_run(editor, "forward.toy")
    shown = len(editor.client.shown_documents)
    assert (await editor.command("speedpatch.apply", {"runId": summary["runId"]}))["applied"]
    (request,) = editor.client.shown_documents[shown:]  # pytest-lsp records window/showDocument
    assert request.uri == uri and request.take_focus is True


async def test_show_diff_is_offered_until_the_file_on_disk_holds_the_applied_rewrite(shared_editor):
    editor = shared_editor
    uri, summary = await finished_run(editor, "saved.toy")
    assert (await editor.command("speedpatch.apply", {"runId": summary["runId"]}))["applied"]
    assert "Show diff" in await editor.lens_titles(uri)  # unsaved: the diff is what the save would accept

    # written to disk without the editor's save (as `speedpatch apply` does): the file holds the winner
    from lsp_editor import _path

    _path(uri).write_text(editor.texts[uri])
    titles = await editor.lens_titles(uri)
    assert "Show diff" not in titles
    assert any(t.startswith("applied: ") for t in titles)
