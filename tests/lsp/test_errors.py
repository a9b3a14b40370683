"""Errors that help: a run whose starting code fails says so (at the user's lines, with the compiler's words),
and a CUDA kernel with no GPU here gets a real way forward (cuda-ssh set up in speedpatch.toml)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tomllib
from lsp_editor import OFFLINE, toy_file
from lsprotocol import types
from speedpatch import targets

pytestmark = pytest.mark.asyncio(loop_scope="module")
OWN_SERVER = pytest.mark.asyncio(loop_scope="function")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CRASHING_KERNEL_START = "def kernel_sum(xs):\n    total = undefined_name\n"


async def _run(editor, uri: str, kernel: str) -> dict:
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": kernel})
    return await editor.run_end(started["runId"])


async def test_a_baseline_that_fails_is_reported_as_such_not_as_no_faster_version(shared_editor):
    editor = shared_editor
    path = toy_file(editor.root, "crash.toy")
    source = path.read_text()
    assert "def kernel_sum(xs):\n    total = 0\n" in source
    path.write_text(source.replace("def kernel_sum(xs):\n    total = 0\n", CRASHING_KERNEL_START))
    uri = editor.open(path)
    summary = await _run(editor, uri, "kernel_sum")
    assert summary["status"] == "failed"
    titles = await editor.lens_titles(uri)
    assert titles[0] == f"speedpatch: kernel_sum crashes when run (run {summary['runId']}); see Problems"
    assert not any("no faster version" in t for t in titles)

    def failed() -> list[types.Diagnostic]:
        return [d for d in editor.diagnostics(uri) if d.code == "baseline-failed"]

    diag = (await editor.until(failed, what="the baseline-failed diagnostic"))[0]
    assert diag.severity == types.DiagnosticSeverity.Error and "undefined_name" in diag.message

    def told() -> list[types.ShowMessageParams]:
        return [m for m in editor.client.messages if m.type == types.MessageType.Error and "crashes" in m.message]

    # the message says what the lens says, with the program's first words, in one line
    (message,) = await editor.until(told, what="the failure message")
    assert message.message.startswith("speedpatch: kernel_sum crashes when run: exit 1: ")
    assert message.message.endswith("; see Problems") and "\n" not in message.message
    # no hint with an unknown figure: nothing was measured
    assert await editor.hints(uri) == []


@pytest.mark.slow
@OWN_SERVER
async def test_a_compiler_error_in_the_baseline_is_a_diagnostic_at_the_users_line(start_editor, tmp_path):
    try:
        gemmini = targets.get_target("gemmini")
        usable = gemmini.backend("gemmini-native").availability()
    except KeyError as exc:
        pytest.skip(f"the gemmini target is not available: {exc}")
    if not usable.usable:
        pytest.skip(f"gemmini-native is not usable here: {usable.reason}")
    path = Path(shutil.copy(EXAMPLES / "gemmini" / "matmul_128.c", tmp_path / "matmul_128.c"))
    kernel = gemmini.find_kernels(path.read_text(), str(path))[0]
    lines = path.read_text().split("\n")
    bad_line = kernel.signature_line + 1
    lines.insert(bad_line, "    undefined_call(1);")
    path.write_text("\n".join(lines))
    editor = await start_editor(tmp_path, {**OFFLINE, "search": {"iterations": 1, "beam": 1, "plans": 1}})
    uri = editor.open(path)
    summary = await _run(editor, uri, kernel.name)
    assert summary["status"] == "failed"
    assert (await editor.lens_titles(uri))[0].startswith(f"speedpatch: {kernel.name} does not compile (run ")

    def failed() -> list[types.Diagnostic]:
        return [d for d in editor.diagnostics(uri) if d.code == "baseline-failed"]

    diags = await editor.until(failed, what="the compiler's error as a diagnostic")
    (diag,) = [d for d in diags if "undefined_call" in d.message]
    # gcc said /tmp/speedpatch-eval-*/matmul_128.c:LINE:5: the user's line and column, no scratch path
    assert diag.range.start == types.Position(line=bad_line, character=4)
    assert "speedpatch-eval" not in diag.message and "/tmp/" not in diag.message
    # the message: the first error at the user's line, no scratch path, no log repeated
    (message,) = [m.message for m in editor.client.messages if m.type == types.MessageType.Error]
    assert message.startswith(f"speedpatch: {kernel.name} does not compile: matmul_128.c line {bad_line + 1}: ")
    assert "undefined_call" in message and "speedpatch-eval" not in message and "/tmp/" not in message


async def test_configure_gpu_writes_the_cuda_ssh_section_and_opens_it_at_the_host_line(shared_editor):
    editor = shared_editor
    config = editor.root / "speedpatch.toml"
    before = config.read_text() if config.exists() else None
    kernel_file = toy_file(editor.root, "gpu.toy")
    try:
        config.write_text('# my settings\n[search]\niterations = 2\n')
        shown = len(editor.client.shown_documents)
        result = await editor.command("speedpatch.configureGpu", {"uri": editor.uri(kernel_file)})
        data = tomllib.loads(config.read_text())
        assert data["backends"]["cuda"] == "cuda-ssh" and data["backend"]["cuda-ssh"]["host"] == ""
        assert data["search"]["iterations"] == 2 and config.read_text().startswith("# my settings\n")
        lines = config.read_text().split("\n")
        assert result["changed"] is True and lines[result["line"]].startswith("host = ")
        opened = editor.client.shown_documents[shown]
        assert opened.uri == editor.uri(config) and opened.selection.start.line == result["line"]
        # a second time changes nothing
        again = await editor.command("speedpatch.configureGpu", {"uri": editor.uri(kernel_file)})
        assert again["changed"] is False and again["line"] == result["line"]
    finally:
        if before is None:
            config.unlink()
        else:
            config.write_text(before)
