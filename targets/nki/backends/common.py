"""Shared by the NKI backends: running runner.py and turning its result line into an Evaluation."""

from __future__ import annotations

import json
import re
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from speedpatch.model import (
    COMPILE_ERROR,
    INCORRECT,
    INFRA_ERROR,
    OK,
    REJECTED,
    RUNTIME_ERROR,
    TIMEOUT,
    Evaluation,
)
from speedpatch.targets.base import ProcResult

RUNNER = Path(__file__).resolve().parent.parent / "runner.py"
RESULT_TAG = "SPEEDPATCH-RESULT"

_STATUS = {
    "ok": OK,
    "incorrect": INCORRECT,
    "compile_error": COMPILE_ERROR,
    "runtime_error": RUNTIME_ERROR,
    "harness_error": RUNTIME_ERROR,
    "rejected": REJECTED,
    "infra_error": INFRA_ERROR,
    "timeout": TIMEOUT,
}


def new_nonce() -> str:
    return secrets.token_hex(12)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def parse_result(output: str, nonce: str) -> dict[str, Any] | None:
    """Reassemble the runner's numbered result pieces (see runner.py)."""
    prefix = f"{RESULT_TAG} {nonce} "
    pieces: dict[int, str] = {}
    for line in output.splitlines():
        if line.startswith(prefix):
            index, _, piece = line[len(prefix) :].partition(" ")
            if index.isdigit():
                pieces[int(index)] = piece
    if not pieces or sorted(pieces) != list(range(len(pieces))):
        return None
    try:
        result = json.loads("".join(pieces[i] for i in range(len(pieces))))
    except json.JSONDecodeError:
        return None
    return result if isinstance(result, dict) else None


def program_output(output: str, nonce: str) -> str:
    """The log without the result lines."""
    return "\n".join(line for line in output.splitlines() if not line.startswith(f"{RESULT_TAG} {nonce} ")).strip()


def hang_line(output: str, candidate_name: str) -> int:
    """The candidate line in a faulthandler dump (most recent call first in each thread)."""
    pattern = re.compile(r'File "([^"]*)", line (\d+)')
    for m in pattern.finditer(output):
        if Path(m.group(1)).name == candidate_name:
            return int(m.group(2))
    return 0


def to_evaluation(proc: ProcResult, nonce: str, candidate_name: str, timeout: float, what: str) -> tuple[Evaluation, dict[str, Any]]:
    """The Evaluation (without receipt/feedback) and the raw result dict ({} when none came back)."""
    channel = getattr(proc, "result", None)  # the sandbox's result pipe, when the backend asked for one
    result = parse_result(channel if channel is not None else proc.output, nonce)
    log = program_output(proc.output, nonce)
    if result is None:
        hung = "Timeout (" in proc.output or proc.timed_out
        if hung:
            line = hang_line(proc.output, candidate_name)
            where = f" (it was at line {line})" if line else ""
            return Evaluation(status=TIMEOUT, message=f"{what} did not finish within {timeout:.0f} s{where}",
                              log=log), {}
        return Evaluation(status=RUNTIME_ERROR, message=f"{what} exited with code {proc.returncode} without a result",
                          log=log), {}
    status = _STATUS.get(result.get("status", ""), RUNTIME_ERROR)
    message = str(result.get("message", ""))
    if result.get("status") == "harness_error":
        message = f"harness error: {message}"
    if result.get("kernel_log"):  # what the isolated kernel process printed (each line prefixed)
        log = (log + "\n" + str(result["kernel_log"])).strip()
    if result.get("traceback") and status != OK:
        log = (log + "\n" + result["traceback"]).strip()
    value = result.get("value")
    return Evaluation(status=status, value=float(value) if value is not None and status == OK else None,
                      unit=str(result.get("unit", "")), message=message, log=log, seconds=proc.seconds), result
