"""One evaluation of one candidate, the same on every executor (this machine or a Ray node).

The trust boundary comes first (engine/boundary.py: the problem unchanged outside the kernel region, no
problem name redefined), then the target's static checks; only then does the backend build and run the
candidate, in a fresh scratch folder, in the sandbox (targets/sandbox.py). A backend that raises is a
backend failure recorded as an Evaluation, never a crash.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from speedpatch.engine import boundary
from speedpatch.model import INFRA_ERROR, REJECTED, Evaluation, Problem
from speedpatch.targets.base import Backend, EvalContext, Target, set_process_scope
from speedpatch.targets.sandbox import Limits

# quoted includes next to the source; what a remote worker needs besides the source itself
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
MAX_SHIPPED_BYTES = 4 << 20


@dataclass
class EvalTask:
    """Everything an evaluation needs, as data: it travels to Ray workers, which have none of the
    driver's files."""

    problem: Problem
    source: str  # the whole candidate file
    settings: dict[str, Any] = field(default_factory=dict)  # the backend's speedpatch.toml table
    timeout: float = 120.0
    seed: int = 0
    limits: Limits | None = None
    sandbox_required: bool = False
    files: dict[str, str] = field(default_factory=dict)  # the problem folder's files the source includes


def neighbour_files(problem: Problem) -> dict[str, str]:
    """Files in the problem's folder that its source includes with quotes (transitively), by relative
    path, so that a worker on another machine builds exactly what the driver would."""
    if not problem.path:
        return {}
    folder = Path(problem.path).resolve().parent
    found: dict[str, str] = {}
    todo = [problem.source]
    total = 0
    while todo:
        for name in _INCLUDE.findall(todo.pop()):
            path = (folder / name).resolve()
            if name in found or not path.is_file() or folder not in path.parents:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            total += len(text)
            if total > MAX_SHIPPED_BYTES:
                return found
            found[name] = text
            todo.append(text)
    return found


def _materialize(task: EvalTask) -> tuple[str, Path | None]:
    """The problem's path on this machine: the driver's own when it exists here, else a copy of the
    problem folder's included files in a temporary folder (returned for clean-up)."""
    path = Path(task.problem.path) if task.problem.path else None
    if path is None or path.parent.is_dir():
        return task.problem.path, None
    folder = Path(tempfile.mkdtemp(prefix="speedpatch-problem-"))
    for name, text in task.files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return str(folder / path.name), folder


def evaluate_task(task: EvalTask, owner: object, target: Target | None = None,
                  backend: Backend | None = None) -> Evaluation:
    """Check, build, run and measure `task.source`; the processes it starts belong to `owner`. The
    target and backend are looked up by name unless given (a Ray worker has only their names)."""
    from speedpatch import targets

    start = time.monotonic()
    problem = task.problem
    target = target or targets.get_target(problem.target)
    backend = backend or target.backend(problem.backend)
    path, copied = _materialize(task)
    read_only = [Path(path).resolve().parent] if path else []
    set_process_scope(owner, None, read_only, task.limits, task.sandbox_required)
    workdir: Path | None = None
    try:
        reasons = boundary.check(target, problem, task.source) or target.static_check(task.source, problem.kernel)
        if reasons:
            return Evaluation(status=REJECTED, message="; ".join(reasons), seconds=time.monotonic() - start,
                              receipt={"measured_on": backend.measured_on})
        workdir = Path(tempfile.mkdtemp(prefix="speedpatch-eval-"))
        set_process_scope(owner, workdir, read_only, task.limits, task.sandbox_required)
        ctx = EvalContext(kernel=problem.kernel, path=path, workdir=workdir, timeout=task.timeout,
                          settings=task.settings, baseline_source=problem.source, seed=task.seed)
        ev = backend.evaluate(task.source, ctx)
    except Exception as exc:  # a backend (or target) bug must not take the search down
        ev = Evaluation(status=INFRA_ERROR, message=f"backend {backend.name} failed: {exc}",
                        log=traceback.format_exc()[-4000:])
    finally:
        for folder in (workdir, copied):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
    if not ev.seconds:
        ev.seconds = time.monotonic() - start
    # every figure says where it comes from (hardware, a model, an emulator), for the verdict's wording
    ev.receipt = {"measured_on": backend.measured_on, **(ev.receipt or {})}
    return ev
