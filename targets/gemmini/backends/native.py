"""gemmini-native: the candidate compiled with the host gcc against speedpatch's Gemmini headers and
linked with the instruction-level + cycle model. Deterministic, needs nothing but gcc.

Settings ([backend.gemmini-native] in speedpatch.toml):
  include_dir  a gemmini-rocc-tests checkout whose headers replace ours (see upstream.py)
  params_dir   a folder with another gemmini_params.h (another hardware configuration)
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from speedpatch.model import COMPILE_ERROR, INFRA_ERROR, OK, REJECTED, Evaluation, Kernel
from speedpatch.targets.base import Availability, Backend, EvalContext, ProcResult, run_process
from speedpatch.targets.gemmini.backends import common, region_check, trusted, upstream
from speedpatch.targets.gemmini.target import WHOLE_PROGRAM

STATS_FILE = "gemmini-stats.json"
# How build.model_archive's failures begin (as opposed to the candidate's own compile errors).
MODEL_BUILD_FAILURES = ("model build failed", "model archive failed", "no gemmini_params.h")


# Upstream headers speedpatch does not ship, with what they hold (said when a program includes one).
# gemmini_nn.h has changed its functions' argument lists from version to version (im2col, pooling, the
# tiled_matmul_nn* wrappers), and its programs (cifar_quant.c, transformer.c, the imagenet/ networks) also
# need their generated weight headers: the checkout that has them is the way to run them.
UPSTREAM_ONLY_HEADERS = {
    "gemmini_nn.h": "upstream's neural-network layer helpers (ConvParams/FcParams, tiled_matmul_nn_auto, im2col, "
                    "conv_dw, pooling and residual-add layers)",
}
MISSING_UPSTREAM_HEADER = re.compile(r"fatal error: (?:\S*/)?(" + "|".join(re.escape(h) for h in UPSTREAM_ONLY_HEADERS)
                                     + r"): No such file or directory")


def _build_module() -> ModuleType:
    from speedpatch.targets.gemmini import build

    return build


def source_name(ctx: EvalContext) -> str:
    name = Path(ctx.path).name if ctx.path else ""
    return name if name.endswith(".c") else "kernel.c"


def include_dirs(ctx: EvalContext, settings: dict[str, Any]) -> list[Path]:
    """-I folders besides ours (the build driver adds targets/gemmini, for "include/gemmini.h", and its
    include/): the original file's folder, for the program's own headers."""
    return [Path(ctx.path).resolve().parent] if ctx.path else []


def build_with_upstream(build: Any, src: Path, ctx: EvalContext, root: Path,
                        params_dir: Path | None) -> tuple[ProcResult, Path | None]:
    """Compile against an adapted copy of upstream headers. -iquote puts that copy before ours for the
    programs' quoted includes ("include/gemmini.h", "rocc-software/src/xcustom.h"); the model is the same
    archive the normal build links."""
    res, archive = build.model_archive(params_dir, timeout=ctx.timeout)
    if archive is None:
        return res, None
    shim = upstream.prepare(root, ctx.workdir, common.INCLUDE_DIR / "xcustom.h")
    cc = build.compiler()
    incs = ["-iquote", str(shim), "-I", str(shim), "-I", str(shim / "include")]
    for d in include_dirs(ctx, ctx.settings or {}):
        incs += ["-I", str(d)]
    exe = ctx.workdir / (src.stem + ".native")
    obj = ctx.workdir / build.PROGRAM_OBJECT  # the program's data at a fixed place, as build_native links it
    start = time.monotonic()
    out = run_process([cc, *build.USER_CFLAGS, *incs, "-c", str(src), "-o", str(obj)], cwd=ctx.workdir,
                      timeout=ctx.timeout)
    if out.returncode != 0:
        return out, None
    link = run_process([cc, str(obj), str(archive), *build.NATIVE_LINK_LIBS, *build.program_data_link_flags(ctx.workdir),
                        "-o", str(exe)], cwd=ctx.workdir, timeout=max(1.0, ctx.timeout - (time.monotonic() - start)))
    out = ProcResult(link.returncode, "\n".join(o for o in (out.output, link.output) if o), time.monotonic() - start,
                     link.timed_out)
    if out.returncode != 0:
        return out, None
    # As build.build_native does: the model charges host cycles per instruction of each basic block from
    # <exe>.blocks; without the table every block would cost a constant.
    problem = build.write_block_table(exe, timeout=max(1.0, ctx.timeout - (time.monotonic() - start)))
    if problem:
        output = "\n".join(o for o in (out.output, f"warning: {problem}; host blocks cost a constant") if o)
        out = ProcResult(out.returncode, output, out.seconds, out.timed_out)
    return out, exe


def candidate_region(source: str, original: str, kernel: Kernel | None) -> tuple[int, int] | None:
    """Where the candidate's kernel region lies in `source` (start, end), for a candidate of a program
    without the speedpatch harness; None for the program as written and for a whole program (run as it is)."""
    if kernel is None or kernel.reason == WHOLE_PROGRAM or source == original:
        return None
    split = trusted.split_candidate(source, original, kernel)
    if isinstance(split, str):
        return None
    return len(split.prefix), len(split.prefix) + len(split.region)


def adapt_source(source: str, original: str, kernel: Kernel | None) -> tuple[str, Evaluation | None]:
    """The program's own RISC-V counter reads and fences made native (upstream.adapt_program), or the
    evaluation that refuses it. The program as written (or a whole program, which runs as it is) is adapted
    everywhere. A candidate only outside its kernel region: the region's clock reads are not the program's,
    and a kernel may not read the clock (checks.py refuses read_cycles and inline assembly by name; a macro
    or a function of the file that reads the counter is refused here, by what it expands to)."""
    reads = upstream.counter_reads(source)
    whole = kernel is None or kernel.reason == WHOLE_PROGRAM or source == original
    keep: tuple[int, int] | None = None
    if not whole and kernel is not None:
        split = trusted.split_candidate(source, original, kernel)
        if isinstance(split, str):
            return source, None  # not the program around a region: left as written (its asm will not build)
        keep = (len(split.prefix), len(split.prefix) + len(split.region))
        inside = [r for r in reads if r.start < keep[1] and r.end > keep[0]]
        if inside:
            return source, Evaluation(status=REJECTED, message=(
                f"the kernel reads the RISC-V {inside[0].counter} counter in inline assembly (line {inside[0].line}): "
                "kernels may not read the clock (the timing is the program's)"))
        names = upstream.clock_names(source, keep)
        used = sorted(set(re.findall(r"\b\w+\b", split.region)) & names.keys())
        if used:
            return source, Evaluation(status=REJECTED, message=(
                f"the kernel uses {', '.join(used)}, which reads the RISC-V {names[used[0]]}: kernels may not "
                "read the clock (the timing is the program's)"))
        reads = [r for r in reads if r.end <= keep[0] or r.start >= keep[1]]
    refusals = upstream.counter_read_refusals(reads)
    if refusals:
        return source, Evaluation(status=COMPILE_ERROR, message="; ".join(refusals))
    return upstream.adapt_program(source, keep), None


# [backend.gemmini-native] and [backend.gemmini-spike]: upstream headers, another configuration
SETTINGS_KEYS = frozenset({"include_dir", "params_dir"})


def settings_problem(settings: dict[str, Any]) -> str:
    if settings.get("include_dir"):
        missing = upstream.check_root(Path(str(settings["include_dir"])).expanduser())
        if missing:
            return f"include_dir: {missing}"
    if settings.get("params_dir") and not (Path(str(settings["params_dir"])).expanduser() / "gemmini_params.h").is_file():
        return f"params_dir: {settings['params_dir']}/gemmini_params.h not found"
    return ""


class NativeBackend(Backend):
    name = "gemmini-native"
    settings_keys = SETTINGS_KEYS
    # a second, independent functional model: the same kernel built for RISC-V and run on Spike, so a bug
    # in this model's checks cannot crown a wrong winner
    reverify_with = "gemmini-spike"
    target = "gemmini"
    measures_speed = True
    measured_on = "model"
    description = "host gcc + speedpatch's Gemmini model (bit-exact functional model, deterministic cycle model)"

    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        settings = settings or {}
        if not shutil.which("gcc"):
            return Availability(False, "gcc not found: install it (Debian: apt-get install gcc)")
        try:
            _build_module()
        except ImportError as exc:
            return Availability(False, f"the Gemmini model is not installed with speedpatch: {exc}")
        problem = settings_problem(settings)
        if problem:
            return Availability(False, problem)
        return Availability(True, f"{common.compiler_version('gcc')} + speedpatch Gemmini model")

    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        settings = ctx.settings or {}
        problem = settings_problem(settings)
        if problem:
            return Evaluation(status=INFRA_ERROR, message=problem)
        build = _build_module()
        src = ctx.workdir / source_name(ctx)
        src.write_text(source, encoding="utf-8", errors="replace")
        params_dir = Path(str(settings["params_dir"])).expanduser() if settings.get("params_dir") else None
        original = ctx.baseline_source if ctx.baseline_source is not None else source
        trusted_path = not settings.get("include_dir") and common.uses_harness(original)
        rejections: list[str] = []
        if trusted_path:
            # The harness's own program: kernel region and harness as two translation units (trusted.py).
            split = trusted.split_candidate(source, original, ctx.kernel)
            if isinstance(split, str):
                return Evaluation(status=REJECTED, message=split)
            result, exe, rejections = build.build_trusted(
                split.prefix, split.region, split.suffix, ctx.kernel.name, split.declaration, source_name(ctx),
                ctx.workdir, include_dirs(ctx, settings), params_dir, ctx.timeout)
        else:
            adapted, refused = adapt_source(source, original, ctx.kernel)
            if refused is not None:
                return refused
            src.write_text(adapted, encoding="utf-8", errors="replace")
            if settings.get("include_dir"):
                root = Path(str(settings["include_dir"])).expanduser()
                result, exe = build_with_upstream(build, src, ctx, root, params_dir)
                shim = ctx.workdir / "upstream"  # where upstream.prepare put the adapted headers
                incs = ["-iquote", str(shim), "-I", str(shim), "-I", str(shim / "include")]
            else:
                result, exe = build.build_native(src, ctx.workdir, include_dirs(ctx, settings), params_dir, ctx.timeout)
                incs = [f"-I{d}" for d in build._config_include_dirs(ctx.workdir.resolve(), params_dir)]
            keep = candidate_region(source, original, ctx.kernel)
            if exe is not None and keep is not None:
                # One unit with the program: the region also passes the trusted build's kernel checks
                # (region_check.py), compiled apart for them only.
                incs += [f"-I{d}" for d in include_dirs(ctx, settings)]
                left = max(5.0, ctx.timeout - result.seconds)
                unit_dir = ctx.workdir / "kernel-check"
                rejections = region_check.problems_for(source, keep, ctx.kernel, unit_dir, incs, left, params_dir)
                if not rejections:
                    rejections = region_check.program_object_problems(
                        ctx.workdir / build.PROGRAM_OBJECT, source, keep, ctx.kernel.name, unit_dir, left)
        rec = common.receipt(
            self.name,
            model="speedpatch native Gemmini model (functional + cycle model, targets/gemmini/model)",
            params=str(params_dir / "gemmini_params.h") if params_dir else "default int8 config (DIM=16, 256 KiB "
            "scratchpad, 64 KiB accumulator)",
            headers=str(settings.get("include_dir") or "speedpatch's gemmini.h"),
            compiler=common.compiler_version("gcc"),
            flags=" ".join(build.USER_CFLAGS + (build.NATIVE_KERNEL_TU_CFLAGS if trusted_path else [])),
            seed=ctx.seed or 1,
        )
        if rejections:
            return Evaluation(status=REJECTED, message="; ".join(rejections), log=result.output, receipt=rec)
        if exe is None and result.output.startswith(MODEL_BUILD_FAILURES):
            # Not the candidate's fault: the model itself did not build (a broken install or parameter file).
            return Evaluation(status=INFRA_ERROR, message="the Gemmini model did not build", log=result.output,
                              receipt=rec)
        if exe is None:
            ev = common.build_failed(result, ctx.timeout)
            missing = MISSING_UPSTREAM_HEADER.search(result.output)
            if missing and not result.timed_out:
                ev.message = (f"the program includes {missing.group(1)}, {UPSTREAM_ONLY_HEADERS[missing.group(1)]}, "
                              "which speedpatch's Gemmini headers do not provide: evaluate it against a "
                              "gemmini-rocc-tests checkout with --include-dir (or [backend.gemmini-native] "
                              f"include_dir); {ev.message}")
            ev.receipt = rec
            return ev
        stats_path = ctx.workdir / STATS_FILE
        remaining = max(5.0, ctx.timeout - result.seconds)
        if trusted_path:
            secret = trusted.Secret.new()
            rec = dict(rec, inputs=f"random per evaluation (input seed {secret.seed}), {secret.trials} trials, fresh "
                                   "inputs and a poisoned output per trial",
                       verdict="from the trusted harness through a private channel, with the model's own counters")
            run, record = trusted.run_with_channel(exe, ctx.workdir, remaining, stats_path, secret)
            return trusted.evaluation(run, record, secret, remaining, common.read_stats(stats_path), rec)
        if common.uses_harness(original):  # upstream headers: one unit, the printed line is the verdict
            rec = dict(rec, verdict="the program's printed result line, held to the model's own figure for the "
                                    "harness's first timed trial (include_dir build: one translation unit, without "
                                    "the trusted split; see docs/threat-model.md)")
        run = run_program(exe, ctx.workdir, remaining, stats_path, ctx.seed)
        stats = common.read_stats(stats_path)
        ev = common.run_to_evaluation(run, remaining, stats, rec, whole_program_fallback=not common.uses_harness(source))
        why = printed_figure_problem(ev, stats) if common.uses_harness(source) else ""
        return Evaluation(status=REJECTED, message=why, log=run.output, receipt=rec) if why else ev


def printed_figure_problem(ev: Evaluation, stats: dict[str, Any]) -> str:
    """Why a one-unit harness program's printed figure is not the model's ('' when it is). Its kernel shares
    the unit and the process with the harness, so the printed line is the program's word: it must equal the
    cycles the model itself measured between the harness's first two read_cycles() (the first trial's timed
    region), that region must hold the problem's work as the harness declared it to the model before any
    kernel ran (its MACs, its least DRAM bytes read and written: a kernel that forges the line must still do
    the work there), and no figure may beat the array on the MACs the model saw there."""
    if ev.status != OK:
        return ""
    printed = int(ev.value or 0)
    if "first_pair_cycles" not in stats:
        return (f"the program printed {printed} cycles, but the model's own statistics for its timed region are "
                "missing, so the figure cannot be checked")
    measured, macs = int(stats["first_pair_cycles"]), int(stats.get("first_pair_macs") or 0)
    if printed != measured:
        return (f"the program printed {printed} cycles, but the model measured {measured} between the harness's "
                "first two read_cycles(): the figure is the model's, not the program's output")
    if "declared_macs" not in stats:
        return "the harness did not declare the problem's work to the model, so the printed figure cannot be checked"
    did = {"multiply-accumulates": (macs, int(stats["declared_macs"])),
           "DRAM bytes read": (int(stats.get("first_pair_dram_read_bytes") or 0), int(stats["declared_min_read_bytes"])),
           "DRAM bytes written": (int(stats.get("first_pair_dram_write_bytes") or 0),
                                  int(stats["declared_min_write_bytes"]))}
    short = [f"{what}: {done} of the problem's {needed}" for what, (done, needed) in did.items() if done < needed]
    if short:
        return (f"the harness's first timed trial did less than the problem's work on Gemmini ({'; '.join(short)}): "
                "the printed result is not the measured kernel's")
    dim = int(stats.get("dim") or 0)
    bound = -(-macs // (dim * dim)) if dim else 0
    if printed < bound:
        return f"{printed} cycles is below the array's bound for {macs} MACs on a {dim}x{dim} array ({bound} cycles)"
    return ""


def run_program(exe: Path, workdir: Path, timeout: float, stats_path: Path, seed: int) -> ProcResult:
    """Run a native build with the model's statistics file and the harness seed in its environment."""
    env = dict(os.environ)
    env["GEMMINI_MODEL_STATS"] = str(stats_path)
    env["SPEEDPATCH_SEED"] = str(seed or 1)
    env.pop("SPEEDPATCH_TRIALS", None)
    return run_process([str(exe)], cwd=workdir, timeout=timeout, env=env)
