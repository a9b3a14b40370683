"""Fixtures for the language server tests: a tmp workspace with the toy example, and editors to start."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

sys.path.insert(0, str(Path(__file__).parent))  # lsp_editor.py, next to this file

from lsp_editor import OFFLINE, Editor, launch, stop_editor  # noqa: E402


@pytest_asyncio.fixture
async def start_editor() -> AsyncIterator[Callable[..., Any]]:
    """start_editor(root, settings=None, env=None, folders=None) -> a connected, initialized Editor (a
    multi-root workspace when folders are given); all are shut down at the end of the test."""
    editors: list[Editor] = []

    async def start(
        root: Path,
        settings: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        folders: list[Path] | None = None,
    ) -> Editor:
        editor = await launch(root, settings, env, folders=folders)
        editors.append(editor)
        return editor

    yield start
    for editor in editors:
        await stop_editor(editor)


@pytest.fixture
def toy_workspace(tmp_path: Path) -> Path:
    from toy_target import example  # tests/conftest.py puts tests/toy on sys.path

    example(tmp_path)
    return tmp_path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_editor(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Editor]:
    """One server for a whole module of tests that only read (detection, malformed input): starting a
    server costs more than most of those tests. Modules using it run on the module's event loop."""
    from toy_target import example

    root = tmp_path_factory.mktemp("shared")
    example(root)
    editor = await launch(root, OFFLINE)
    yield editor
    await stop_editor(editor)
