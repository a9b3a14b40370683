"""The evaluation flow shared by cuda-local and cuda-ssh: guard, build one A/B binary (or stage a
KernelBench run), run it with a time limit, read its result line."""

from __future__ import annotations

import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from speedpatch.model import COMPILE_ERROR, INFRA_ERROR, OK, REJECTED, RUNTIME_ERROR, Evaluation
from speedpatch.targets.base import EvalContext, timeout_evaluation
from speedpatch.targets.cuda import guards
from speedpatch.targets.cuda.build import (
    ProblemError,
    Units,
    compile_flags,
    find_nvcc,
    include_flags,
    kit_units,
    layouts,
    nvcc_version,
    write_units,
)
from speedpatch.targets.cuda.compilerinfo import arch_of_device, resource_feedback
from speedpatch.targets.cuda.gpulock import gpu_lock
from speedpatch.targets.cuda.localbuild import build_local, compile_checked, default_cache_dir
from speedpatch.targets.cuda.problem import KERNELBENCH, ProblemLayout, split_problem
from speedpatch.targets.cuda.results import parse_result, to_evaluation
from speedpatch.targets.hosts import Host

KB_RUNNER = Path(__file__).parent / "kernelbench_runner.py"
MEASURING_BACKENDS = "cuda-local (on a machine with an NVIDIA GPU) or cuda-ssh (a GPU host in speedpatch.toml)"
# [backend.cuda-*] keys: the build's (every CUDA backend), and the timed run's (cuda-local, cuda-ssh)
BUILD_KEYS = frozenset({"nvcc", "arch", "extra_flags", "cache_dir"})
TIMED_KEYS = BUILD_KEYS | {"trials", "warmup", "seeds", "python", "inspect", "local_nvcc", "inspect_arch"}


def trusted_baseline(source: str, ctx: EvalContext) -> str:
    """Where the trusted harness comes from: the run's baseline, else the original file, else the
    source itself (the baseline evaluation, when the source IS the original)."""
    if ctx.baseline_source is not None:
        return ctx.baseline_source
    try:
        original = Path(ctx.path).read_text()
    except (OSError, UnicodeDecodeError):
        return source
    return original if split_problem(original, ctx.path) is not None else source


def static_rejection(source: str, path: str) -> Evaluation | None:
    layout = split_problem(source, path)
    if layout is None:
        return None
    findings = guards.check(layout.solution, layout.precision, layout.allow, layout.solution_line, forbid=layout.forbid,
                            element=layout.element, python=layout.kind == KERNELBENCH)
    if not findings:
        return None
    return Evaluation(status=REJECTED, message=findings[0].text(), log="\n".join(f.text() for f in findings),
                      feedback={"guard_findings": [f.to_dict() for f in findings]})


RESULT_FILE = "speedpatch_result.json"  # the harness writes its result line here too (read whole)


def checked_candidate(source: str, ctx: EvalContext) -> tuple[str, ProblemLayout | Evaluation]:
    """The trusted baseline, and the candidate's layout or the evaluation that rejects the candidate."""
    baseline = trusted_baseline(source, ctx)
    try:
        cand, _ = layouts(source, baseline, ctx.path)
    except ProblemError as exc:
        return baseline, Evaluation(status=REJECTED, message=str(exc))
    return baseline, static_rejection(source, ctx.path) or cand


def evaluation_seed(run_seed: int) -> int:
    """The first input seed of one evaluation: fresh every time (the run's seed mixed with a random draw), so
    a candidate cannot special-case the inputs it will be checked on. The receipt records it."""
    return (int(run_seed) * 1_000_003 + secrets.randbits(31)) % (1 << 62)


def timing_args(settings: dict[str, Any], seed: int) -> list[str]:
    return ["--trials", str(int(settings.get("trials", 100))), "--warmup", str(int(settings.get("warmup", 3))),
            "--seeds", str(int(settings.get("seeds", 3))), "--seed", str(int(seed)), "--nonce", "stdin",
            "--result", RESULT_FILE]


class _Run:
    """One evaluation in progress: its deadline, its accumulated log."""

    def __init__(self, host: Host, ctx: EvalContext) -> None:
        self.host, self.ctx = host, ctx
        self.start = time.monotonic()
        self.log = ""
        self.channel: str | None = None  # what the last step wrote to its private result pipe

    def left(self) -> float:
        return self.ctx.timeout - (time.monotonic() - self.start)

    def step(self, what: str, argv: list[str], stdin: str | None = None) -> tuple[Evaluation | None, str]:
        """(failure, output): runs argv where the build lives; timeouts and ssh failures become failures."""
        if self.left() <= 1:
            return timeout_evaluation(what, self.ctx.timeout, self.log), ""
        result = self.host.run(argv, self.left(), stdin=stdin)
        self.channel = result.result
        self.log += result.output + "\n"
        if result.timed_out:
            return timeout_evaluation(f"{what} on {self.host.where}", self.ctx.timeout, self.log), ""
        if self.host.lost(result) and "SPEEDPATCH_RESULT" not in result.output:
            return Evaluation(status=INFRA_ERROR, message=f"ssh to {self.host.where} failed during {what}",
                              log=self.log), ""
        if what == "compile" and result.returncode != 0:
            status = INFRA_ERROR if result.returncode in (126, 127) else COMPILE_ERROR
            return Evaluation(status=status, message=f"nvcc failed on {self.host.where}", log=self.log), ""
        return None, result.output


def evaluate_with(host: Host, source: str, ctx: EvalContext, backend: str, nvcc: str, arch: str) -> Evaluation:
    """Never raises for a bad candidate; tool and host failures are INFRA_ERROR."""
    settings = ctx.settings or {}
    baseline, cand = checked_candidate(source, ctx)
    if isinstance(cand, Evaluation):
        return cand
    run = _Run(host, ctx)
    build = ctx.workdir / "build"
    receipt: dict[str, Any] = {"backend": backend, "where": host.where}
    compiler_output = ""
    sass: str | None = None  # the candidate's SASS when this machine's object check read it
    if cand.kind == KERNELBENCH:
        build.mkdir(parents=True, exist_ok=True)
        (build / "problem.py").write_text(baseline)
        (build / "candidate.py").write_text(source)
        shutil.copyfile(KB_RUNNER, build / KB_RUNNER.name)
        # Locally the runner uses this Python (where torch would be installed); remotely the host's python3.
        python = str(settings.get("python") or host.default_python)
        bench = [python, KB_RUNNER.name, "--problem", "problem.py", "--candidate", "candidate.py"]
        compile_argv: list[str] | None = None
        receipt.update({"compiler": "torch.utils.cpp_extension.load_inline (on the GPU host)", "python": python})
    else:
        units = kit_units(source, baseline, ctx.path)
        flags = compile_flags(arch, list(settings.get("extra_flags", [])))
        receipt.update({"compiler": nvcc, "flags": flags, "harness": f"speedpatch_timing.cuh, harness {units.harness_hash}"})
        bench = ["./bench"]
        if host.address is None:
            includes = include_flags(ctx.path)
            built = build_local(units, build, nvcc, flags, includes, default_cache_dir(settings), run.start + ctx.timeout,
                                cand)
            if built.evaluation is not None:
                return built.evaluation
            compiler_output, sass = built.compiler_output, built.sass
            compile_argv = None
        else:
            checked = _inspect_here(units, ctx, cand, arch, run.start + ctx.timeout)
            if isinstance(checked, Evaluation):
                return checked
            receipt["object_check"] = checked
            write_units(units, build)
            # -Xptxas -v: registers/spills of the candidate come back in the remote compiler output.
            compile_argv = [nvcc, *flags, "-Xptxas", "-v", "-I.", "main.cu", "baseline.cu", "candidate.cu", "-o", "bench"]
    failed = host.upload(build, max(5.0, run.left()))
    if failed is not None:
        return Evaluation(status=INFRA_ERROR, message=f"could not copy the build to {host.where}", log=failed.output)
    try:
        if compile_argv is not None:
            failure, compiler_output = run.step("compile", compile_argv)
            if failure is not None:
                return failure
        # One timing run per GPU at a time (keyed by host), however many evaluations run in parallel.
        with gpu_lock(default_cache_dir(settings), host.address or "local", max(0.0, run.left() - 1)) as held:
            if not held:
                return timeout_evaluation("waiting for the GPU", ctx.timeout, run.log)
            nonce = secrets.token_hex(16)
            failure, output = run.step("run", [*bench, *timing_args(settings, evaluation_seed(ctx.seed))],
                                       stdin=nonce + "\n")
        if failure is not None:
            return failure
        # The verdict comes from the harness's result pipe (locally) or result file, never from the program's
        # output: the candidate runs in that process and could print a line (its object may not do I/O).
        # It must carry this evaluation's secret, which the harness read from stdin before any solution code.
        channel = run.channel if run.channel else host.fetch(RESULT_FILE, max(5.0, run.left()))
        receipt["verdict"] = (f"the harness's {'private result pipe' if run.channel else 'result file'}, sealed with a "
                              "per-evaluation secret; inputs from a fresh seed; the reference computed after both sides ran")
        result = parse_result(channel or "")
        if result is not None and result.get("nonce") != nonce:
            return Evaluation(status=RUNTIME_ERROR, log=run.log, message="the result does not carry this evaluation's "
                              "secret: it was not written by the harness")
    finally:
        host.cleanup()
    evaluation = to_evaluation(result, run.log, receipt, no_device_hint="cuda-compile can still check that it builds",
                               precision=cand.precision)
    if evaluation.status == OK and compiler_output:
        _add_resources(evaluation, compiler_output, build, cand, arch, run.left(), sass)
    evaluation.seconds = time.monotonic() - run.start
    return evaluation


def _inspect_here(units: Units, ctx: EvalContext, cand: ProblemLayout, arch: str, deadline: float) -> Evaluation | str:
    """The object check for a remote build, run on this machine: the same units compiled with this machine's
    nvcc (`local_nvcc`, else the one on PATH) for `inspect_arch` (default: the remote arch, sm_90 for
    "native"), inspected as cuda-local's are. A rejection or compile error is returned as the evaluation;
    otherwise what was checked, for the receipt. `inspect = "off"` in the backend's table skips it."""
    settings = ctx.settings or {}
    if str(settings.get("inspect", "local")).lower() == "off":
        return "not run (inspect = \"off\")"
    nvcc = find_nvcc({"nvcc": settings["local_nvcc"]} if settings.get("local_nvcc") else None)
    if nvcc is None:
        return "not run: no nvcc on this machine to compile the candidate for inspection (set local_nvcc)"
    inspect_arch = str(settings.get("inspect_arch") or (arch if arch.startswith("sm_") else "sm_90"))
    flags = compile_flags(inspect_arch, list(settings.get("extra_flags", [])))
    built = compile_checked(units, ctx.workdir / "inspect", nvcc, flags, include_flags(ctx.path),
                            default_cache_dir(settings), deadline, cand)
    if built.evaluation is not None:
        built.evaluation.message = f"{built.evaluation.message} (object check on this machine, {inspect_arch})"
        return built.evaluation
    return f"passed on this machine ({nvcc_version(nvcc)}, {inspect_arch})" + (
        f"; {'; '.join(built.notes)}" if built.notes else "")


def _add_resources(evaluation: Evaluation, compiler_output: str, build: Path, cand: ProblemLayout, arch: str,
                   timeout: float, sass: str | None = None) -> None:
    """Registers, spills and occupancy next to the timing (occupancy for the device actually used)."""
    if arch == "native":
        arch = arch_of_device(str((evaluation.receipt.get("device") or {}).get("cc", "")))
    info = resource_feedback(compiler_output, build / "candidate.o", cand.solution, cand.harness, arch, max(1.0, timeout),
                             sass)
    evaluation.feedback["kernels"] = info["kernels"]
