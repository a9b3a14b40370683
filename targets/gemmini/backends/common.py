"""What every Gemmini backend shares: reading the harness's result line, mapping a build + run to an
Evaluation with the right status, hardware feedback from the model's statistics, and the receipt."""

from __future__ import annotations

import datetime as _dt
import json
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from speedpatch.model import COMPILE_ERROR, INCORRECT, OK, REJECTED, RUNTIME_ERROR, Evaluation
from speedpatch.targets.base import ProcResult, timeout_evaluation

GEMMINI_DIR = Path(__file__).resolve().parents[1]  # targets/gemmini
INCLUDE_DIR = GEMMINI_DIR / "include"

RESULT_LINE = re.compile(
    r"^speedpatch: correct=(?P<correct>[01]) cycles=(?P<cycles>\d+)(?: macs=(?P<macs>\d+))?(?: trials=(?P<trials>\d+))?",
    re.MULTILINE,
)
RESULT_MARK = "speedpatch: correct="  # how a result line begins, wherever it stands in the output
# Lines that say why a run failed, most specific first.
ERROR_LINE = re.compile(
    r"^(gemmini-model: error: .*|gemmini library error: .*|speedpatch: mismatch .*|.*(?:Segmentation fault|Aborted).*)$",
    re.MULTILINE,
)

DIM = 16  # of the default configuration; the model's statistics say which one ran


def parse_result(output: str) -> dict[str, int] | None:
    """The last harness result line in a program's output, as numbers."""
    found = list(RESULT_LINE.finditer(output))
    if not found:
        return None
    m = found[-1]
    return {k: int(v) for k, v in m.groupdict().items() if v is not None}


def first_error_line(output: str) -> str:
    m = ERROR_LINE.search(output)
    return m.group(1).strip() if m else ""


def read_stats(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def feedback(stats: dict[str, Any], cycles: int | None, macs: int | None, trials: int = 1) -> dict[str, Any]:
    """Hardware feedback for the plan prompt: utilization, scratchpad/accumulator use, instruction mix.
    The model's counters cover the whole run; the harness runs the kernel `trials` times, identically,
    so per-kernel figures are the totals divided by `trials`."""
    fb: dict[str, Any] = {}
    trials = max(1, trials)
    dim = int(stats.get("dim") or DIM)
    useful = macs if macs else stats.get("macs")
    if cycles:
        fb["cycles"] = cycles
    if useful and cycles:
        fb["macs"] = int(useful)
        fb["utilization"] = round(float(useful) / (dim * dim) / float(cycles), 4)
    for src, dst in (("spad_kib_used", "spad_kb_used"), ("spad_kib_total", "spad_kb_total"),
                     ("acc_kib_used", "acc_kb_used"), ("acc_kib_total", "acc_kb_total")):
        if isinstance(stats.get(src), (int, float)):
            fb[dst] = float(stats[src])
    if isinstance(stats.get("instructions"), dict):
        fb["instructions"] = {k: int(v) // trials for k, v in stats["instructions"].items()}
    if stats.get("dram_read_bytes") is not None:
        fb["dma_bytes"] = (f"{int(stats.get('dram_read_bytes', 0)) // trials} read, "
                           f"{int(stats.get('dram_write_bytes', 0)) // trials} written")
    busy = stats.get("busy_cycles")
    if isinstance(busy, dict) and cycles:
        fb["stall"] = ", ".join(f"{unit} unit busy {int(v) / trials / cycles:.0%}" for unit, v in busy.items())
    return fb


@lru_cache(maxsize=8)
def compiler_version(cc: str) -> str:
    path = shutil.which(cc)
    if not path:
        return f"{cc} (not found)"
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return cc
    return out.splitlines()[0].strip() if out else cc


def receipt(backend: str, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"backend": backend}
    data.update({k: v for k, v in fields.items() if v is not None})
    data.setdefault("statistic", "deterministic model: one run, no spread")
    data["date"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return data


def build_failed(build: ProcResult, timeout: float) -> Evaluation:
    if build.timed_out:
        return timeout_evaluation("the build", timeout, build.output)
    first = compile_error_line(build.output)
    return Evaluation(status=COMPILE_ERROR, message=f"compile error: {first}" if first else "compile error",
                      log=build.output)


UNDEFINED_REFERENCE = re.compile(r"undefined reference to [`'](\w+)'")
ARITY_ERROR = re.compile(r"too (many|few) arguments to function|passed \d+ arguments, but takes")


# Our headers pick a library function's form by its argument count (gemmini.h: GEMMINI_BY_ARITY); a count no
# known version had expands to NAME_with_<count>_args, which the compiler then reports as an unknown function.
ARITY_FORM = re.compile(r"\b(\w+?)_with_(\d+)_args\b")
INCLUDE_DIR = Path(__file__).resolve().parents[1] / "include"


@lru_cache(maxsize=1)
def known_arities() -> dict[str, tuple[int, ...]]:
    """Each argument-count-dispatched name of our Gemmini headers, with the counts it has a form for."""
    forms: dict[str, set[int]] = {}
    for header in sorted(INCLUDE_DIR.glob("*.h")):
        for name, count in re.findall(r"#define\s+(\w+?)_with_(\d+)_args\b", header.read_text()):
            forms.setdefault(name, set()).add(int(count))
    return {name: tuple(sorted(counts)) for name, counts in forms.items()}


def unknown_arity(output: str) -> str:
    """What to say when the program calls one of those names with a count no known version had ('' if not)."""
    forms = known_arities()
    for match in ARITY_FORM.finditer(output):
        name, count = match.group(1), int(match.group(2))
        counts = forms.get(name)
        if counts is None or count in counts:
            continue
        known = ", ".join(str(n) for n in counts[:-1]) + (" or " if len(counts) > 1 else "") + str(counts[-1])
        return (f"{name} is called with {count} arguments, a form no gemmini-rocc-tests version that speedpatch's "
                f"headers follow has (they take {known}): the program is written against another version or a "
                f"fork of the library; give that checkout with --include-dir, or call one of the known forms")
    return ""


def compile_error_line(output: str) -> str:
    """The line that says what is wrong: a library call with an argument count no known version had, else
    the compiler's first error, else the first name the linker could not find (a function the program calls
    that neither it nor the headers define; the linker's own last line, 'ld returned 1 exit status', says
    nothing), else the first line that mentions an error."""
    wrong_count = unknown_arity(output)
    if wrong_count:
        return wrong_count
    lines = output.splitlines()
    errors = [ln for ln in lines if (": error:" in ln or ": fatal error:" in ln) and not ln.lstrip().startswith("collect2:")]
    # A call written for another version of the library fails on its argument count first of all; gcc may
    # report a type mismatch of some argument before that, which hides the cause.
    arity = [ln for ln in errors if ARITY_ERROR.search(ln)]
    error = (arity or errors or [""])[0]
    if error:
        return error.strip()
    missing = UNDEFINED_REFERENCE.search(output)
    if missing:
        return (f"undefined reference to {missing.group(1)}: neither the program nor the Gemmini headers define "
                "it")
    return next((ln for ln in lines if "error" in ln), "").strip()


def uses_harness(source: str) -> bool:
    """Whether a program runs its kernel through the speedpatch harness, so that its result line is
    mandatory (a kernel that exits early must not pass by its exit status)."""
    return re.search(r"\bspeedpatch_run_\w+\s*\(", source) is not None


def whole_program_figure(stats: dict[str, Any]) -> tuple[int, int | None, str]:
    """(cycles, MACs, what was timed) of a program without the speedpatch harness, from the model's own
    statistics: the regions between its own read_cycles() pairs that issued Gemmini work, else the run."""
    regions = int(stats.get("timed_regions") or 0)
    if regions:
        unfinished = int(stats.get("timed_region_unfinished_cycles") or 0)
        late = (f"; its Gemmini work was still running at the closing read_cycles() and finished {unfinished} "
                "cycles later, counted as if the program had fenced there") if unfinished else ""
        return (int(stats.get("timed_region_cycles") or 0), int(stats.get("timed_region_macs") or 0),
                f"the program's own read_cycles() pairs around its Gemmini work ({regions} region"
                f"{'s' if regions != 1 else ''}, summed{late})")
    return (int(stats.get("host_cycles_at_exit") or 0), None,
            "the whole run (no read_cycles() pair around Gemmini work)")


def whole_program_evaluation(run: ProcResult, stats: dict[str, Any], rec: dict[str, Any]) -> Evaluation:
    """A program without the speedpatch harness: the verdict is its exit status (its own checks) and the
    figure the model's cycles; nothing it prints is taken as a result."""
    if run.returncode != 0:
        error = first_error_line(run.output)
        # no exit status (None) means the process was stopped: callers report a timeout before this, and any
        # other stop is a crash, as a signal (negative status) is
        crashed = (run.returncode is None or run.returncode < 0
                   or error.startswith(("gemmini-model:", "gemmini library error")))
        if crashed:
            why = error or f"exit status {run.returncode}"
            return Evaluation(status=RUNTIME_ERROR, message=f"runtime error: {why}", log=run.output, receipt=rec)
        last = next((ln.strip() for ln in reversed(run.output.splitlines()) if ln.strip()), "")
        said = f"; it last printed: {last[:200]}" if last else ""  # upstream programs say what failed
        return Evaluation(status=INCORRECT,
                          message=f"the program's own checks failed (exit status {run.returncode}){said}",
                          log=run.output, receipt=rec)
    if stats and not any(int(n or 0) for n in (stats.get("instructions") or {}).values()):
        # upstream tests exit 0 at once when the configuration lacks what they test (tiled_matmul_ws_igelu.c:
        # #if !defined(HAS_NORMALIZATIONS) exit(0)); a pass with a figure would claim a measurement
        return Evaluation(status=RUNTIME_ERROR,
                          message="the program exited 0 without issuing a single Gemmini instruction, so nothing "
                                  "was measured (upstream tests skip themselves like this when the configuration "
                                  "lacks a feature they test)", log=run.output, receipt=rec)
    cycles, macs, region = whole_program_figure(stats)
    if not cycles:
        return Evaluation(status=RUNTIME_ERROR, message="the program exited 0 but the model recorded no cycles",
                          log=run.output, receipt=rec)
    dim = int(stats.get("dim") or DIM)
    bound = -(-int(macs or 0) // (dim * dim))
    if cycles < bound:
        # the array cannot do more than dim*dim MACs a cycle: a figure below that is no measurement of the work
        # (a region already runs until its work has finished, so the model's clock was moved back by a kernel
        # sharing the program's memory)
        return Evaluation(status=REJECTED, log=run.output, receipt=rec,
                          message=f"{cycles} cycles is below the array's bound for the {macs} MACs the model counted in "
                                  f"{region} ({bound} cycles on a {dim}x{dim} array): the figure is not a measurement "
                                  "of that work (a kernel may not move the model's clock)")
    rec = dict(rec, checks="the program's own (exit status 0); whole-program mode, no speedpatch harness",
               timed_region=region)
    return Evaluation(status=OK, value=float(cycles), unit="cycles",
                      message=f"exit status 0, {cycles} cycles ({region})", log=run.output,
                      feedback=feedback(stats, cycles, macs), receipt=rec)


def run_to_evaluation(run: ProcResult, timeout: float, stats: dict[str, Any], rec: dict[str, Any],
                      whole_program_fallback: bool = False) -> Evaluation:
    """Status from exit status + result line; value = the harness's cycles. whole_program_fallback: the
    program has no speedpatch harness, so it is judged as a whole program (whole_program_evaluation)."""
    if run.timed_out:
        ev = timeout_evaluation("the program", timeout, run.output)
        ev.receipt = rec
        return ev
    if whole_program_fallback:
        return whole_program_evaluation(run, stats, rec)
    printed = run.output.count(RESULT_MARK)
    if printed > 1:
        # The harness prints one. Red-team (gemmini-command): a kernel that printed "speedpatch: correct=1
        # cycles=1 " without a line end had the harness's own line appended to it, so the line that began with
        # the kernel's text was the verdict: "correct, 1 cycles" for the library call's 14,586.
        return Evaluation(status=REJECTED, log=run.output, receipt=rec,
                          message=f"the output holds {printed} speedpatch result lines (the harness prints one): "
                                  "something besides the harness printed a verdict")
    result = parse_result(run.output)
    error = first_error_line(run.output)
    if result is not None and result.get("correct") == 0:
        return Evaluation(status=INCORRECT, message=error or "output differs from the CPU reference",
                          log=run.output, receipt=rec)
    if run.returncode != 0:
        why = error or f"exit status {run.returncode}"
        return Evaluation(status=RUNTIME_ERROR, message=f"runtime error: {why}", log=run.output, receipt=rec)
    if result is None:
        return Evaluation(status=RUNTIME_ERROR, message="the program printed no speedpatch result line",
                          log=run.output, receipt=rec)
    cycles = result["cycles"]
    rec = dict(rec, trials=result.get("trials"), timed_region="harness: flush+fence, read_cycles, kernel, fence")
    return Evaluation(status=OK, value=float(cycles), unit="cycles", message=f"correct, {cycles} cycles",
                      log=run.output, feedback=feedback(stats, cycles, result.get("macs"), result.get("trials", 1)),
                      receipt=rec)
