"""Read the harness's one JSON result line and turn it into an Evaluation with its receipt."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

from speedpatch.model import INCORRECT, INFRA_ERROR, OK, REJECTED, RUNTIME_ERROR, Evaluation
from speedpatch.targets.cuda import physics

RESULT_LINE = re.compile(r"^SPEEDPATCH_RESULT (\{.*\})\s*$", re.MULTILINE)
SUSPICIOUS_SPEEDUP = 10.0  # the field's experience: larger claims are usually measurement bugs

STATUS = {
    "ok": OK,
    "incorrect": INCORRECT,
    "baseline_incorrect": INCORRECT,
    "runtime_error": RUNTIME_ERROR,
    "rejected": REJECTED,
    "no_device": INFRA_ERROR,
    "bad_problem": INFRA_ERROR,
}


def parse_result(output: str) -> dict[str, Any] | None:
    """The last result line in the program output, or None when there is none (a crash)."""
    found = RESULT_LINE.findall(output)
    if not found:
        return None
    try:
        data = json.loads(found[-1])
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _speedup_verdict(speedup: dict[str, Any]) -> str:
    low, high, median = speedup.get("low"), speedup.get("high"), speedup.get("median")
    if low is None or high is None or median is None:
        return "unknown"
    if low <= 1.0 <= high:
        return "no measurable difference"
    if median > SUSPICIOUS_SPEEDUP:
        return f"suspicious: over {SUSPICIOUS_SPEEDUP:.0f}x, review before trusting"
    return "faster" if low > 1.0 else "slower"


def to_evaluation(data: dict[str, Any] | None, output: str, receipt_base: dict[str, Any], no_device_hint: str = "",
                  precision: str = "fp32") -> Evaluation:
    if data is None:
        return Evaluation(status=RUNTIME_ERROR, message="the program crashed or printed no result line", log=output)
    status = STATUS.get(str(data.get("status")), RUNTIME_ERROR)
    message = str(data.get("message", ""))
    if data.get("status") == "baseline_incorrect":
        message = "the baseline (initial code) is incorrect: " + message
    if data.get("status") == "no_device" and no_device_hint:
        message = f"{message}; {no_device_hint}"
    if status != OK:
        return Evaluation(status=status, message=message, log=output)
    cand = data.get("candidate_ms") or {}
    base = data.get("baseline_ms") or {}
    speedup = data.get("speedup") or {}
    median = cand.get("median")
    if median is None or median <= 0:
        return Evaluation(status=RUNTIME_ERROR, message="the harness reported no timing", log=output)
    impossible = physics.violation(data, precision)
    if impossible:  # faster than the hardware allows: never a speedup
        return Evaluation(status=REJECTED, message=impossible, log=output,
                          feedback={"median_ms": median, "physics": impossible})
    low, high = cand.get("low"), cand.get("high")
    spread = (high - low) / 2 / median if low is not None and high is not None else None
    device = data.get("device") or {}
    feedback: dict[str, Any] = {
        "median_ms": median,
        "baseline_median_ms": base.get("median"),
        "speedup_vs_baseline": speedup.get("median"),
        "speedup_ci": [speedup.get("low"), speedup.get("high")],
        "verdict": _speedup_verdict(speedup),
        "element": data.get("element", "fp32"),  # buffers' type (harnesses from before fp16/bf16: fp32)
    }
    if (data.get("reference_ms") or {}).get("median") is not None:
        feedback["pytorch_reference_ms"] = data["reference_ms"]["median"]
    if data.get("achieved_gflops") is not None:
        feedback["achieved_gflops"] = data["achieved_gflops"]
        feedback["peak_gflops_fp32"] = device.get("peak_gflops_fp32")
    if data.get("achieved_gbps") is not None:
        feedback["achieved_gbps"] = data["achieved_gbps"]
        feedback["peak_gbps"] = device.get("peak_gbps")
    receipt = dict(receipt_base)
    receipt.update(
        {
            "device": device,
            "inputs": {"problem": data.get("problem"), "shapes": data.get("shapes"), "seeds": data.get("seeds"),
                       "first_seed": data.get("seed0"), "element": feedback["element"],
                       "element_bytes": data.get("element_bytes", 4)},
            "tolerance": {"rtol": data.get("rtol"), "atol": data.get("atol")},
            "warmups": data.get("warmup"),
            "trials": data.get("trials"),
            "statistic": "median of CUDA-event times; baseline and candidate alternated in one process; "
            f"L2 flushed before every trial ({data.get('flush_bytes')} bytes written); output re-checked after timing",
            "ci": {"low_ms": low, "high_ms": high, "coverage": cand.get("coverage"), "method": "order statistics"},
            "baseline_ms": base,
            "speedup": speedup,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
    )
    return Evaluation(status=OK, value=float(median), unit="ms", message=message, log=output, feedback=feedback,
                      receipt=receipt, spread=spread)
