from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest
from speedpatch.targets import sandbox
from speedpatch.targets.sandbox import ProcResult


@pytest.fixture
def bwrap() -> sandbox.Status:
    """The sandbox must be active here; without bubblewrap these tests skip (fail under scripts/test.sh,
    which installs it)."""
    found = sandbox.status(refresh=True)
    if not found.active:
        if os.environ.get("SPEEDPATCH_REQUIRE_TOOLS"):
            pytest.fail(f"bubblewrap is required by scripts/test.sh: {found.describe()}")
        pytest.skip(found.describe())
    return found


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """An evaluation's scratch folder, set as this thread's scope the way the evaluation pool sets it."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    sandbox.set_process_scope("test", folder)
    yield folder
    sandbox.set_process_scope(None)


def _python(code: str, cwd: Path, timeout: float = 30, **kw) -> ProcResult:
    return sandbox.run_process([sys.executable, "-c", textwrap.dedent(code)], cwd, timeout, **kw)


@pytest.fixture
def python():
    """run(code, cwd, timeout=30, **run_process options): a Python program run the way backends run
    candidates."""
    return _python


@pytest.fixture
def alive():
    """alive(marker): live processes whose command line contains marker."""
    return _processes_with


def _processes_with(marker: str) -> list[str]:
    """Live (non-zombie) processes whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(f"{entry.name}: {cmdline}")
    return found
