"""The figures explain themselves: a short hint, a hover with the receipt, labels for figures that are not
from hardware, and a finished search that offers its next steps as buttons."""

from __future__ import annotations

import pytest
from lsp_editor import slow_toy, toy_file
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


async def test_the_hint_is_the_verdict_in_a_few_words_and_names_a_model_figure(shared_editor):
    editor = shared_editor
    uri, summary = await _finished(editor, "hint.toy")
    (hint,) = await editor.hints(uri)
    # the toy's figures are executed lines from a model, not from hardware: the hint says so, briefly
    assert hint.label == f"{summary['speedup']:.2f}x faster (model)"
    assert "⏱" not in hint.label  # no emoji font needed


async def test_the_hint_sits_before_the_signature_so_a_long_line_cannot_hide_it(shared_editor):
    editor = shared_editor
    path = toy_file(editor.root, "long_line.toy")
    path.write_text(path.read_text().replace("def kernel_sum(xs):", "def kernel_sum(xs):" + " " * 200 + "# long"))
    uri = editor.open(path)
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    await editor.run_end(started["runId"])
    (hint,) = await editor.hints(uri)
    # at the line's end it would sit past column 200, under the minimap or off screen
    assert (hint.position.line, hint.position.character) == (KERNEL_LINE, 0)
    assert hint.padding_right and not hint.padding_left  # a space between the hint and the code after it


async def test_the_hints_tooltip_says_how_the_figure_was_measured(shared_editor):
    editor = shared_editor
    uri, summary = await _finished(editor, "hint_tooltip.toy")
    (hint,) = await editor.hints(uri)
    tooltip = hint.tooltip
    assert isinstance(tooltip, types.MarkupContent) and tooltip.kind == types.MarkupKind.Markdown
    # what the label leaves out: the figures before and after, the backend, the receipt
    base, best = summary["baselineValue"], summary["bestValue"]
    assert f"{base:,.0f} -> {best:,.0f} lines (toy-count, run `{summary['runId']}`)" in tooltip.value
    assert "How it was measured" in tooltip.value and "| statistic | executed lines |" in tooltip.value
    assert "not from hardware" in tooltip.value


async def test_while_searching_the_hint_says_so_and_its_tooltip_gives_the_original_figure(shared_editor):
    editor = shared_editor
    uri = editor.open(slow_toy(editor.root, seconds=0.3, name="searching.toy"))
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})

    async def searching() -> list[types.InlayHint]:
        return [h for h in await editor.hints(uri) if h.label == "searching…"]

    (hint,) = await editor.until(searching, what="the searching hint")
    assert isinstance(hint.tooltip, types.MarkupContent)
    assert "searching for a faster `kernel_sum` on toy-count; the original measures" in hint.tooltip.value
    assert hint.tooltip.value.endswith(" lines")
    await editor.command("speedpatch.cancel", {"runId": started["runId"]})
    await editor.run_end(started["runId"])


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
