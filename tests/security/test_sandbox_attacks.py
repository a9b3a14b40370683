"""A result cached by one evaluation for a later one: a candidate process writes a memo wherever it can, and the
next evaluation's candidate process looks for it. Each evaluation's scratch folder is its own and deleted after
it, so what could carry a memo across are the shared places of a Linux system (/dev/shm, /tmp, /var/tmp, /run,
$HOME, /dev). In the sandbox each of them is the process's own (docs/threat-model.md, "Sandbox")."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest
from speedpatch.targets import sandbox

PLACES = ["/dev/shm", "/tmp", "/var/tmp", "/run", "~", "/dev", "/run/user/0"]


@pytest.fixture
def bwrap() -> None:
    found = sandbox.status(refresh=True)
    if not found.active:
        pytest.skip(found.describe())


def candidate(code: str, scratch: Path) -> str:
    scratch.mkdir()
    sandbox.set_process_scope("memo", scratch)
    try:
        return sandbox.run_process([sys.executable, "-c", textwrap.dedent(code)], scratch, 30).output
    finally:
        sandbox.set_process_scope(None)


def test_a_memo_written_outside_scratch_is_gone_for_the_next_evaluation(bwrap: None, tmp_path: Path) -> None:
    marker = f"speedpatch-memo-{os.getpid()}"
    wrote = candidate(f"""
        import os
        for place in {PLACES!r}:
            path = os.path.join(os.path.expanduser(place), "{marker}")
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write("output of seed 1")
                print("WROTE", path)
            except OSError as exc:
                print("REFUSED", path, exc.strerror)
    """, tmp_path / "first")
    assert "WROTE /dev/shm/" in wrote and "WROTE /tmp/" in wrote, wrote  # it could write: the attack is real
    found = candidate(f"""
        import os
        for place in {PLACES!r}:
            path = os.path.join(os.path.expanduser(place), "{marker}")
            if os.path.exists(path):
                print("FOUND", path)
    """, tmp_path / "second")
    assert "FOUND" not in found, found
    host = [os.path.join(os.path.expanduser(p), marker) for p in PLACES]
    assert not [p for p in host if os.path.exists(p)], "the memo reached the machine's own shared folders"
