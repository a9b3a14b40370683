"""One NKI problem evaluated through the real nki-emulator backend (the kernel in its own isolated process),
as the search evaluates a candidate: the problem file, optionally with its kernel replaced by a candidate's."""

from __future__ import annotations

from pathlib import Path

from speedpatch.model import Evaluation
from speedpatch.targets.base import EvalContext
from speedpatch.targets.nki.target import NkiTarget


def evaluate_problem(tmp_path: Path, problem: str, kernel_source: str | None = None, timeout: float = 120) -> Evaluation:
    """`problem` with its one kernel replaced by `kernel_source` (None: the problem as its own candidate),
    evaluated in a fresh folder under tmp_path."""
    target = NkiTarget()
    (kernel,) = target.find_kernels(problem)
    source = problem if kernel_source is None else target.splice(problem, kernel, kernel_source)
    workdir = tmp_path / f"eval-{len(list(tmp_path.iterdir()))}"
    workdir.mkdir()
    ctx = EvalContext(kernel=kernel, path=str(workdir / "problem.py"), workdir=workdir, timeout=timeout,
                      baseline_source=problem)
    return target.backend("nki-emulator").evaluate(source, ctx)
