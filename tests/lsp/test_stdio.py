"""stdout is the LSP channel: output from targets or their child processes must not corrupt it."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from lsp_editor import OFFLINE, TESTS

pytestmark = pytest.mark.asyncio


async def test_stray_stdout_output_does_not_break_the_protocol(start_editor, toy_workspace):
    env = {
        "SPEEDPATCH_TARGET_MODULES": "toy_target,noisy_target",
        "PYTHONPATH": os.pathsep.join([str(TESTS / "toy"), str(Path(__file__).parent), str(TESTS)]),
    }
    editor = await start_editor(toy_workspace, OFFLINE, env)
    noisy = editor.open(toy_workspace / "x.noisy", "anything\n")
    assert await asyncio.wait_for(editor.lens_titles(noisy), 20) == []
    uri = editor.open(toy_workspace / "sum.toy")
    assert await asyncio.wait_for(editor.lens_titles(uri), 20) == ["Optimize kernel_sum (toy-count)"]
    assert editor.client.error is None
