"""Helpers for the NKI tests: running kernel files through the emulator backend in a scratch dir."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from speedpatch.model import Evaluation
from speedpatch.targets.base import EvalContext
from speedpatch.targets.nki.target import NkiTarget

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "nki"


@pytest.fixture
def target() -> NkiTarget:
    return NkiTarget()


_EMULATED: dict[tuple[str, str | None, str], Evaluation] = {}


@pytest.fixture
def evaluate(target: NkiTarget, tmp_path: Path):
    """evaluate(source, kernel=None, backend="nki-emulator", settings=None, timeout=30) -> Evaluation

    Emulator results are deterministic, so they are cached for the session (each evaluation is a
    subprocess start)."""
    counter = iter(range(1000))

    def run(source: str, kernel: str | None = None, backend: str = "nki-emulator",
            settings: dict | None = None, timeout: float = 30.0) -> Evaluation:
        key = (source, kernel, json.dumps(settings, sort_keys=True))
        if backend == "nki-emulator" and key in _EMULATED:
            return _EMULATED[key]
        ev = _run(source, kernel, backend, settings, timeout)
        if backend == "nki-emulator" and ev.status != "timeout":
            _EMULATED[key] = ev
        return ev

    def _run(source: str, kernel: str | None, backend: str, settings: dict | None, timeout: float) -> Evaluation:
        kernels = target.find_kernels(source)
        assert kernels, "no kernel found in the test source"
        chosen = next(k for k in kernels if kernel is None or k.name == kernel)
        workdir = tmp_path / f"eval{next(counter)}"
        workdir.mkdir()
        ctx = EvalContext(kernel=chosen, path=str(workdir / "kernel.py"), workdir=workdir, timeout=timeout,
                          settings=settings or {})
        return target.backend(backend).evaluate(source, ctx)

    return run
