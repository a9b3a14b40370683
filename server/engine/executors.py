"""Where evaluations run, behind one small interface: a local thread pool (the default), or a Ray cluster
when one machine is not enough (a FireSim host for Gemmini, a trn1 for NKI, a GPU for CUDA).

An executor takes an EvalTask — the candidate source and the whole problem, never a path on the
driver's disk — and returns a Future of its Evaluation. The evaluation itself (trust boundary, static
checks, sandboxed build and run) is the same code on every executor: speedpatch.engine.evaluation.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from speedpatch.engine.evaluation import EvalTask, evaluate_task
from speedpatch.errors import UserError
from speedpatch.model import Evaluation
from speedpatch.targets.base import Backend, Target

LOCAL, RAY = "local", "ray"
KINDS = (LOCAL, RAY)
WATCH_INTERVAL = 1.0  # seconds between checks that the Ray head still answers while tasks are pending
WATCH_MISSES = 3  # checks in a row without an answer before the cluster counts as gone


class ExecutorLost(Exception):
    """The executor can no longer evaluate anything (the Ray cluster went away): the run stops as
    interrupted, and resuming it continues where it stopped."""


class Executor(Protocol):
    name: str

    def submit(self, task: EvalTask) -> Future[Evaluation]:
        """Start evaluating `task`; the future holds its Evaluation, or raises ExecutorLost."""

    def cancel_all(self) -> None:
        """Stop every evaluation still running (a cancelled search)."""

    def shutdown(self, wait: bool = True) -> None:
        """Release the executor's resources; with wait, after the running evaluations end."""


class LocalExecutor:
    """Evaluations on this machine, `workers` at a time, each in its own sandboxed processes."""

    name = LOCAL

    def __init__(self, workers: int, target: Target | None = None, backend: Backend | None = None) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="eval")
        self._owner = object()  # the processes of this executor's evaluations, for cancel_all
        self._target, self._backend = target, backend  # as given (a test's target need not be registered)

    def submit(self, task: EvalTask) -> Future[Evaluation]:
        return self._pool.submit(evaluate_task, task, self._owner, self._target, self._backend)

    def cancel_all(self) -> None:
        from speedpatch.targets.base import kill_processes

        kill_processes(self._owner)

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=True)


def default_resources(backend: str) -> dict[str, float]:
    """What a backend's evaluation asks of a Ray node when the configuration says nothing: a GPU for
    CUDA timing, Neuron cores for Trainium, one CPU for models and emulators."""
    if backend in ("cuda-local",):
        return {"GPU": 1.0}
    if backend in ("nki-neuron",):
        return {"neuron_cores": 1.0}
    if backend in ("gemmini-command",):
        return {"firesim": 1.0}
    return {"CPU": 1.0}


class RayExecutor:
    """Each evaluation is a Ray task carrying its candidate and problem; the worker runs the same
    evaluation code, in the same sandbox, and names its node in the receipt. A node that dies mid-task
    has the task retried on another (Ray's task retries); a cluster that goes away is ExecutorLost."""

    name = RAY

    def __init__(self, address: str, namespace: str, resources: dict[str, float], connect_timeout: float = 15.0,
                 version: str = "") -> None:
        ray = import_ray()
        self._ray = ray
        connect(ray, address, namespace, connect_timeout)
        self.resources = dict(resources)
        self.nodes = nodes_offering(ray, self.resources)
        if not self.nodes:
            raise UserError(no_node_message(ray, self.resources))
        check_versions(ray, self.resources, version)
        cpus = self.resources.pop("CPU", 0.0)
        self._remote = ray.remote(_evaluate_on_node).options(
            num_cpus=cpus, resources=self.resources or None, max_retries=3, retry_exceptions=False,
        )
        self._refs: dict[int, Any] = {}
        self._pending: dict[int, Future[Evaluation]] = {}
        self._lost = ""
        self._lock = threading.Lock()
        self._gcs = str(ray.get_runtime_context().gcs_address or "")
        threading.Thread(target=self._watch, name="ray-watchdog", daemon=True).start()

    def _watch(self) -> None:
        """Ray's own driver waits a long time for a head node that is gone, and then exits the process
        (which could be the language server): notice it ourselves, within seconds, and fail what is
        pending as ExecutorLost so the run stops as interrupted."""
        misses = 0
        while not self._lost:
            time.sleep(WATCH_INTERVAL)
            with self._lock:
                busy = bool(self._pending)
            if not busy:
                continue
            try:
                _probe(self._gcs, WATCH_INTERVAL)
                misses = 0
            except UserError:
                misses += 1
            if misses >= WATCH_MISSES:
                self._give_up(f"the Ray cluster at {self._gcs} stopped answering")

    def _give_up(self, why: str) -> None:
        with self._lock:
            self._lost = why
            pending = list(self._pending.values())
            self._pending.clear()
            self._refs.clear()
        for future in pending:
            if not future.done():
                future.set_exception(ExecutorLost(why))
        # leave the dead cluster behind, so that a later run in this process can connect afresh
        threading.Thread(target=self._ray.shutdown, name="ray-shutdown", daemon=True).start()

    def submit(self, task: EvalTask) -> Future[Evaluation]:
        result: Future[Evaluation] = Future()
        if self._lost:
            result.set_exception(ExecutorLost(self._lost))
            return result
        ref = self._remote.remote(task)
        with self._lock:
            self._refs[id(ref)] = ref
            self._pending[id(ref)] = result
        source = ref.future()

        def done(f: Future) -> None:
            with self._lock:
                self._refs.pop(id(ref), None)
                self._pending.pop(id(ref), None)
            if result.done():  # already failed by the watchdog
                return
            if f.cancelled():
                result.cancel()
                return
            exc = f.exception()
            if exc is None:
                result.set_result(f.result())
            elif isinstance(exc, self._ray.exceptions.TaskCancelledError):
                result.cancel()
            else:
                result.set_exception(ExecutorLost(f"the Ray cluster could not evaluate this candidate: {exc}"))

        source.add_done_callback(done)
        return result

    def cancel_all(self) -> None:
        with self._lock:
            refs = list(self._refs.values())
        for ref in refs:
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # already finished, or the cluster is gone: nothing left to stop
                pass

    def shutdown(self, wait: bool = True) -> None:
        if not wait:
            self.cancel_all()


def _evaluate_on_node(task: EvalTask) -> Evaluation:
    """The Ray task: the same evaluation as locally, plus the node that measured it in the receipt."""
    import ray

    ev = evaluate_task(task, object())
    labels = ray.get_runtime_context().get_node_labels() or {}
    node = labels.get("speedpatch-node") or socket.gethostname()
    node_id = ray.get_runtime_context().get_node_id()
    ev.receipt = {**(ev.receipt or {}), "node": f"{node} ({node_id[:12]})"}
    return ev


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise UserError(
            "executor = \"ray\" needs Ray: install speedpatch with its ray extra (pip install 'speedpatch[ray]')"
        ) from exc
    return ray


def _probe(address: str, timeout: float) -> None:
    """Fail fast when nothing answers at host:port (Ray's own connect can wait for minutes)."""
    if address in ("", "auto"):
        return
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"ray.address {address!r}: expected \"auto\", \"HOST:PORT\" or \"ray://HOST:PORT\"")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise UserError(f"ray.address {address}: nobody answers there ({exc}); is the head node running "
                        f"(ray start --head) and reachable from here?") from exc


def connect(ray: Any, address: str, namespace: str, timeout: float) -> None:
    if ray.is_initialized():
        return
    _probe(address, timeout)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Ray exits a driver whose head node has been gone this long; our watchdog handles a lost cluster
    # itself, and the driver may be the language server, which must outlive any cluster
    os.environ.setdefault("RAY_gcs_rpc_server_reconnect_timeout_s", str(365 * 24 * 3600))
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")  # the driver's core worker: no state dumps on stderr
    try:
        ray.init(address=address or "auto", namespace=namespace or "speedpatch", logging_level="ERROR",
                 log_to_driver=False, ignore_reinit_error=True)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise UserError(f"ray.address {address or 'auto'}: cannot join the Ray cluster: {exc}") from exc


def nodes_offering(ray: Any, resources: dict[str, float]) -> list[dict[str, Any]]:
    """Live nodes with at least the requested amount of every resource."""
    found = []
    for node in ray.nodes():
        have = node.get("Resources") or {}
        if node.get("Alive") and all(have.get(name, 0.0) >= amount for name, amount in resources.items()):
            found.append(node)
    return found


def no_node_message(ray: Any, resources: dict[str, float]) -> str:
    wanted = ", ".join(f"{k}={v:g}" for k, v in resources.items())
    seen = []
    for node in ray.nodes():
        if node.get("Alive"):
            custom = {k: v for k, v in (node.get("Resources") or {}).items()
                      if not k.startswith(("node:", "memory", "object_store_memory"))}
            seen.append(f"{node.get('NodeManagerAddress')} {custom}")
    return (f"no node of the Ray cluster offers {wanted} (nodes seen: {'; '.join(seen) or 'none'}); start a worker "
            f"with --resources, or set [ray.resources] for this backend")


def check_versions(ray: Any, resources: dict[str, float], version: str) -> None:
    """Every node that can run the backend must have this speedpatch: a different one would measure
    with other code than the driver reports."""
    if not version:
        return
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probe = ray.remote(_node_version)
    refs = [
        probe.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)).remote()
        for node in nodes_offering(ray, resources)
    ]
    mismatched = [f"{where} has {theirs}" for where, theirs in ray.get(refs, timeout=120) if theirs != version]
    if mismatched:
        raise UserError(f"speedpatch {version} here, but {'; '.join(mismatched)}: install the same version on "
                        "every worker (or a runtime_env with the same wheel)")


def _node_version() -> tuple[str, str]:
    import ray

    where = f"node {socket.gethostname()} ({ray.get_runtime_context().get_node_id()[:12]})"
    try:
        from speedpatch import __version__
    except ImportError:
        return where, "no speedpatch installed"
    return where, __version__


def nodes_per_backend(address: str, namespace: str, resources: dict[str, dict[str, float]], backends: list[str],
                      timeout: float = 15.0) -> dict[str, int]:
    """How many live nodes of the cluster can run each backend (what `speedpatch backends` shows)."""
    ray = import_ray()
    connect(ray, address, namespace, timeout)
    return {name: len(nodes_offering(ray, resources.get(name) or default_resources(name))) for name in backends}
