"""`speedpatch` command line: optimize, evaluate, runs, show, apply, resume, backends, bench, serve."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sqlite3
import sys
import textwrap
import threading
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape
from speedpatch import __version__, api, targets
from speedpatch.cli import render
from speedpatch.cli.progress import SearchProgress
from speedpatch.config import EXECUTORS, Config, load_config
from speedpatch.engine import events as ev
from speedpatch.errors import UserError
from speedpatch.redact import redact
from speedpatch.states import RunStatus
from speedpatch.store import RunRecord, Store
from speedpatch.targets import sandbox

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def find_workspace(start: Path) -> Path:
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / "speedpatch.toml").is_file() or (folder / ".speedpatch").is_dir():
            return folder
    return Path.cwd()


def _workspace(args: argparse.Namespace, file: str | None = None) -> Path:
    if args.workspace:
        folder = Path(args.workspace).expanduser()
        if folder.is_file():
            raise UserError(f"--workspace {args.workspace} is a file; give the folder that holds (or will hold) "
                            "speedpatch.toml and .speedpatch/")
        if not folder.is_dir():  # a typo must not create folders
            raise UserError(f"--workspace {args.workspace}: no such folder")
        return folder.resolve()
    return find_workspace(Path(file).resolve().parent if file else Path.cwd())


def _store(workspace: Path) -> Store:
    """The workspace's run store, or a UserError saying why it cannot be made there (a read-only folder, a
    file named .speedpatch)."""
    try:
        return Store(workspace)
    except OSError as exc:
        folder = workspace / ".speedpatch"
        why = "it is a file, not a folder" if folder.is_file() else exc.strerror or str(exc)
        raise UserError(f"cannot keep runs in {folder}: {why}; give a folder where runs can be stored with "
                        "--workspace DIR") from exc


def _stored_runs(args: argparse.Namespace) -> Store | None:
    """The workspace's run store for commands that only read runs, None where it has none: those never create
    one, since a .speedpatch/ folder makes its folder the workspace of everything below it."""
    workspace = _workspace(args)
    return _store(workspace) if (workspace / ".speedpatch" / "runs.sqlite3").exists() else None


def _run_store(args: argparse.Namespace) -> Store:
    """The store that holds run `args.run` (show, apply, resume), or a UserError where there is none."""
    store = _stored_runs(args)
    if store is None:
        raise UserError(f"no run {args.run!r}: no runs are stored in {_workspace(args)} (see `speedpatch runs`, "
                        "or give the folder the run was made in with --workspace DIR)")
    return store


def _read_source(file: str) -> str:
    path = Path(file)
    if path.is_dir():
        raise UserError(f"{file} is a folder; give the kernel's source file (e.g. {file.rstrip('/')}/kernel.c)")
    if not path.is_file():
        where = "" if path.is_absolute() else f" (looked in {Path.cwd()})"
        raise UserError(f"{file}: no such file{where}")
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start}); is it a binary file?") from exc


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    search = {k: getattr(args, k) for k in ("iterations", "beam", "plans", "codes", "seed", "executor", "reuse")
              if getattr(args, k, None) is not None}
    llm: dict[str, Any] = {}
    if getattr(args, "model", None):
        llm["models"] = args.model
    if getattr(args, "base_url", None):
        llm["base_url"] = args.base_url
    data: dict[str, Any] = {}
    if search:
        data["search"] = search
    if llm:
        data["llm"] = llm
    if getattr(args, "offline", False):
        data["offline"] = True
    if getattr(args, "include_dir", None):  # as [backend.gemmini-native] include_dir, resolved from here
        data["backend"] = {"gemmini-native": {"include_dir": str(Path(args.include_dir).expanduser().resolve())}}
    return data


def _config(args: argparse.Namespace, workspace: Path) -> Config:
    return load_config(workspace, _overrides(args))


class _CtrlC:
    """First Ctrl-C cancels the run (its best so far is kept); a second one aborts at once."""

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self._previous: Any = None

    def __enter__(self) -> threading.Event:
        def handler(signum: int, frame: FrameType | None) -> None:
            if self.cancel.is_set():
                raise KeyboardInterrupt
            self.cancel.set()
            err.print("[yellow]cancelling: finishing with the best candidate so far (Ctrl-C again to abort)[/yellow]")

        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, handler)
        return self.cancel

    def __exit__(self, *exc: Any) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def _print_plain(text: str) -> None:
    """Diffs and program output go out verbatim: never wrapped or styled."""
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    sys.stdout.flush()


_json_out: TextIO | None = None  # where --json results go once stdout is reserved (else sys.stdout); see below


def _reserve_stdout() -> None:
    """With --json, stdout carries exactly one JSON object: from here to the end of the process, whatever
    else writes to file descriptor 1 (a library's own messages, such as Ray's about its nodes, even at
    exit) goes to stderr, and the result is written to the original stdout."""
    global _json_out
    sys.stdout.flush()
    _json_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)


def _print_json(data: Any) -> None:
    stream = _json_out or sys.stdout
    stream.write(json.dumps(data) + "\n")
    stream.flush()


def _elsewhere(store: Store) -> str:
    """' --workspace DIR' when the run is stored where a command typed in this folder would not look."""
    workspace = store.root.parent.resolve()
    return "" if find_workspace(Path.cwd()) == workspace else f" --workspace {shlex.quote(str(workspace))}"


# how a search's end reads to a shell: 1 failed (also printed), 3 interrupted (resumable), 130 cancelled (as Ctrl-C)
EXIT_CODES = {RunStatus.FAILED: 1, RunStatus.INTERRUPTED: 3, RunStatus.CANCELLED: 130}


def _finish_run(record: RunRecord, args: argparse.Namespace, store: Store, warnings: list[str] | None = None) -> int:
    if args.json:
        _print_json({**render.run_json(record), "schedule": record.config.get("schedule"),
                          "warnings": warnings or []})
    else:
        out.print(render.result_table(record))
        if record.best and record.baseline and record.best.id != record.baseline.id:
            # the plan is LLM text: [brackets] in it are code (A[i][k]), never markup
            out.print(f"\n[bold]winner[/bold] {escape(record.best.id)}: {escape(' '.join(record.best.plan.split()))}")
            _print_plain(render.unified_diff(record.problem.source, record.best.source, record.path))
            out.print(f"apply it with: speedpatch apply {record.run_id}{_elsewhere(store)}", markup=False, soft_wrap=True)
        elif record.status != RunStatus.FAILED:
            out.print("no candidate beat the original")
    if record.status == RunStatus.FAILED:
        if not args.json:
            err.print(f"[red]error:[/red] {escape(record.message)}", markup=True)
        else:
            err.print(record.message, markup=False)
    return EXIT_CODES.get(record.status, 0)


def cmd_optimize(args: argparse.Namespace) -> int:
    workspace = _workspace(args, args.file)
    config = _config(args, workspace)
    text = _read_source(args.file)
    problem = api.make_problem(str(Path(args.file).resolve()), text, args.kernel, config, args.backend)
    store = _store(workspace)
    with _CtrlC() as cancel, SearchProgress(err, enabled=not args.json) as progress:
        def on_event(event: ev.Event) -> None:
            if event.kind == ev.RUN_STARTED and not args.json:  # which schedule guides this run, if any
                _print_schedule(event.data.get("schedule"), config.search.reuse_mode())
            progress(event)

        record = api.optimize(problem, config, store, on_event=on_event, cancel=cancel)
    return _finish_run(record, args, store, progress.warnings)


def _print_schedule(described: str | None, reuse: str) -> None:
    if described:
        err.print(f"schedule: following {escape(described)} (--reuse off to search without it)")
    elif reuse == "off":
        err.print("schedule: none (reuse off)")
    else:
        err.print("schedule: none (no finished run on a related problem of this target found a speedup)")


def cmd_resume(args: argparse.Namespace) -> int:
    workspace = _workspace(args)
    store = _run_store(args)
    config = load_config(workspace)
    with _CtrlC() as cancel, SearchProgress(err, enabled=not args.json) as progress:
        record = api.resume(args.run, store, config, on_event=progress, cancel=cancel, executor=args.executor)
    return _finish_run(record, args, store, progress.warnings)


def cmd_evaluate(args: argparse.Namespace) -> int:
    workspace = _workspace(args, args.file)
    config = _config(args, workspace)
    text = _read_source(args.file)
    problem = api.make_problem(str(Path(args.file).resolve()), text, args.kernel, config, args.backend,
                               whole_program=True)
    if not sandbox.status().active and not config.sandbox.required:  # (required: evaluate refuses)
        err.print(f"[yellow]warning:[/yellow] {escape(sandbox.status().describe())}")
    ev = api.evaluate(problem, None, config, reverify_figure=args.reverify)
    if args.json:
        _print_json({
            "correct": ev.correct, "status": ev.status, "value": ev.value, "unit": ev.unit,
            "backend": problem.backend, "kernel": problem.kernel.name, "message": ev.message,
            "output": ev.log, "feedback": ev.feedback, "receipt": ev.receipt, "spread": ev.spread,
        })
    else:
        render.print_evaluation(out, ev, problem.backend)
        if not ev.correct and ev.log:
            _print_plain(ev.log)
    return 0 if ev.correct else 1


def cmd_runs(args: argparse.Namespace) -> int:
    store = _stored_runs(args)
    records = store.list_runs() if store else []
    if args.json:
        _print_json([render.run_json(r) for r in records])
    elif not records:
        out.print(f"no runs yet in {_workspace(args)}", markup=False, soft_wrap=True)
    else:
        out.print(render.runs_table(records, out.width))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    store = _run_store(args)
    record = store.get_run(args.run)  # NotFoundError: a UserError
    if args.json:
        data = render.run_json(record)
        data["candidates"] = [
            {"id": c.id, "parent_id": c.parent_id, "iteration": c.iteration, "plan": c.plan, "model": c.model,
             "status": c.evaluation.status if c.evaluation else None,
             "value": c.evaluation.value if c.evaluation else None}
            for c in store.candidates(record.run_id)
        ]
        data["beams"] = store.beams(record.run_id)
        data["llm_usage"] = store.llm_usage(record.run_id)
        _print_json(data)
        return 0
    out.print(render.result_table(record))
    out.print(render.candidates_table(store.candidates(record.run_id)))
    if record.best:
        out.print("\n[bold]lineage of the best[/bold]")
        for c in store.lineage(record.run_id, record.best.id):
            ev = c.evaluation
            value = render.cell(ev)
            plan = textwrap.shorten(c.plan, 160, placeholder=" ...")  # whole words, one line of spaces
            out.print(f"  {c.id}: {value}  {plan or '(original)'}", markup=False)
    usage = store.llm_usage(record.run_id)
    if usage:
        out.print("\n[bold]LLM use[/bold]")
        for u in usage:
            out.print(f"  {u['phase']:5} {u['model']}: {u['calls']} calls, {u['prompt_tokens']}+"
                      f"{u['completion_tokens']} tokens, {u['seconds']:.1f} s", markup=False)
    if args.diff and record.best:
        _print_plain(render.unified_diff(record.problem.source, record.best.source, record.path))
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    store = _run_store(args)
    record = store.get_run(args.run)  # NotFoundError: a UserError
    path = Path(record.path)
    if not path.exists():
        raise UserError(f"run {record.run_id} was made on {path}, which is no longer there (moved or deleted?); "
                        f"apply writes only into that file: put it back, or see the winner with "
                        f"`speedpatch show {record.run_id} --diff`")
    current = _read_source(str(path))
    new_text = api.apply_text(record, current)  # UserError unless the run has a winner
    winner = record.best.id if record.best else ""
    if new_text == current:
        out.print(f"{winner} of run {record.run_id} is already in {path}: nothing written", markup=False, soft_wrap=True)
        return 0
    path.write_text(new_text, encoding="utf-8")
    out.print(f"applied {winner} of run {record.run_id} to {path} ({render.verdict_text(record)})", markup=False,
              soft_wrap=True)  # one line: a path is never broken
    return 0


def cmd_backends(args: argparse.Namespace) -> int:
    config = load_config(_workspace(args))
    isolation = sandbox.status()
    rows: list[dict[str, Any]] = []
    for target in targets.all_targets():
        for backend in target.backends():
            try:
                avail = backend.availability(config.backend_settings.get(backend.name, {}))
                usable, reason = avail.usable, avail.reason
            except Exception as exc:  # report, never crash the listing
                usable, reason = False, f"availability check failed: {exc}"
            rows.append({"target": target.name, "backend": backend.name, "usable": usable,
                         "measures_speed": backend.measures_speed, "default": backend.name == target.default_backend,
                         "reason": reason, "sandbox": isolation.active, "sandbox_reason": isolation.reason})
    on_ray = (args.executor or config.search.executor) == "ray"
    if on_ray:  # how many cluster nodes can run each backend
        from speedpatch.engine.executors import nodes_per_backend

        counts = nodes_per_backend(config.ray.address, config.ray.namespace, config.ray.resources,
                                   [r["backend"] for r in rows], config.ray.connect_timeout)
        for r in rows:
            r["ray_nodes"] = counts[r["backend"]]
    if args.json:
        _print_json(rows)
        return 0
    from rich.table import Table

    table = Table(title="backends")
    for col in ("target", "backend", "usable", "times", *(("Ray nodes",) if on_ray else ()), "why / what"):
        table.add_column(col, overflow="fold")
    for r in rows:
        name = r["backend"] + (" (default)" if r["default"] else "")
        nodes = (str(r["ray_nodes"]),) if on_ray else ()
        table.add_row(r["target"], name, "yes" if r["usable"] else "no", "yes" if r["measures_speed"] else "no",
                      *nodes, escape(r["reason"]))
    out.print(table)
    for name, why in targets.load_errors().items():
        out.print(f"[yellow]target {escape(name)} could not be loaded:[/yellow] {escape(why)}")
    _print_sandbox(config, out)
    return 0


def _print_sandbox(config: Config, console: Console) -> None:
    """Whether candidates run isolated here, and what [sandbox] required = true would do about it."""
    isolation = sandbox.status()
    if isolation.active:
        console.print(escape(isolation.describe()))
    else:
        refuse = " ([sandbox] required = true: runs are refused)" if config.sandbox.required else ""
        console.print(f"[yellow]{escape(isolation.describe())}[/yellow]{refuse}")


def cmd_bench(args: argparse.Namespace) -> int:
    from speedpatch.cli.bench import run_bench

    return run_bench(args, out, err, _print_json)


def cmd_serve(args: argparse.Namespace) -> int:
    from speedpatch.lsp.server import main as serve_main

    serve_main()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="speedpatch", description="Make accelerator kernels faster.")
    parser.add_argument("--version", action="version", version=f"speedpatch {__version__}")
    workspace_help = ("the folder whose speedpatch.toml and .speedpatch/ run store are used (default: the nearest "
                      "one holding either, from the kernel's folder up, else the current folder)")
    parser.add_argument("--workspace", help=workspace_help)
    commands = parser.add_subparsers(dest="command", required=True)

    def add_command(name: str, help: str) -> argparse.ArgumentParser:
        """A command; one that reads a workspace takes --workspace after its name too (`speedpatch apply RUN
        --workspace DIR` is what people type). SUPPRESS keeps a --workspace given before the command."""
        p = commands.add_parser(name, help=help)
        if name not in ("bench", "serve"):
            p.add_argument("--workspace", default=argparse.SUPPRESS, help=workspace_help)
        return p

    def executor_opt(p: argparse.ArgumentParser) -> None:
        p.add_argument("--executor", choices=EXECUTORS,
                       help="where candidates are evaluated: this machine, or the [ray] cluster of speedpatch.toml")

    def search_opts(p: argparse.ArgumentParser) -> None:
        p.add_argument("--iterations", "-T", type=int, help="search iterations (default 8, or speedpatch.toml's)")
        p.add_argument("--beam", "-B", type=int, help="candidates kept per iteration (default 4, or speedpatch.toml's)")
        p.add_argument("--plans", "-N", type=int, help="plans per parent")
        p.add_argument("--codes", "-K", type=int, help="code samples per plan")
        p.add_argument("--model", action="append", help="LLM model (repeat for an ensemble)")
        p.add_argument("--base-url", help="OpenAI-compatible endpoint")
        p.add_argument("--offline", action="store_true", help="no LLM: deterministic offline moves")
        p.add_argument("--seed", type=int, help="seed for sampling and offline moves (default 0, or speedpatch.toml's)")
        p.add_argument("--reuse", metavar="RUN|auto|off",
                       help="follow the schedule of a finished run on a related problem: auto (default: the "
                            "closest one, if any), off, or a run id")
        executor_opt(p)

    include_dir_help = ("Gemmini: a gemmini-rocc-tests checkout whose include/ headers replace speedpatch's "
                        "(same as [backend.gemmini-native] include_dir)")
    p = add_command("optimize", help="search for a faster version of a kernel")
    p.add_argument("file", help="the kernel's source file (.c Gemmini, .py NKI or KernelBench, .cu CUDA)")
    p.add_argument("--kernel", help="which kernel, where the file has several")
    p.add_argument("--backend", help="where to measure (default: [backends] in speedpatch.toml, else the target's; "
                   "see `speedpatch backends`)")
    p.add_argument("--include-dir", help=include_dir_help)
    search_opts(p)
    p.add_argument("--json", action="store_true", help="print one JSON object at the end")
    p.set_defaults(func=cmd_optimize)

    p = add_command("evaluate", help="check and measure a file as it is")
    executor_opt(p)
    p.add_argument("file", help="the kernel's source file")
    p.add_argument("--kernel", help="which kernel, where the file has several")
    p.add_argument("--backend", help="where to measure (default: as for optimize; see `speedpatch backends`)")
    p.add_argument("--include-dir", help=include_dir_help)
    p.add_argument("--reverify", action="store_true",
                   help="also check a correct result on the backend's independent backend, as a run's winner is "
                        "(gemmini-native: gemmini-spike), and reject it if its figure is not reproduced there")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_evaluate)

    p = add_command("runs", help="list stored runs")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_runs)

    p = add_command("show", help="show a run")
    p.add_argument("run", help="a run id, as `speedpatch runs` lists them")
    p.add_argument("--diff", action="store_true", help="also print the winner's diff")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_show)

    p = add_command("apply", help="write a run's winner into its file (if the kernel is unchanged)")
    p.add_argument("run", help="a run id, as `speedpatch runs` lists them")
    p.set_defaults(func=cmd_apply)

    p = add_command("resume", help="continue an interrupted run")
    executor_opt(p)
    p.add_argument("run", help="a run id, as `speedpatch runs` lists them")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_resume)

    p = add_command("backends", help="list backends and whether they work here")
    executor_opt(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_backends)

    p = add_command("bench", help="offline search over a target's examples, with a table")
    p.add_argument("target", help="gemmini, nki or cuda")
    p.add_argument("--examples", help="folder of example problems (default: examples/<target>)")
    p.add_argument("--iterations", "-T", type=int, default=3, help="search iterations per example (default 3)")
    p.add_argument("--only", action="append", help="example file name (repeatable)")
    p.add_argument("--paper", action="store_true",
                   help="gemmini: the Autocomp paper's setup (examples/gemmini/paper: library baseline, "
                        "explicit start, best found, utilization, roofline)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_bench)

    p = add_command("serve", help="run the language server over stdio")
    p.set_defaults(func=cmd_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "json", False) and argv is None:  # the process is ours: keep its stdout for the result
        _reserve_stdout()
    start = time.monotonic()
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"error: {redact(str(exc))}", file=sys.stderr)  # plain: never wrapped, easy to grep
        return 2
    except sqlite3.DatabaseError as exc:  # a damaged store, or some other file where the store should be
        print(f"error: the run store (.speedpatch/runs.sqlite3) cannot be read: {exc}. Move it away to start "
              "a new one; your source files are not affected.", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        err.print(f"aborted after {time.monotonic() - start:.0f} s")
        return 130
    except Exception:  # a bug of ours: its traceback helps a report, but may quote a key (a URL, a value)
        print(redact(traceback.format_exc()), end="", file=sys.stderr)
        print("error: speedpatch failed unexpectedly; the traceback above is for a bug report", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
