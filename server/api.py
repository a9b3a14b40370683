"""The engine's public face: what the CLI and the language server call. No LSP, no terminal here."""

from __future__ import annotations

import difflib
import os
import secrets
import threading
from dataclasses import asdict, replace

from speedpatch import __version__, redact, targets
from speedpatch.config import Config, config_from_dict
from speedpatch.engine import boundary
from speedpatch.engine import events as ev
from speedpatch.engine.budget import Budget
from speedpatch.engine.evaluation import EvalTask, evaluate_task
from speedpatch.engine.executors import RAY, Executor, LocalExecutor, RayExecutor, default_resources
from speedpatch.engine.pool import EvaluationPool, default_workers
from speedpatch.engine.proposer import Proposer
from speedpatch.engine.reverify import TIME_FACTOR, Reverifier, reverify
from speedpatch.engine.schedule import Schedule, choose_schedule
from speedpatch.engine.search import Session, run_search
from speedpatch.errors import ConfigError, NotFoundError, StaleError, UserError
from speedpatch.llm.ensemble import ensemble_warnings
from speedpatch.llm.offline import OfflineProposer
from speedpatch.llm.proposer import LLMProposer
from speedpatch.menu import load_menu
from speedpatch.model import Candidate, Evaluation, Kernel, Problem, source_hash
from speedpatch.store import RunRecord, Store
from speedpatch.targets import sandbox
from speedpatch.targets.base import Backend, Target

MAX_FILE_BYTES = 2_000_000  # bigger files are not kernels we can send to an LLM


def find_kernels(path: str, text: str) -> list[Kernel]:
    """Every kernel the targets for this file type find in `text`, runnable or not (none in huge files)."""
    found: list[Kernel] = []
    if len(text) > MAX_FILE_BYTES:
        return found
    for target in targets.targets_for_path(path):
        try:
            found += target.find_kernels(text, path)
        except Exception:  # a target's parser bug must not hide other targets' kernels
            continue
    return found


def backend_for(target: Target, config: Config, name: str | None = None) -> Backend:
    """The backend named here, else the configured one, else the target's default; UserError naming where
    an unknown name came from."""
    chosen = name or config.backends.get(target.name) or target.default_backend
    try:
        return target.backend(chosen)
    except KeyError as exc:  # NotFoundError from the base Target; a plugin's own lookup may raise KeyError
        if name:
            where = "--backend"
        elif target.name in config.backends:
            where = f"backends.{target.name} in speedpatch.toml"
        else:
            where = f"the {target.name} target's default backend"
        raise UserError(f"{where}: {exc.args[0]}") from exc


def _check_config_names(target: Target, config: Config) -> None:
    """Names in speedpatch.toml that nothing answers to would be ignored without a word: refuse a target in
    [backends] or [menus] that no target here is called, and a [backend.NAME] table named almost like one
    of this target's backends (a typo) that no backend is called."""
    for table in ("backends", "menus"):
        for name in getattr(config, table):
            if name not in targets.BUILTIN:
                try:
                    targets.get_target(name)
                except NotFoundError as exc:
                    raise ConfigError(f"{table}.{name} in speedpatch.toml: {exc}") from exc
    names = [b.name for b in target.backends()]
    for backend in target.backends():
        _check_backend_keys(backend, config.backend_settings.get(backend.name, {}))
    for table in config.backend_settings:
        close = difflib.get_close_matches(table, names, n=1, cutoff=0.8) if table not in names else []
        if close and all(b.name != table for t in targets.all_targets() for b in t.backends()):
            raise ConfigError(
                f"[backend.{table}] in speedpatch.toml: no backend is called {table!r}, so its settings would be "
                f"ignored; did you mean [backend.{close[0]}]? ({target.name} backends: {', '.join(names)})"
            )


def _check_backend_keys(backend: Backend, table: dict[str, object]) -> None:
    """A key in [backend.NAME] that the backend does not read would be ignored without a word: refuse it."""
    if backend.settings_keys is None:
        return
    for key in table:
        if key not in backend.settings_keys:
            close = difflib.get_close_matches(key, sorted(backend.settings_keys), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(
                f"[backend.{backend.name}] in speedpatch.toml: unknown key {key!r}, so it would be ignored; {hint}"
                f"(known: {', '.join(sorted(backend.settings_keys))})"
            )


def _whole_program_kernels(path: str, text: str) -> list[Kernel]:
    """A target's run-only kernel for a program without kernel functions (whole-program mode), if any."""
    found: list[Kernel] = []
    for target in targets.targets_for_path(path):
        make = getattr(target, "whole_program_kernel", None)
        try:
            kernel = make(text, path) if make else None
        except Exception:  # a target's parser bug must not hide other targets
            kernel = None
        if kernel is not None:
            found.append(kernel)
    return found


def make_problem(path: str, text: str, kernel: str | None, config: Config, backend: str | None = None,
                 whole_program: bool = False) -> Problem:
    """The problem of one kernel of a file. whole_program: a file without kernel functions may still be
    run as it is (evaluate only), when its target offers a whole-program kernel for it."""
    if "\x00" in text:
        raise UserError(f"{path}: looks like a binary file, not kernel source")
    kernels = find_kernels(path, text)
    if not targets.targets_for_path(path):
        exts = sorted({e for t in targets.all_targets() for e in t.extensions})
        failed = "".join(f"; target {name} could not be loaded: {why}" for name, why in targets.load_errors().items())
        raise UserError(f"{path}: no target handles this file type (known extensions: {', '.join(exts)}){failed}")
    if not kernels:
        programs = _whole_program_kernels(path, text) if len(text) <= MAX_FILE_BYTES else []
        if programs and whole_program:
            kernels = programs[:1]
        elif programs:
            raise UserError(f"{path}: no kernel found: {programs[0].reason}")
        else:
            looked = "; ".join(f"{t.name}: {t.kernel_hint}" if t.kernel_hint else f"{t.name} kernels"
                               for t in targets.targets_for_path(path))
            raise UserError(f"{path}: no kernel found (looked for {looked})")
    if whole_program and (kernel == "main" or (kernel is None and len(kernels) > 1)):
        # evaluate: a program that checks itself (no harness) runs whole whichever function is named, so
        # several Gemmini functions (upstream's matmul.c: test_os, test_ws) mean its main(), not a question
        programs = _whole_program_kernels(path, text) if len(text) <= MAX_FILE_BYTES else []
        if programs:
            kernels = programs[:1]
    if kernel is None:
        if len(kernels) > 1:
            names = ", ".join(k.name for k in kernels)
            raise UserError(f"{path} has several kernels ({names}); choose one with --kernel NAME")
        chosen = kernels[0]
    else:
        matches = [k for k in kernels if k.name == kernel]
        if not matches:
            names = ", ".join(k.name for k in kernels)
            raise UserError(f"{path}: no kernel named {kernel!r}; kernels found: {names}")
        chosen = matches[0]
    if not chosen.runnable:
        doing = "run" if whole_program else "optimized"  # evaluate asks for a program to run
        raise UserError(f"{path}: kernel {chosen.name} cannot be {doing}: {chosen.reason}")
    target = targets.get_target(chosen.target)
    _check_config_names(target, config)
    be = backend_for(target, config, backend)
    return Problem(path=path, source=text, kernel=chosen, target=target.name, backend=be.name)


def _target_backend(problem: Problem) -> tuple[Target, Backend]:
    target = targets.get_target(problem.target)
    return target, target.backend(problem.backend)


def _require_usable(backend: Backend, config: Config) -> None:
    available = backend.availability(config.backend_settings.get(backend.name, {}))
    if not available.usable:
        raise UserError(f"backend {backend.name} is not usable here: {available.reason}")
    if config.sandbox.required and not sandbox.status().active:
        raise UserError(f"[sandbox] required = true in speedpatch.toml, but {sandbox.status().describe()}")


def make_executor(config: Config, target: Target, backend: Backend, workers: int = 0) -> Executor:
    """Where this configuration evaluates candidates: this machine, or the [ray] cluster (checked now,
    before any evaluation: Ray installed, the head answering, a node offering what the backend needs, the
    same speedpatch there)."""
    if config.search.executor != RAY:
        return LocalExecutor(workers or default_workers(), target, backend)
    wanted = config.ray.resources.get(backend.name) or default_resources(backend.name)
    return RayExecutor(config.ray.address, config.ray.namespace, wanted, config.ray.connect_timeout, __version__)


def _protect_secrets(config: Config) -> None:
    """The LLM key may come from the editor, a variable of any name or the base URL itself
    (https://user:KEY@host/v1, ?api-key=KEY): make each known to the scrub."""
    redact.register(config.llm.api_key, "llm.api_key")
    redact.register_env_name(config.llm.api_key_env)
    redact.register_url(config.llm.base_url, "llm.base_url")


def evaluate(problem: Problem, source: str | None, config: Config, reverify_figure: bool = False) -> Evaluation:
    """Check and measure `source` (default: the problem's own file) once on the problem's backend.
    reverify_figure: a correct result is also checked on the backend's independent backend, as a run's
    winner is (rejected when it is not correct there or its figure is not reproduced)."""
    target, backend = _target_backend(problem)
    _require_usable(backend, config)
    _protect_secrets(config)
    pool = EvaluationPool(
        target, backend, problem, config.backend_settings.get(backend.name, {}), workers=1,
        timeout=config.search.eval_timeout, seed=config.search.seed, limits=config.sandbox.limits(),
        sandbox_required=config.sandbox.required, executor=make_executor(config, target, backend, workers=1),
    )
    try:
        text = problem.source if source is None else source
        ev = pool.submit(text).result()
    finally:
        pool.shutdown()
    if reverify_figure and not backend.reverify_with:  # asked for, and impossible here: say so, not nothing
        ev.receipt = {**(ev.receipt or {}), "reverified": f"not re-verified: {backend.name} has no independent "
                      "backend to re-verify on"}
    if not (backend.reverify_with and ev.correct):
        return ev
    check = _reverifier(target, backend, problem, config) if reverify_figure else None
    if check is None:
        # a run re-verifies its winner there; this evaluation was not, and its receipt says so
        ev.receipt = {**(ev.receipt or {}), "reverified": f"not re-verified: one evaluation on {backend.name} only (a "
                      f"run's winner is re-verified on {backend.reverify_with}; evaluate with --reverify to "
                      "check it there too)"}
        return ev
    evaluated = Candidate(id="evaluated", run_id="", parent_id=None, iteration=0, plan="", source=text,
                          source_hash=source_hash(text), evaluation=ev)
    _, changed = reverify(check, evaluated, [evaluated], lambda: False)
    assert changed[-1].evaluation is not None  # reverify always reports the one candidate it was given
    return changed[-1].evaluation


def _require_llm_setup(config: Config, resuming: bool = False) -> None:
    """An LLM search that could only fail is refused before the baseline: an endpoint without a model to ask,
    or OpenAI's own endpoint (no base URL) without an API key. Local endpoints (a base URL) take any key."""
    if not config.use_llm:
        return
    url = redact.redact(config.llm.base_url)  # as shown: without a key written into it
    if url and not url.startswith(("http://", "https://")):
        raise UserError(f"llm.base_url (--base-url) {url!r} is not an http:// or https:// URL; an OpenAI-compatible "
                        "endpoint reads like http://localhost:8000/v1")
    plan, code = config.llm.plan_models or config.llm.models, config.llm.code_models or config.llm.models
    if not plan or not code:
        what = "plans or code" if not plan and not code else "plans" if not plan else "code"
        raise UserError(f"the LLM endpoint {url or '(default)'} has no model to ask for {what}: "
                        "name one with --model NAME (or llm.models = [\"NAME\"] in speedpatch.toml), or search "
                        "without an LLM (--offline)")
    if config.llm.base_url or os.environ.get("OPENAI_BASE_URL") or config.llm.resolved_api_key():
        return
    models = ", ".join(config.llm.models or config.llm.plan_models or config.llm.code_models) or "(default)"
    if resuming:  # the run's models are fixed; only the key or the endpoint can change
        raise UserError(
            f"no API key for the LLM: this run asks model {models} at OpenAI's endpoint, which needs one. Set "
            f"{config.llm.api_key_env} (or OPENAI_API_KEY) in the environment, or llm.base_url in speedpatch.toml "
            "for an endpoint that needs none, and resume again"
        )
    raise UserError(
        f"no API key for the LLM: model {models} goes to OpenAI's endpoint (llm.base_url is not set), which needs "
        f"one. Set {config.llm.api_key_env} (or OPENAI_API_KEY) in the environment; or set llm.base_url (--base-url) "
        "to an endpoint that needs no key, such as a local server; or search without an LLM (--offline, or "
        "offline = true in speedpatch.toml)"
    )


def _check_backend(target: Target, backend: Backend, config: Config) -> None:
    _require_usable(backend, config)
    if not backend.measures_speed:
        measuring = [b.name for b in target.backends() if b.measures_speed]
        raise UserError(
            f"backend {backend.name} cannot time candidates, so it cannot rank them by speed; "
            f"optimize with a measuring backend instead: {', '.join(measuring) or 'none for this target'}"
        )


def _session(
    problem: Problem, config: Config, store: Store, run_id: str, on_event: ev.EventSink | None,
    cancel: threading.Event | None, budget: Budget,
) -> Session:
    target, backend = _target_backend(problem)
    _protect_secrets(config)  # before anything is shown or stored: setup errors name the base URL
    _check_backend(target, backend, config)
    _require_llm_setup(config)
    if problem.kernel.reason:  # runnable but not optimizable (e.g. a whole program)
        raise UserError(f"{problem.path}: {problem.kernel.name} cannot be optimized: {problem.kernel.reason}")
    menu = load_menu(target.name, config.workspace or None, config.menus.get(target.name), target.menu_dir)

    def cached(key: str) -> Evaluation | None:
        found = store.find_by_hash(run_id, key)
        return found.evaluation if found else None

    pool = EvaluationPool(
        target, backend, problem, config.backend_settings.get(backend.name, {}),
        workers=config.search.workers, timeout=config.search.eval_timeout, seed=config.search.seed,
        cached=cached, limits=config.sandbox.limits(), sandbox_required=config.sandbox.required,
        executor=make_executor(config, target, backend, config.search.workers),
    )
    cancel = cancel or threading.Event()

    def emit(event: ev.Event) -> None:
        if on_event is not None:
            try:  # events reach the terminal and the editor: a failure's text may quote the base URL's key
                on_event(replace(event, data=redact.redact_data(event.data)))
            except Exception:  # a display problem must never stop a search
                pass

    if not sandbox.status().active:  # said on every run, by every front end
        emit(ev.Event(ev.WARNING, run_id, {"message": sandbox.status().describe()}))
    proposer: Proposer
    if config.use_llm:
        proposer = LLMProposer(config, target, problem, menu, store, run_id, budget, cancel.is_set)
        plan_models = config.llm.plan_models or config.llm.models
        code_models = config.llm.code_models or config.llm.models
        for warning in ensemble_warnings(plan_models, code_models, config.search.plans, config.search.codes,
                                         config.search.beam):
            emit(ev.Event(ev.WARNING, run_id, {"message": warning}))
    else:
        # as many moves per parent and iteration as an LLM search spends evaluations on it (N*K)
        proposer = OfflineProposer(target, problem.kernel, store, run_id, config.search.seed,
                                   config.search.plans * config.search.codes)
        if not config.offline:  # the user did not ask for it: say why no LLM is asked
            emit(ev.Event(ev.WARNING, run_id, {"message": "no LLM configured (llm.models in speedpatch.toml, or "
                                               "--model and --base-url): searching with the offline moves"}))
    session = Session(run_id, problem, config, store, proposer, pool, budget, emit, cancel)
    session.reverifier = _reverifier(target, backend, problem, config) if config.search.reverify else None
    return session


def _reverifier(target: Target, backend: Backend, problem: Problem, config: Config) -> Reverifier | None:
    """How the run's winner is re-checked on the backend's independent backend, or None when it names none."""
    if not backend.reverify_with:
        return None
    other = target.backend(backend.reverify_with)
    settings = config.backend_settings.get(other.name, {})
    usable = other.availability(settings)
    if not usable.usable:
        return Reverifier(other.name, None, usable.reason)
    checked = replace(problem, backend=other.name)

    def run(source: str) -> Evaluation:
        task = EvalTask(problem=checked, source=source, settings=settings,
                        timeout=config.search.eval_timeout * TIME_FACTOR,
                        seed=config.search.seed, limits=config.sandbox.limits(),
                        sandbox_required=config.sandbox.required)
        return evaluate_task(task, object(), target, other)

    return Reverifier(other.name, run)


def new_run_id() -> str:
    """A fresh run id: 8 hex digits."""
    return secrets.token_hex(4)


def _reuse_hint(reuse: str) -> str:
    """For a reuse value that is no run id but looks like a misspelt word ("atuo", "none"): what it takes."""
    word = reuse.strip().lower()
    close = ["off"] if word in ("none", "no", "false", "0", "never") else difflib.get_close_matches(
        word, ["auto", "off"], n=1, cutoff=0.6)
    return f"; did you mean {close[0]}? (reuse takes auto, off or a run id)" if close else ""


def optimize(
    problem: Problem,
    config: Config,
    store: Store,
    on_event: ev.EventSink | None = None,
    cancel: threading.Event | None = None,
    run_id: str | None = None,
) -> RunRecord:
    """Search for a faster version of the problem's kernel; stored as it goes, the finished record returned.
    Blocks until the run ends (all iterations, budget, cancel or an error)."""
    run_id = run_id or new_run_id()
    reuse = config.search.reuse_mode()
    try:  # before anything is created: a --reuse RUN that cannot be followed is the user's error to fix
        schedule = choose_schedule(store, problem, reuse)
    except ValueError as exc:
        raise UserError(f"{exc}{_reuse_hint(reuse)}") from exc
    session = _session(problem, config, store, run_id, on_event, cancel, Budget(config.budget))
    session.schedule = schedule
    if schedule and isinstance(session.proposer, OfflineProposer):  # it follows the steps by lineage depth
        session.proposer.steps = list(schedule.steps)
    stored = config.to_dict()
    stored["schedule"] = asdict(schedule) if schedule else None
    store.create_run(run_id, problem, config.search.iterations, stored)
    return run_search(session, config.search.iterations)


def resume(
    run_id: str,
    store: Store,
    config: Config | None = None,
    on_event: ev.EventSink | None = None,
    cancel: threading.Event | None = None,
    executor: str | None = None,
) -> RunRecord:
    """Continue a stored run: the same search is replayed, stored LLM replies and evaluations are reused,
    and only what is missing is asked or evaluated."""
    record = store.get_run(run_id)
    if record.status.live:  # a live process drives it, or will when its turn comes
        raise UserError(f"run {record.run_id} is still {record.status} in another process")
    if record.status.ended:  # replaying it would only repeat what is stored
        raise UserError(f"run {record.run_id} already {record.status} ({record.message or record.verdict.text}); "
                        "nothing to resume: start a new search instead")
    stored = config_from_dict(record.config)
    if config is not None:
        # where and how to reach the LLM is this session's business; what to search stays as stored,
        # so the replay asks exactly the same questions
        stored.llm.api_key = config.llm.api_key
        stored.llm.api_key_env = config.llm.api_key_env
        if config.llm.base_url:
            stored.llm.base_url = config.llm.base_url
        stored.workspace = config.workspace or stored.workspace
        stored.sandbox = config.sandbox  # isolation is this machine's policy now, not the stored one's
        stored.ray = config.ray  # where the cluster is, likewise
    if redact.REDACTED in stored.llm.base_url:  # its credentials were never stored: this session supplies them
        if not os.environ.get("OPENAI_BASE_URL"):
            raise UserError(
                f"run {record.run_id} reached its LLM at a base URL with credentials in it, which are not stored "
                f"({stored.llm.base_url}). Set OPENAI_BASE_URL in the environment (or llm.base_url in "
                "speedpatch.toml) to that URL, or give the key in SPEEDPATCH_API_KEY instead, and resume again"
            )
        stored.llm.base_url = ""  # the openai client reads OPENAI_BASE_URL then
    if executor:  # resume on another executor (a Ray run whose cluster went away, continued locally)
        stored.search.executor = executor
    # what the run already spent counts; replayed replies and stored evaluations cost nothing again
    budget = Budget(stored.budget, llm_calls=record.llm.get("calls", 0), evaluations=record.evaluations.get("total", 0),
                    seconds=record.seconds)
    _require_llm_setup(stored, resuming=True)
    session = _session(record.problem, stored, store, record.run_id, on_event, cancel, budget)
    if record.config.get("schedule"):  # the same guidance as the first time, so replies replay
        session.schedule = Schedule(**record.config["schedule"])
        if isinstance(session.proposer, OfflineProposer):
            session.proposer.steps = list(session.schedule.steps)
    store.claim(record.run_id)
    return run_search(session, stored.search.iterations)


def _kernel_named(target: Target, text: str, name: str) -> Kernel | None:
    return next((k for k in target.find_kernels(text) if k.name == name), None)


def apply_text(record: RunRecord, current_text: str) -> str:
    """current_text with the run's winning kernel region in place of its kernel (current_text itself when the
    winner is there already); StaleError if the kernel changed since the run otherwise. Only the region is
    written: the rest of the file stays the user's."""
    if record.best is None or record.baseline is None or record.best.id == record.baseline.id:
        raise UserError(f"run {record.run_id} has no candidate faster than the original")
    target = targets.get_target(record.target)
    current = _kernel_named(target, current_text, record.kernel)
    if current is None:
        raise StaleError(f"stale: kernel {record.kernel} is no longer in {record.path}; the run cannot be applied")
    applied = _kernel_named(target, record.best.source, record.kernel)
    if (applied is not None and current.text.strip() == applied.text.strip()
            and applied.text.strip() != record.problem.kernel.text.strip()):
        return current_text  # applied already: nothing to change
    if current.text.strip() != record.problem.kernel.text.strip():
        raise StaleError(
            f"stale: kernel {record.kernel} in {record.path} changed since run {record.run_id} started; "
            "start a new run on the current code"
        )
    region = boundary.region_of(record.problem, record.best.source)
    if region is None:  # never evaluated as such: the engine rejects these, but the store is a file
        raise UserError(
            f"run {record.run_id}: the winning candidate changes the file outside the kernel "
            f"({boundary.outside_change(record.problem, record.best.source)}); it is not applied"
        )
    if current_text == record.problem.source:
        return boundary.compose(record.problem, region)
    return current_text[: current.start] + region + current_text[current.end :]
