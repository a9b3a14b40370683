"""The figures explain themselves: a short hint, a hover with the receipt, labels for figures that are not
from hardware, and a finished search that offers its next steps as buttons."""

from __future__ import annotations

import pytest
from lsp_editor import toy_file
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")
KERNEL_LINE = 7  # `def kernel_sum(xs):` in the toy example


async def _finished(editor, name: str) -> tuple[str, dict]:
    uri = editor.open(toy_file(editor.root, name))
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    summary = await editor.run_end(started["runId"])
    assert summary["status"] == "finished" and summary["speedup"] > 1.0
    return uri, summary


async def _hover(editor, uri: str, line: int) -> types.Hover | None:
    return await editor.client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=4)
        )
    )


async def test_the_hint_is_short_names_a_model_figure_and_its_tooltip_is_the_receipt(shared_editor):
    editor = shared_editor
    uri, summary = await _finished(editor, "hint.toy")
    (hint,) = await editor.hints(uri)
    # the toy's figures are executed lines from a model, not from hardware: the hint says so, briefly
    base, best = summary["baselineValue"], summary["bestValue"]
    assert hint.label == f"{base:.0f} -> {best:.0f} lines ({summary['speedup']:.2f}x, model)"
    assert len(hint.label) <= 43 and "⏱" not in hint.label  # VS Code cuts inlay hints at 43 characters
    tooltip = hint.tooltip
    assert isinstance(tooltip, types.MarkupContent) and tooltip.kind == types.MarkupKind.Markdown
    assert "How it was measured" in tooltip.value and "| statistic | executed lines |" in tooltip.value
    assert "not from hardware" in tooltip.value


async def test_hover_on_the_signature_shows_the_verdict_and_how_it_was_measured(shared_editor):
    editor = shared_editor
    uri, summary = await _finished(editor, "hover.toy")
    hover = await _hover(editor, uri, KERNEL_LINE)
    assert hover is not None
    text = hover.contents.value
    assert f"run `{summary['runId']}`" in text and f"{summary['speedup']:.2f}x faster" in text
    assert "| backend | toy-count |" in text
    assert await _hover(editor, uri, 0) is None  # off the kernel's signature: nothing to say


async def test_the_result_lens_carries_the_receipt_as_its_tooltip(shared_editor):
    editor = shared_editor
    uri, _ = await _finished(editor, "tooltip.toy")
    lens = next(lens for lens in await editor.lenses(uri) if " faster on the " in lens.command.title)
    assert "statistic: executed lines" in lens.command.tooltip


async def test_a_finished_search_offers_show_diff_and_apply_buttons(shared_editor):
    editor = shared_editor
    editor.answer = "Show diff"
    try:
        uri, summary = await _finished(editor, "buttons.toy")

        def offered():
            return [r for r in editor.message_requests if "buttons.toy" in r.message]

        request = (await editor.until(offered, what="the result message"))[-1]
        claim = f"speedpatch: kernel_sum in buttons.toy can run {summary['speedup']:.2f}x faster (cycle model)"
        # the toy offers one wrong move on purpose: the message says so, and offers the report that explains it
        failed = summary["failures"]["text"]
        assert failed.endswith("failed: 1 incorrect")
        assert request.message == f"{claim}; {failed} — see the report"
        assert [a.title for a in request.actions] == ["Show diff", "Apply", "Show report"]
        await editor.until(
            lambda: any(d["runId"] == summary["runId"] for d in editor.open_diffs), what="the diff to open"
        )
        assert not any("see the code lens" in m.message for m in editor.client.messages)
    finally:
        editor.answer = None


async def test_pressing_apply_on_the_result_message_applies_the_rewrite(shared_editor):
    editor = shared_editor
    editor.answer = "Apply"
    try:
        uri, _ = await _finished(editor, "apply_button.toy")
        await editor.until(lambda: "while i < len(xs)" not in editor.texts[uri], what="the rewrite to be applied")
        assert any("save to re-verify" in t for t in await editor.lens_titles(uri))
    finally:
        editor.answer = None
