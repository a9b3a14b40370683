"""Parallel evaluation of candidate files by a backend.

Each evaluation gets a fresh scratch directory and the backend runs the candidate in subprocesses with a
time limit (see targets/base.py), so nothing the LLM wrote runs in the engine's process. Identical sources
are evaluated once. A backend that raises is a backend failure recorded as an Evaluation, never a crash.
Before anything runs, every candidate must pass the trust boundary (engine/boundary.py): the problem file
unchanged outside the kernel region, and no problem name redefined inside it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from speedpatch.engine import boundary
from speedpatch.model import INFRA_ERROR, REJECTED, Evaluation, Problem, source_hash
from speedpatch.targets.base import Backend, EvalContext, Target, kill_processes, set_process_scope
from speedpatch.targets.sandbox import Limits


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


class EvaluationPool:
    def __init__(
        self,
        target: Target,
        backend: Backend,
        problem: Problem,
        settings: dict,
        workers: int = 0,
        timeout: float = 120.0,
        seed: int = 0,
        cached: Callable[[str], Evaluation | None] | None = None,
        limits: Limits | None = None,
        sandbox_required: bool = False,
    ) -> None:
        self.target, self.backend, self.problem = target, backend, problem
        self.settings, self.timeout, self.seed = settings, timeout, seed
        self.limits, self.sandbox_required = limits, sandbox_required  # how candidates run (targets/sandbox.py)
        self._cached = cached
        self._executor = ThreadPoolExecutor(max_workers=workers or default_workers(), thread_name_prefix="eval")
        self._futures: dict[str, Future[Evaluation]] = {}
        self._lock = threading.Lock()

    def known(self, source: str) -> Future[Evaluation] | None:
        """The evaluation of an identical source, in flight, done or stored; None when it needs a run."""
        key = source_hash(source)
        with self._lock:
            if key not in self._futures and self._cached:
                stored = self._cached(key)
                if stored is not None:
                    done: Future[Evaluation] = Future()
                    done.set_result(stored)
                    self._futures[key] = done
            return self._futures.get(key)

    def submit(self, source: str) -> Future[Evaluation]:
        """The evaluation of `source`: reused when known, else started in a worker."""
        found = self.known(source)
        if found is not None:
            return found
        key = source_hash(source)
        with self._lock:  # another thread may have started the same source meanwhile
            if key not in self._futures:
                self._futures[key] = self._executor.submit(self._evaluate, source)
            return self._futures[key]

    def _evaluate(self, source: str) -> Evaluation:
        self._scope(None)
        start = time.monotonic()
        kernel = self.problem.kernel
        reasons = boundary.check(self.target, self.problem, source) or self.target.static_check(source, kernel)
        if reasons:
            return Evaluation(status=REJECTED, message="; ".join(reasons), seconds=time.monotonic() - start)
        workdir = Path(tempfile.mkdtemp(prefix="speedpatch-eval-"))
        self._scope(workdir)
        try:
            ctx = EvalContext(
                kernel=kernel,
                path=self.problem.path,
                workdir=workdir,
                timeout=self.timeout,
                settings=self.settings,
                baseline_source=self.problem.source,
                seed=self.seed,
            )
            ev = self.backend.evaluate(source, ctx)
        except Exception as exc:  # a backend bug must not take the search down
            ev = Evaluation(
                status=INFRA_ERROR,
                message=f"backend {self.backend.name} failed: {exc}",
                log=traceback.format_exc()[-4000:],
            )
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if not ev.seconds:
            ev.seconds = time.monotonic() - start
        # every figure says where it comes from (hardware, a model, an emulator), for the verdict's wording
        ev.receipt = {"measured_on": self.backend.measured_on, **(ev.receipt or {})}
        return ev

    def _scope(self, workdir: Path | None) -> None:
        """This thread's processes belong to the pool; in the sandbox they may write only `workdir` and
        see the source file's folder (its includes) read-only."""
        folder = [Path(self.problem.path).resolve().parent] if self.problem.path else []
        set_process_scope(self, workdir, folder, self.limits, self.sandbox_required)

    def shutdown(self, wait: bool = True, kill: bool = False) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        if kill:  # cancelled: candidates still running are abandoned, not waited for
            kill_processes(self)
        if wait:
            self._executor.shutdown(wait=True)
