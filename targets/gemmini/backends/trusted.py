"""gemmini-native's trusted evaluation: the trusted side owns the inputs, the gold result, the clock and
the verdict (docs/threat-model.md, "Gemmini").

- The candidate is only its kernel region: the file must be the trusted problem with that region
  replaced (split_candidate); build.build_trusted compiles the region as its own translation unit and
  refuses an object that links or executes anything a kernel has no business with.
- The seed (random per evaluation), the trial count and a nonce reach the harness on its stdin, read
  whole before any kernel runs; the harness writes its verdict, with the model's own counters for the
  timed region, to the result pipe the sandbox opens for it (sandbox.run_process(result_channel=True)).
  What the program prints is only a log.
- Work and physics: a verdict whose array did less than the problem's multiply-accumulates, or whose
  cycles beat the array's or the DRAM's peak rate, is refused with the numbers.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from speedpatch.model import INCORRECT, OK, REJECTED, RUNTIME_ERROR, Evaluation, Kernel
from speedpatch.targets.base import ProcResult, run_process, timeout_evaluation
from speedpatch.targets.gemmini.backends import common

TRIALS = 2
TAMPERING = re.compile(r"^gemmini-model: error: tampering: .*$", re.MULTILINE)
HEAD = re.compile(r"^speedpatch-verdict nonce=(?P<nonce>\S+) correct=(?P<correct>[01]) cycles=(?P<cycles>\d+) "
                  r"trials=(?P<trials>\d+) required_macs=(?P<required_macs>\d+) min_read_bytes=(?P<min_read>\d+) "
                  r"min_write_bytes=(?P<min_write>\d+) why=(?P<why>.*)$", re.MULTILINE)
PROBLEM = re.compile(r"^speedpatch-problem required_macs=(\d+) min_read_bytes=(\d+) min_write_bytes=(\d+)$",
                     re.MULTILINE)
TRIAL = re.compile(r"^trial (?P<t>\d+) correct=(?P<correct>[01]) seed=(?P<seed>\d+) cycles=(?P<cycles>\d+) harness_cycles=(?P<harness>\d+) "
                   r"array_macs=(?P<macs>\d+) dram_read=(?P<read>\d+) dram_write=(?P<write>\d+) "
                   r"host_cycles=(?P<host>\d+) rocc=(?P<rocc>\d+) dim=(?P<dim>\d+) dram_bpc=(?P<bpc>\d+)$", re.MULTILINE)


@dataclass(frozen=True)
class Split:
    prefix: str  # the trusted preamble: includes, constants, helpers before the kernel
    region: str  # the candidate's kernel region
    suffix: str  # the trusted rest: main() and the harness call
    declaration: str  # the original kernel's prototype


def _first_difference(a: str, b: str) -> int:
    """1-based line of the first difference between two texts."""
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return a.count("\n", 0, n) + 1


def split_candidate(source: str, original: str, kernel: Kernel) -> Split | str:
    """The candidate's kernel region between the original file's preamble and rest, or why there is none.
    `kernel` locates the region in `original` (when `original` is the candidate itself, its kernel)."""
    from speedpatch.targets.gemmini import build, csource

    if original[kernel.start:kernel.end] == kernel.text:
        start, end = kernel.start, kernel.end
    else:  # the kernel as found in this text
        found = [f for f in csource.functions(original) if f.name == kernel.name]
        if not found:
            return f"the trusted problem file has no kernel {kernel.name}()"
        start, end = found[0].start, found[0].end
    prefix, suffix = original[:start], original[end:]
    declaration = build.kernel_declaration(original[start:end])
    if not declaration:
        return f"cannot read the prototype of {kernel.name}() in the trusted problem file"
    if not source.startswith(prefix):
        line = _first_difference(source, prefix)
        return (f"the candidate changes the trusted problem before the kernel region (line {line}): only the kernel "
                f"{kernel.name}() and its helpers may change")
    if not source.endswith(suffix) or len(source) < len(prefix) + len(suffix):
        tail = source[len(source) - len(suffix):] if len(source) >= len(suffix) else source
        line = original.count("\n", 0, end) + _first_difference(tail, suffix)
        return (f"the candidate changes the trusted problem after the kernel region (near line {line} of the original): "
                f"main() and the harness call are not part of the kernel")
    return Split(prefix, source[len(prefix):len(source) - len(suffix)], suffix, declaration)


@dataclass(frozen=True)
class Secret:
    nonce: str
    seed: int
    trials: int

    @staticmethod
    def new(trials: int = TRIALS) -> Secret:
        return Secret(secrets.token_hex(16), secrets.randbits(62) + 1, trials)

    def text(self) -> str:
        return f"speedpatch-secret nonce={self.nonce} seed={self.seed} trials={self.trials}\n"


def run_with_channel(exe: Path, workdir: Path, timeout: float, stats_path: Path,
                     secret: Secret) -> tuple[ProcResult, str]:
    """Run the trusted build: the secret on its stdin, the verdict back through the sandbox's result pipe.
    Returns the run (its output is a log) and what the harness wrote to the pipe."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPEEDPATCH_SEED", "SPEEDPATCH_TRIALS",
                                                             "GEMMINI_MODEL_BLOCKS")}
    env["GEMMINI_MODEL_STATS"] = str(stats_path)
    run = run_process([str(Path(exe).resolve())], cwd=Path(workdir), timeout=timeout, env=env,
                      input_text=secret.text(), result_channel=True)
    return run, run.result or ""


def physics_problems(required_macs: int, min_read: int, min_write: int, trial: dict[str, int]) -> list[str]:
    """Why a trial's figures cannot be true of the hardware: less array work than the problem needs,
    or fewer cycles than the array or the DRAM could possibly take."""
    problems: list[str] = []
    cycles, dim, bpc = trial["cycles"], max(1, trial["dim"]), max(1, trial["bpc"])
    if cycles <= 0:
        problems.append("the timed region took 0 cycles")
        return problems
    if trial["macs"] < required_macs:
        problems.append(f"the systolic array did {trial['macs']} multiply-accumulates, the problem needs "
                        f"{required_macs}: the rest of the work was not done on Gemmini")
    array_bound = -(-required_macs // (dim * dim))
    if cycles < array_bound:
        problems.append(f"{cycles} cycles is below the array's bound for {required_macs} MACs on a {dim}x{dim} array "
                        f"({array_bound} cycles)")
    for what, need, moved in (("read", min_read, trial["read"]), ("written", min_write, trial["write"])):
        if moved < need:
            problems.append(f"the accelerator {what} {moved} bytes of DRAM, the problem's "
                            f"{'inputs' if what == 'read' else 'output'} are {need} bytes: the data did not all "
                            "pass through Gemmini")
        bound = -(-need // bpc)
        if cycles < bound:
            problems.append(f"{cycles} cycles is below the DRAM bound: at least {need} bytes must be {what} at "
                            f"{bpc} bytes/cycle ({bound} cycles)")
    return problems


def fnv1a64(text: str) -> int:
    h = 0xCBF29CE484222325
    for byte in text.encode("utf-8", "surrogateescape"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def model_vouches(verdict_text: str, stats: dict[str, Any]) -> str:
    """Why the model's statistics do not confirm this verdict text ("" when they do): the harness hands
    its verdict to the model before writing it, so a verdict forged on the pipe by a program that then
    exits has no match."""
    if int(stats.get("verdicts") or 0) != 1:
        return (f"the model saw {int(stats.get('verdicts') or 0)} verdicts from the harness, not 1: the verdict on the "
                "result channel was not the harness's")
    if str(stats.get("verdict_fnv1a64", "")) != f"{fnv1a64(verdict_text):016x}":
        return "the verdict on the result channel differs from the one the harness gave the model"
    return ""


# The harness's trial record, field by field, against the model's own log of each region (guard.c).
RECORD_FIELDS = (("cycles", "cycles"), ("macs", "array MACs"), ("read", "DRAM bytes read"),
                 ("write", "DRAM bytes written"), ("host", "host cycles"), ("rocc", "RoCC instructions"))


def model_record_problems(trials: list[dict[str, int]], stats: dict[str, Any]) -> list[str]:
    """Where the harness's per-trial figures differ from the model's own record of the timed regions.
    The harness builds its record on its stack while the kernel runs its later trials, so a kernel can find
    trial 0's line by its text and rewrite its cycles; the model's log is sealed and written by the model."""
    logged = int(stats.get("harness_regions") or 0)
    figures = stats.get("harness_region_figures") or []
    if logged != len(trials) or len(figures) != len(trials):
        return [f"the model measured {logged} timed regions, the harness reports {len(trials)} trials: the kernel "
                "changed the harness's loop or record"]
    problems: list[str] = []
    for t, measured in zip(trials, figures, strict=True):
        for (key, what), value in zip(RECORD_FIELDS, measured, strict=False):
            if t[key] != int(value):
                problems.append(f"trial {t['t']}: the harness's record says {t[key]} {what}, the model measured "
                                f"{int(value)}: the kernel rewrote the harness's record")
    return problems


def evaluation(run: ProcResult, record: str, secret: Secret, timeout: float, stats: dict[str, Any],
               rec: dict[str, Any]) -> Evaluation:
    """The Evaluation from the harness's verdict in the channel; the program's output is only its log."""
    if run.timed_out:
        ev = timeout_evaluation("the program", timeout, run.output)
        ev.receipt = rec
        return ev
    tampered = TAMPERING.search(run.output)
    if tampered and run.returncode == 4:
        return Evaluation(status=REJECTED, message=tampered.group(0).removeprefix("gemmini-model: error: "),
                          log=run.output, receipt=rec)
    head = HEAD.search(record)
    error = common.first_error_line(run.output)
    if head is None:
        if run.returncode not in (0, None) and error:
            return Evaluation(status=RUNTIME_ERROR, message=f"runtime error: {error}", log=run.output, receipt=rec)
        why = f"exit status {run.returncode}" if run.returncode else "the program ended without returning from the kernel"
        return Evaluation(status=RUNTIME_ERROR, log=run.output, receipt=rec,
                          message=f"the trusted harness reported no verdict (no speedpatch result line): {why}")
    if head["nonce"] != secret.nonce:
        return Evaluation(status=REJECTED, message="the verdict does not carry this evaluation's nonce: it was not "
                          "written by the harness", log=run.output, receipt=rec)
    if len(HEAD.findall(record)) != 1 or len(PROBLEM.findall(record)) != 1:
        return Evaluation(status=REJECTED, message="more than one verdict on the result channel: something besides "
                          "the harness wrote to it", log=run.output, receipt=rec)
    vouched = model_vouches(record[head.start():], stats)
    if vouched and run.returncode == 0:
        return Evaluation(status=REJECTED, message=vouched, log=run.output, receipt=rec)
    problem = PROBLEM.search(record)
    required, min_read, min_write = int(head["required_macs"]), int(head["min_read"]), int(head["min_write"])
    if problem is None or tuple(int(x) for x in problem.groups()) != (required, min_read, min_write):
        before = problem.group(1) if problem else "none"
        return Evaluation(status=REJECTED, log=run.output, receipt=rec,
                          message=f"the problem's size changed while the kernel ran ({before} MACs before, "
                                  f"{required} after): the kernel wrote into the harness's memory")
    if head["correct"] == "0":
        why = error if error.startswith("gemmini") else head["why"].strip() or error
        msg = f"mismatch: {why}" if why and not why.startswith(("gemmini", "speedpatch")) else why
        return Evaluation(status=INCORRECT, message=msg or "output differs from the CPU reference", log=run.output,
                          receipt=rec)
    if run.returncode != 0:
        why = error or f"exit status {run.returncode}"
        return Evaluation(status=RUNTIME_ERROR, message=f"runtime error after the verdict: {why}", log=run.output,
                          receipt=rec)
    trials = [{k: int(v) for k, v in m.groupdict().items()} for m in TRIAL.finditer(record)]
    if int(head["trials"]) != secret.trials or len(trials) != secret.trials:
        return Evaluation(status=REJECTED, log=run.output, receipt=rec,
                          message=f"the harness ran {len(trials)} of {secret.trials} trials: the kernel changed its loop")
    problems: list[str] = model_record_problems(trials, stats)
    for t in trials:
        if t["seed"] != secret.seed + t["t"]:
            problems.append(f"trial {t['t']}: the result was checked against inputs from seed {t['seed']}, not this "
                            "evaluation's: the kernel wrote into the harness's memory")
        if t["harness"] != t["cycles"]:
            problems.append(f"trial {t['t']}: the harness measured {t['harness']} cycles and the model {t['cycles']}: "
                            "the kernel changed the harness's clock")
        problems += [f"trial {t['t']}: {p}" for p in physics_problems(required, min_read, min_write, t)]
    cycles = int(head["cycles"])
    if cycles != trials[0]["cycles"]:
        problems.append(f"the verdict says {cycles} cycles, the model measured {trials[0]['cycles']}")
    if problems:
        return Evaluation(status=REJECTED, message="; ".join(dict.fromkeys(problems)), log=run.output, receipt=rec)
    first = trials[0]
    rec = dict(rec, trials=secret.trials, timed_region="harness: flush+fence, read_cycles, kernel, fence; cycles and "
               "work from the model's counters for that region",
               work=f"{first['macs']} array MACs (the problem needs {required}), {first['read']} DMA bytes read, "
                    f"{first['write']} written")
    fb = common.feedback(stats, cycles, required, secret.trials)
    fb["array_macs"] = first["macs"]
    fb["host_cycles"] = first["host"]
    return Evaluation(status=OK, value=float(cycles), unit="cycles", message=f"correct, {cycles} cycles",
                      log=run.output, feedback=fb, receipt=rec)
