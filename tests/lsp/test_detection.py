"""Kernels are found as the user types, in every registered target's language."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from speedpatch import targets

pytestmark = pytest.mark.asyncio(loop_scope="module")  # all tests share one server

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def require_target(name: str) -> targets.Target:
    try:
        return targets.get_target(name)
    except KeyError as exc:
        pytest.skip(f"target {name} is not available: {exc}")


def example(tmp_path: Path, relative: str) -> Path:
    source = EXAMPLES / relative
    if not source.is_file():
        pytest.skip(f"example {relative} is not in the repository")
    return Path(shutil.copy(source, tmp_path / source.name))


async def test_kernel_typed_into_a_document_appears_and_disappears(shared_editor):
    editor = shared_editor
    uri = editor.open(editor.root / "new.toy", "INPUTS = []\n")
    assert await editor.lens_titles(uri) == []
    editor.change(uri, "INPUTS = []\n\n\ndef kernel_new(xs):\n    return xs\n")
    lenses = await editor.lenses(uri)
    assert [lens.command.title for lens in lenses] == ["Optimize kernel_new (toy-count)"]
    assert lenses[0].range.start.line == 3
    editor.change(uri, "INPUTS = []\n")
    assert await editor.lens_titles(uri) == []


@pytest.mark.parametrize(
    "target, relative, kernel, backend",
    [
        ("gemmini", "gemmini/matmul_128.c", "matmul_kernel", "gemmini-native"),
        ("nki", "nki/tensor_add.py", "tensor_add", "nki-emulator"),
    ],
)
async def test_runnable_kernels_are_detected_in_c_and_nki_python(
    shared_editor, target, relative, kernel, backend
):
    require_target(target)
    editor = shared_editor
    path = example(editor.root, relative)
    uri = editor.open(path)
    assert await editor.lens_titles(uri) == [f"Optimize {kernel} ({backend})"]
    assert not [d for d in editor.diagnostics(uri) if d.code == "not-runnable"]


async def test_cuda_kernel_on_its_compile_only_default_backend_is_shown_with_its_reason(shared_editor):
    cuda = require_target("cuda")
    if cuda.default_backend != "cuda-compile":
        pytest.skip(f"the CUDA default backend is {cuda.default_backend}, not the compile-only one")
    editor = shared_editor
    path = example(editor.root, "cuda/matmul.cu")
    kernel = cuda.find_kernels(path.read_text(), str(path))[0]
    # cuda-compile cannot time candidates: the kernel is listed with that reason, and cannot be optimized
    uri = editor.open(path)
    titles = await editor.lens_titles(uri)
    assert len(titles) == 1 and titles[0].startswith(f"speedpatch: cannot optimize {kernel.name}: ")
    assert "cannot time candidates" in titles[0]

    def warned():
        return [d for d in editor.diagnostics(uri) if d.code == "not-runnable"]

    diag = (await editor.until(warned, what="the not-runnable warning"))[0]
    assert (
        diag.severity == types.DiagnosticSeverity.Warning and diag.range.start.line == kernel.signature_line
    )
    (action,) = await editor.actions(uri, kernel.signature_line)
    assert (
        action.title == f"Optimize {kernel.name} (cuda-compile)" and "cannot time" in action.disabled.reason
    )


async def test_target_findings_show_as_warnings_while_typing(shared_editor):
    cuda = require_target("cuda")
    editor = shared_editor
    path = example(editor.root, "cuda/matmul.cu")
    kernel = cuda.find_kernels(path.read_text(), str(path))[0]
    uri = editor.open(path)
    text = editor.texts[uri]
    cheat = "__global__ void helper(float* x) { clock64(); }\n"
    editor.change(uri, text[: kernel.start] + cheat + text[kernel.start :])

    def flagged() -> list[types.Diagnostic]:
        return [d for d in editor.diagnostics(uri) if d.code == "harness"]

    diag = (await editor.until(flagged, what="the harness finding"))[0]
    assert diag.severity == types.DiagnosticSeverity.Warning and "clock64" in diag.message
    assert diag.range.start.line == kernel.start_line
    editor.change(uri, text)
    await editor.until(lambda: not flagged(), what="the finding to clear")
