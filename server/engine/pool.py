"""Parallel evaluation of candidate files by a backend.

Identical sources are evaluated once (in flight, done, or stored by an earlier attempt of the run). The
evaluation itself — trust boundary, static checks, sandboxed build and run — is engine/evaluation.py;
where it runs is an executor (engine/executors.py): this machine's thread pool, or a Ray cluster. Nothing
the LLM wrote runs in the engine's process.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future

from speedpatch.engine.evaluation import EvalTask, neighbour_files
from speedpatch.engine.executors import Executor, LocalExecutor
from speedpatch.model import Evaluation, Problem, source_hash
from speedpatch.targets.base import Backend, Target
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
        executor: Executor | None = None,
    ) -> None:
        self.target, self.backend, self.problem = target, backend, problem
        self.settings, self.timeout, self.seed = settings, timeout, seed
        self.limits, self.sandbox_required = limits, sandbox_required  # how candidates run (targets/sandbox.py)
        self._cached = cached
        self.executor: Executor = executor or LocalExecutor(workers or default_workers(), target, backend)
        # a Ray worker has none of the driver's files: the problem's own includes travel with each task
        self._files = neighbour_files(problem) if self.executor.name != "local" else {}
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
        """The evaluation of `source`: reused when known, else started on the executor."""
        found = self.known(source)
        if found is not None:
            return found
        key = source_hash(source)
        with self._lock:  # another thread may have started the same source meanwhile
            if key not in self._futures:
                self._futures[key] = self.executor.submit(self.task(source))
            return self._futures[key]

    def task(self, source: str) -> EvalTask:
        return EvalTask(problem=self.problem, source=source, settings=self.settings, timeout=self.timeout,
                        seed=self.seed, limits=self.limits, sandbox_required=self.sandbox_required,
                        files=self._files)

    def shutdown(self, wait: bool = True, kill: bool = False) -> None:
        if kill:  # cancelled: candidates still running are abandoned, not waited for
            self.executor.cancel_all()
        self.executor.shutdown(wait=wait)
