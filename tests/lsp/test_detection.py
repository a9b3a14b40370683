"""Kernels are found as the user types, in every registered target's language."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsp_editor import action_parts
from lsprotocol import types
from pygls.exceptions import JsonRpcException
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


async def test_cuda_kernel_without_a_gpu_names_its_global_kernel_and_offers_gpu_setup(shared_editor):
    cuda = require_target("cuda")
    if cuda.default_backend != "cuda-compile":
        pytest.skip(f"the CUDA default backend is {cuda.default_backend}, not the compile-only one")
    from speedpatch.targets.cuda.detect import global_functions

    editor = shared_editor
    path = example(editor.root, "cuda/matmul.cu")
    kernel = cuda.find_kernels(path.read_text(), str(path))[0]
    device_kernel = global_functions(kernel.text)[0].name
    assert device_kernel != kernel.name  # the region is named for its host function (launch)
    # cuda-compile cannot time candidates: a short lens naming the __global__ kernel, and the way forward
    uri = editor.open(path)
    lenses = await editor.lenses(uri)
    assert [lens.command.title for lens in lenses] == [
        f"speedpatch: no GPU here to time {device_kernel}",
        "Configure a GPU backend…",
    ]
    configure_lens = lenses[1].command
    assert configure_lens.command == "speedpatch.configureGpu" and list(configure_lens.arguments) == [{"uri": uri}]

    def warned():
        return [d for d in editor.diagnostics(uri) if d.code == "not-runnable"]

    diag = (await editor.until(warned, what="the not-runnable warning"))[0]
    assert (
        diag.severity == types.DiagnosticSeverity.Warning and diag.range.start.line == kernel.signature_line
    )
    assert "cannot time candidates" in diag.message and "cuda-ssh" in diag.message
    disabled, configure = await editor.actions(uri, kernel.signature_line)
    assert (
        disabled.title == f"Optimize {kernel.name} (cuda-compile)" and "cannot time" in disabled.disabled.reason
    )
    _, command, arguments = action_parts(configure)
    assert command == "speedpatch.configureGpu" and list(arguments) == [{"uri": uri}]


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


async def test_a_kernel_in_a_file_that_does_not_parse_is_not_runnable_and_says_where(shared_editor):
    gemmini = require_target("gemmini")
    editor = shared_editor
    path = example(editor.root, "gemmini/matmul_128.c")
    kernel = gemmini.find_kernels(path.read_text(), str(path))[0]
    uri = editor.open(path)
    good = editor.texts[uri]
    lines = good.split("\n")
    broken_line = kernel.signature_line + 1
    lines[broken_line] = lines[broken_line] + " ) ("
    editor.change(uri, "\n".join(lines))
    # tree-sitter still finds the kernel: it stays, not runnable, with the parse error as the reason
    titles = await editor.lens_titles(uri)
    assert len(titles) == 1
    assert titles[0].startswith(f"speedpatch: cannot optimize {kernel.name}: the file does not parse (line ")

    def parse_error() -> list[types.Diagnostic]:
        return [d for d in editor.diagnostics(uri) if d.code == "does-not-parse"]

    diag = (await editor.until(parse_error, what="the does-not-parse diagnostic"))[0]
    assert diag.range.start.line == broken_line and "does not parse as C" in diag.message
    with pytest.raises(JsonRpcException, match="does not parse"):
        await editor.command("speedpatch.optimize", {"uri": uri, "kernel": kernel.name})
    editor.change(uri, good)
    await editor.until(lambda: not parse_error(), what="the diagnostic to clear")
