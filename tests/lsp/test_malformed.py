"""Whatever the editor sends, the server answers and keeps running."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

pytestmark = pytest.mark.asyncio(loop_scope="module")  # one server lives through all of it


async def still_serving(editor, uri) -> None:
    assert await editor.lens_titles(uri) == ["Optimize kernel_sum (toy-count)"]


async def test_a_syntax_error_that_hides_a_kernel_says_so_at_its_line_until_fixed(shared_editor):
    editor = shared_editor
    uri = editor.open(editor.root / "sum.toy")
    good = editor.texts[uri]
    editor.change(uri, good.replace("def kernel_sum(xs):", "def kernel_sum(xs:"))
    # the kernel's own lens and actions go (it cannot be found), but the user is told why, where
    lenses = await editor.lenses(uri)
    assert [(lens.range.start.line, lens.command.title[:41]) for lens in lenses] == [
        (7, "speedpatch: kernel_sum not shown: line 8:")
    ]
    assert await editor.actions(uri, 7) == []

    def parse_error() -> list[types.Diagnostic]:
        return [d for d in editor.diagnostics(uri) if d.code == "does-not-parse"]

    diag = (await editor.until(parse_error, what="the does-not-parse diagnostic"))[0]
    assert diag.range.start.line == 7 and diag.severity == types.DiagnosticSeverity.Warning
    assert "kernel_sum cannot be optimized until it does" in diag.message
    editor.change(uri, good)
    await editor.until(lambda: not parse_error(), what="the diagnostic to clear")
    assert "Optimize kernel_sum (toy-count)" in await editor.lens_titles(uri)
    await still_serving(editor, uri)


async def test_binary_junk_is_answered_without_a_crash(shared_editor):
    editor = shared_editor
    junk_path = editor.root / "junk.toy"
    junk = "".join(chr(c) for c in range(0, 0x2FF)) * 20 + "\udcff\x00\x00def kernel_x(:\n"
    junk_uri = editor.open(junk_path, junk.encode("utf-8", "replace").decode("utf-8"))
    assert await editor.lens_titles(junk_uri) == []
    assert await editor.hints(junk_uri) == []
    with pytest.raises(JsonRpcException):
        await editor.command("speedpatch.optimize", {"uri": junk_uri, "kernel": "kernel_x"})
    await still_serving(editor, editor.open(editor.root / "sum.toy"))


async def test_huge_file_is_not_scanned_and_a_diagnostic_says_so(shared_editor):
    editor = shared_editor
    huge = (editor.root / "sum.toy").read_text() + "# padding\n" * 150_000
    uri = editor.open(editor.root / "huge.toy", huge)
    assert await editor.lens_titles(uri) == []

    def note():
        return [d for d in editor.diagnostics(uri) if d.code == "not-scanned"]

    diag = (await editor.until(note, what="the not-scanned diagnostic"))[0]
    assert "limit" in diag.message and diag.severity == types.DiagnosticSeverity.Information
    await still_serving(editor, editor.open(editor.root / "sum.toy"))


async def test_bad_command_arguments_get_an_error_response(shared_editor):
    editor = shared_editor
    uri = editor.open(editor.root / "sum.toy")
    for args in ([], ["not an object"], [{"uri": uri}], [{"uri": uri, "kernel": "kernel_missing"}]):
        with pytest.raises(JsonRpcException):
            await editor.command("speedpatch.optimize", *args)
    with pytest.raises(JsonRpcException):
        await editor.command("speedpatch.apply", {"runId": "no-such-run"})
    with pytest.raises(JsonRpcException):
        await editor.request("speedpatch/candidate", {"runId": "no-such-run"})
    await still_serving(editor, uri)


async def test_unknown_kernel_error_lists_the_kernels_found(shared_editor):
    editor = shared_editor
    uri = editor.open(editor.root / "sum.toy")
    with pytest.raises(JsonRpcException, match="kernels found: kernel_sum"):
        await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_nope"})


@pytest.mark.asyncio(loop_scope="function")
async def test_unwritable_workspace_still_gets_editor_features(start_editor, toy_workspace):
    (toy_workspace / ".speedpatch").write_text("a file where the store folder should be\n")
    editor = await start_editor(toy_workspace, {"offline": True})
    uri = editor.open(toy_workspace / "sum.toy")
    assert await editor.lens_titles(uri) == ["Optimize kernel_sum (toy-count)"]
    await editor.until(lambda: editor.client.messages, what="the warning about the store")
    assert "will not survive a restart" in editor.client.messages[0].message
