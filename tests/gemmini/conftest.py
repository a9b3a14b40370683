"""Shared fixtures for the Gemmini tests: build a C program against the native model and run it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# The tests import their shared helpers (test_model_isa) by name; --import-mode=importlib does not add
# this directory to sys.path by itself.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@dataclass
class NativeRun:
    returncode: int | None
    output: str
    stats: dict[str, Any] = field(default_factory=dict)


def _run(exe: Path, workdir: Path, env: dict[str, str], stdin_text: str | None, timeout: float):
    # Our own test programs: plain subprocess, so that long output lines reach the test untruncated.
    return subprocess.run([str(exe)], cwd=workdir, env=env, input=stdin_text, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def gemmini_c(tmp_path: Path) -> Callable[..., Callable[..., NativeRun]]:
    """gemmini_c(source_text, params_dir=None) -> run(stdin_text=None) -> NativeRun. Skips without gcc."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    from speedpatch.targets.gemmini.build import build_native

    counter = iter(range(1_000_000))

    def build(source: str, params_dir: Path | None = None) -> Callable[..., NativeRun]:
        n = next(counter)
        workdir = tmp_path / f"prog{n}"
        workdir.mkdir()
        src = workdir / "prog.c"
        src.write_text(source)
        res, exe = build_native(src, workdir, params_dir=params_dir, timeout=120)
        assert exe is not None, res.output

        def run(stdin_text: str | None = None, timeout: float = 60) -> NativeRun:
            stats_path = workdir / "stats.json"
            stats_path.unlink(missing_ok=True)
            env = {"GEMMINI_MODEL_STATS": str(stats_path), "PATH": "/usr/bin:/bin"}
            out = _run(exe, workdir, env, stdin_text, timeout)
            stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
            return NativeRun(out.returncode, out.stdout + out.stderr, stats)

        return run

    return build


@pytest.fixture(scope="session")
def gemmini_driver(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], NativeRun]:
    """The instruction-script driver (see test_model_isa.py), built once: driver(script_text) -> NativeRun."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    from speedpatch.targets.gemmini.build import build_native
    from test_model_isa import DRIVER_SOURCE

    workdir = tmp_path_factory.mktemp("driver")
    src = workdir / "driver.c"
    src.write_text(DRIVER_SOURCE)
    res, exe = build_native(src, workdir, timeout=120)
    assert exe is not None, res.output
    counter = iter(range(1_000_000))

    def run(script_text: str) -> NativeRun:
        stats_path = workdir / f"stats{next(counter)}.json"
        env = {"GEMMINI_MODEL_STATS": str(stats_path), "PATH": "/usr/bin:/bin"}
        out = _run(exe, workdir, env, script_text, 60)
        stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
        return NativeRun(out.returncode, out.stdout + out.stderr, stats)

    return run
