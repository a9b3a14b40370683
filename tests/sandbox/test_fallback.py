"""Without bubblewrap: rlimits and a scrubbed environment only, said on every run; `[sandbox] required =
true` refuses instead. And `speedpatch backends` says which of the two this machine gets."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from speedpatch.targets import sandbox
from support.toys import cli, cli_env, write_toy


@pytest.fixture
def no_bwrap(monkeypatch):
    monkeypatch.setenv(sandbox.BWRAP_ENV, "/nonexistent/bwrap")
    yield
    monkeypatch.undo()
    sandbox.status(refresh=True)


def test_without_bubblewrap_the_status_says_not_active_and_why(no_bwrap):
    found = sandbox.status(refresh=True)
    assert not found.active
    assert found.describe().startswith("sandbox: not active (bubblewrap not found at /nonexistent/bwrap)")


def test_the_fallback_still_scrubs_the_environment_and_limits_memory(no_bwrap, scratch, python, monkeypatch):
    monkeypatch.setenv("SPEEDPATCH_API_KEY", "sk-fallback-0123456789")
    run = python("""
        import os
        print("KEY" if "SPEEDPATCH_API_KEY" in os.environ else "NO-KEY")
        try:
            bytearray(6 << 30)
        except MemoryError:
            print("MEMORY-ERROR")
    """, scratch)
    assert not run.sandboxed
    assert "NO-KEY" in run.output and "MEMORY-ERROR" in run.output


def test_the_fallback_kills_the_process_group_after_the_run(no_bwrap, scratch, alive):
    marker = "54321.5"
    run = sandbox.run_process(["/bin/sh", "-c", f"sleep {marker} & echo started"], scratch, 30)
    assert "started" in run.output
    time.sleep(0.2)
    assert alive(f"sleep {marker}") == []


def test_a_scope_that_requires_the_sandbox_refuses_to_run_without_it(no_bwrap, tmp_path, python):
    sandbox.set_process_scope("test", tmp_path, required=True)
    try:
        run = python("open('ran', 'w').write('yes')", tmp_path)
    finally:
        sandbox.set_process_scope(None)
    assert run.returncode == 126 and "required = true" in run.output
    assert not (tmp_path / "ran").exists()


def _optimize(tmp_path, bwrap: str, toml: str = "") -> subprocess.CompletedProcess[str]:
    write_toy(tmp_path)
    if toml:
        (tmp_path / "speedpatch.toml").write_text(toml)
    env = cli_env()
    env[sandbox.BWRAP_ENV] = bwrap
    return subprocess.run(cli("optimize", "sum.toy", "--offline", "-T", "1"), cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_every_run_without_the_sandbox_says_so(tmp_path):
    proc = _optimize(tmp_path, "none")
    assert proc.returncode == 0, proc.stderr
    assert "sandbox: not active (disabled by SPEEDPATCH_BWRAP='none')" in " ".join(proc.stderr.split())


def test_a_run_with_the_sandbox_does_not_warn(tmp_path, bwrap):
    proc = _optimize(tmp_path, sandbox.bwrap_path() or "bwrap")
    assert proc.returncode == 0, proc.stderr
    assert "not active" not in proc.stderr


def test_required_true_refuses_to_run_without_bubblewrap(tmp_path):
    proc = _optimize(tmp_path, "none", "[sandbox]\nrequired = true\n")
    assert proc.returncode == 2
    assert "error: [sandbox] required = true in speedpatch.toml, but sandbox: not active" in proc.stderr


def test_backends_lists_whether_the_sandbox_is_active(tmp_path, bwrap):
    env = cli_env()
    table = subprocess.run(cli("backends"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    rows = json.loads(subprocess.run(cli("backends", "--json"), cwd=tmp_path, env=env, capture_output=True,
                                     text=True, timeout=120).stdout)
    assert "sandbox: active (bubblewrap" in " ".join(table.stdout.split())
    assert all(r["sandbox"] is True for r in rows)


def test_backends_says_why_the_sandbox_is_not_active(tmp_path):
    env = cli_env()
    env[sandbox.BWRAP_ENV] = "none"
    done = subprocess.run([sys.executable, "-m", "speedpatch.cli.main", "backends"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert "sandbox: not active (disabled by SPEEDPATCH_BWRAP='none')" in " ".join(done.stdout.split())
