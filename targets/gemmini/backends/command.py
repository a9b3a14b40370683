"""gemmini-command: a user-configured command that builds and runs the candidate somewhere real
(FireSim, a Verilator simulation, a remote Chipyard machine) and prints cycles.

speedpatch.toml:

    [backend.gemmini-command]
    build = "riscv64-unknown-elf-gcc -O2 -I{include_root} -I{include} {source} -o {binary}"   # optional
    command = "ssh chipyard run-firesim {binary}"                                            # required
    cycles_regex = "Cycles taken: (\\d+)"   # optional; default: the speedpatch harness result line
    timeout = 3600                           # optional, seconds (default: the evaluation timeout)
    sandbox = false                          # optional: run `command` outside speedpatch's sandbox

Placeholders (each shell-quoted): {source} the candidate file, {binary} where the build puts its output
({source} when there is no build step), {workdir} the scratch folder, {include} speedpatch's Gemmini
include folder, {include_root} its parent (for "include/gemmini.h"), {seed} the harness seed.

Both commands run in speedpatch's sandbox (no network, nothing of $HOME, only the scratch folder
writable: targets/sandbox.py). A command that needs ssh, the network or your home (FireSim managers,
remote hosts) must say `sandbox = false`; the candidate then runs wherever that command sends it, outside
speedpatch's sandbox. The build step is always sandboxed.

Correctness: the harness result line when the output has one (correct=1 and exit status 0), otherwise
exit status 0 and a cycles_regex match.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Any

from speedpatch.model import COMPILE_ERROR, INFRA_ERROR, OK, REJECTED, RUNTIME_ERROR, Evaluation
from speedpatch.targets.base import Availability, Backend, EvalContext, timeout_evaluation
from speedpatch.targets.gemmini.backends import common, region_check
from speedpatch.targets.gemmini.backends.native import candidate_region, include_dirs, source_name
from speedpatch.targets.hosts import LocalHost

NOT_CONFIGURED = "not configured: set [backend.gemmini-command] command in speedpatch.toml"


def _fill(template: str, values: dict[str, str]) -> str:
    """The template with {name} placeholders replaced by shell-quoted values; unknown names are errors."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in values:
            raise KeyError(name)
        return shlex.quote(values[name])

    return re.sub(r"\{(\w+)\}", sub, template)


def kernel_problems(source: str, ctx: EvalContext, timeout: float) -> list[str]:
    """A candidate's region through gemmini-native's kernel checks (region_check.py), compiled with the host
    gcc: the configured build is one unit with the program and the harness, and the result line it prints is
    the verdict. Red-team: a kernel that printed a result line of its own and ended the program (exit by a
    pasted name) was "correct, 1 cycles" against the library call's 14,586. Without gcc nothing is checked
    (the receipt says so)."""
    from speedpatch.targets.gemmini import build

    keep = candidate_region(source, ctx.baseline_source if ctx.baseline_source is not None else source, ctx.kernel)
    if keep is None or ctx.kernel is None or not shutil.which("gcc"):
        return []
    incs = [f"-I{d}" for d in build._config_include_dirs(ctx.workdir.resolve(), None)]
    incs += [f"-I{d}" for d in include_dirs(ctx, ctx.settings or {})]
    return region_check.problems_for(source, keep, ctx.kernel, ctx.workdir / "kernel-check", incs, timeout)


class CommandBackend(Backend):
    name = "gemmini-command"
    settings_keys = frozenset({"build", "command", "cycles_regex", "timeout", "sandbox"})
    target = "gemmini"
    measures_speed = True
    description = "your own command (FireSim, Verilator, a remote Chipyard host) that runs the program and prints cycles"

    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        settings = settings or {}
        command = settings.get("command")
        if not command or not isinstance(command, str):
            return Availability(False, NOT_CONFIGURED)
        if settings.get("cycles_regex"):
            try:
                re.compile(str(settings["cycles_regex"]))
            except re.error as exc:
                return Availability(False, f"[backend.gemmini-command] cycles_regex is not a valid regex: {exc}")
        return Availability(True, f"runs: {command}")

    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        settings = ctx.settings or {}
        if (refused := self.refusal(settings)) is not None:
            return refused
        timeout = float(settings.get("timeout") or ctx.timeout)
        src = ctx.workdir / source_name(ctx)
        src.write_text(source, encoding="utf-8", errors="replace")
        binary = ctx.workdir / (Path(src).stem + ".elf") if settings.get("build") else src
        values = {
            "source": str(src), "binary": str(binary), "workdir": str(ctx.workdir), "include": str(common.INCLUDE_DIR),
            "include_root": str(common.GEMMINI_DIR), "seed": str(ctx.seed or 1),
        }
        rec = common.receipt(self.name, command=settings["command"], build=settings.get("build"), seed=ctx.seed or 1,
                             statistic="one run of the configured command (no repetition)")
        try:
            build_cmd = _fill(str(settings["build"]), values) if settings.get("build") else None
            run_cmd = _fill(str(settings["command"]), values)
        except KeyError as exc:
            return Evaluation(status=INFRA_ERROR, message=f"[backend.gemmini-command]: unknown placeholder {{{exc.args[0]}}}")
        if not shutil.which("gcc"):
            rec["kernel_checks"] = "none: no host gcc to compile the kernel region for gemmini-native's kernel checks"
        problems = kernel_problems(source, ctx, timeout)
        if problems:
            return Evaluation(status=REJECTED, message="; ".join(problems), receipt=rec)
        if build_cmd:
            built = LocalHost(ctx.workdir).shell(build_cmd, timeout)
            if built.timed_out:
                return timeout_evaluation("the build command", timeout, built.output)
            if built.returncode != 0:
                return Evaluation(status=COMPILE_ERROR, message=f"build command failed (exit {built.returncode})",
                                  log=built.output, receipt=rec)
        run = LocalHost(ctx.workdir, sandboxed=settings.get("sandbox") is not False).shell(run_cmd, timeout)
        if run.timed_out:
            ev = timeout_evaluation("the command", timeout, run.output)
            ev.receipt = rec
            return ev
        if common.parse_result(run.output) is not None or not settings.get("cycles_regex"):
            return common.run_to_evaluation(run, timeout, {}, rec, whole_program_fallback=False)
        if run.returncode != 0:
            why = common.first_error_line(run.output) or f"exit status {run.returncode}"
            return Evaluation(status=RUNTIME_ERROR, message=f"runtime error: {why}", log=run.output, receipt=rec)
        m = re.search(str(settings["cycles_regex"]), run.output)
        if not m:
            return Evaluation(status=RUNTIME_ERROR, message="the output has no match for cycles_regex", log=run.output,
                              receipt=rec)
        text = m.groupdict().get("cycles") or (m.group(1) if m.groups() else m.group(0))
        digits = re.sub(r"[^\d]", "", text or "")
        if not digits:
            return Evaluation(status=RUNTIME_ERROR, message=f"cycles_regex matched {m.group(0)!r}, not a number",
                              log=run.output, receipt=rec)
        cycles = int(digits)
        return Evaluation(status=OK, value=float(cycles), unit="cycles", message=f"exit 0, {cycles} cycles",
                          log=run.output, receipt=dict(rec, correctness="exit status 0 (no harness result line)"))
