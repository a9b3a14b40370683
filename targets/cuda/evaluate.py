"""The evaluation flow shared by cuda-local and cuda-ssh: guard, build one A/B binary (or stage a
KernelBench run), run it with a time limit, read its result line."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from speedpatch.model import COMPILE_ERROR, INFRA_ERROR, REJECTED, Evaluation
from speedpatch.targets.base import EvalContext, timeout_evaluation
from speedpatch.targets.cuda import guards
from speedpatch.targets.cuda.build import (
    ProblemError,
    compile_flags,
    kit_units,
    layouts,
    write_units,
)
from speedpatch.targets.cuda.executors import Executor, SshExecutor
from speedpatch.targets.cuda.problem import KERNELBENCH, split_problem
from speedpatch.targets.cuda.results import parse_result, to_evaluation

KB_RUNNER = Path(__file__).parent / "kernelbench_runner.py"
MEASURING_BACKENDS = "cuda-local (on a machine with an NVIDIA GPU) or cuda-ssh (a GPU host in speedpatch.toml)"


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
    findings = guards.check(layout.solution, layout.precision, layout.allow, layout.solution_line,
                            python=layout.kind == KERNELBENCH)
    if not findings:
        return None
    return Evaluation(status=REJECTED, message=findings[0].text(), log="\n".join(f.text() for f in findings),
                      feedback={"guard_findings": [f.to_dict() for f in findings]})


def timing_args(settings: dict[str, Any], seed: int) -> list[str]:
    return ["--trials", str(int(settings.get("trials", 100))), "--warmup", str(int(settings.get("warmup", 3))),
            "--seeds", str(int(settings.get("seeds", 3))), "--seed", str(int(seed))]


def evaluate_with(executor: Executor, source: str, ctx: EvalContext, backend: str, nvcc: str, arch: str) -> Evaluation:
    """Never raises for a bad candidate; tool and host failures are INFRA_ERROR."""
    start = time.monotonic()
    settings = ctx.settings or {}
    try:
        cand, _ = layouts(source, trusted_baseline(source, ctx), ctx.path)
    except ProblemError as exc:
        return Evaluation(status=REJECTED, message=str(exc))
    rejected = static_rejection(source, ctx.path)
    if rejected is not None:
        return rejected
    build = ctx.workdir / "build"
    receipt: dict[str, Any] = {"backend": backend, "where": executor.where}
    if cand.kind == KERNELBENCH:
        build.mkdir(parents=True, exist_ok=True)
        (build / "problem.py").write_text(trusted_baseline(source, ctx))
        (build / "candidate.py").write_text(source)
        shutil.copyfile(KB_RUNNER, build / KB_RUNNER.name)
        python = str(settings.get("python", "python3"))
        steps: list[tuple[str, list[str]]] = [
            ("run", [python, KB_RUNNER.name, "--problem", "problem.py", "--candidate", "candidate.py",
                     *timing_args(settings, ctx.seed)])]
        receipt.update({"compiler": "torch.utils.cpp_extension.load_inline (on the GPU host)", "python": python})
    else:
        units = kit_units(source, trusted_baseline(source, ctx), ctx.path)
        write_units(units, build)
        flags = compile_flags(arch, list(settings.get("extra_flags", [])))
        includes = ["-I."] + ([f"-I{os.path.dirname(os.path.abspath(ctx.path))}"] if backend == "cuda-local" and ctx.path else [])
        steps = [("compile", [nvcc, *flags, *includes, "main.cu", "baseline.cu", "candidate.cu", "-o", "bench"]),
                 ("run", ["./bench", *timing_args(settings, ctx.seed)])]
        receipt.update({"compiler": nvcc, "flags": flags, "harness": f"speedpatch_timing.cuh, harness {units.harness_hash}"})
    failed = executor.upload(build, max(5.0, ctx.timeout))
    if failed is not None:
        return Evaluation(status=INFRA_ERROR, message=f"could not copy the build to {executor.where}", log=failed.output)
    log = ""
    try:
        for step, argv in steps:
            left = ctx.timeout - (time.monotonic() - start)
            if left <= 1:
                return timeout_evaluation(step, ctx.timeout, log)
            result = executor.run(argv, left)
            log += result.output + "\n"
            if result.timed_out:
                return timeout_evaluation(f"{step} on {executor.where}", ctx.timeout, log)
            if result.returncode == 255 and isinstance(executor, SshExecutor) and "SPEEDPATCH_RESULT" not in result.output:
                return Evaluation(status=INFRA_ERROR, message=f"ssh to {executor.where} failed during {step}", log=log)
            if step == "compile" and result.returncode != 0:
                status = INFRA_ERROR if result.returncode in (126, 127) else COMPILE_ERROR
                return Evaluation(status=status, message=f"nvcc failed on {executor.where}", log=log,
                                  seconds=time.monotonic() - start)
            if step == "run":
                evaluation = to_evaluation(parse_result(result.output), log, receipt,
                                           no_device_hint="cuda-compile can still check that it builds")
                evaluation.seconds = time.monotonic() - start
                return evaluation
    finally:
        executor.cleanup()
    return Evaluation(status=INFRA_ERROR, message="nothing was run", log=log)
