"""Hardware feedback for the plan prompt, from an Evaluation's feedback and receipt."""

from __future__ import annotations

from typing import Any

from speedpatch.model import Evaluation


def _pct(value: Any, peak: Any, name: str = "peak") -> str:
    try:
        return f" ({100.0 * float(value) / float(peak):.1f}% of the {float(peak):.0f} {name})" if float(peak) > 0 else ""
    except (TypeError, ValueError):
        return ""


def _kernel_lines(name: str, info: dict[str, Any]) -> list[str]:
    lines = [f"- kernel {name}: {info.get('registers')} registers/thread, {info.get('shared_bytes_static')} B static "
             f"shared memory, spills {info.get('spill_stores_bytes')} B stored / {info.get('spill_loads_bytes')} B loaded"]
    occ = info.get("occupancy") or {}
    if "occupancy" in occ:
        lines.append(f"  theoretical occupancy on {occ['arch']}: {100 * occ['occupancy']:.0f}% "
                     f"({occ['warps_per_sm']}/{occ['max_warps_per_sm']} warps, {occ['blocks_per_sm']} blocks of "
                     f"{occ['threads_per_block']} threads per SM, limited by {occ['limited_by']})")
    elif occ.get("error"):
        lines.append(f"  occupancy: {occ['error']}")
    sass = info.get("sass") or {}
    if sass:
        mix = ", ".join(f"{k} {v}" for k, v in list(sass.get("by_category", {}).items())[:6])
        lines.append(f"  SASS: {sass.get('instructions')} instructions ({mix})")
    return lines


def feedback_text(evaluation: Evaluation) -> str:
    fb = evaluation.feedback or {}
    receipt = evaluation.receipt or {}
    lines: list[str] = []
    if evaluation.value is not None and fb.get("median_ms") is not None:
        device = (receipt.get("device") or {}).get("name", "the GPU")
        ci = receipt.get("ci") or {}
        lines.append(f"- measured on {device}: median {fb['median_ms']:.4g} ms (95% CI {ci.get('low_ms')}"
                     f"-{ci.get('high_ms')} ms), baseline {fb.get('baseline_median_ms')} ms")
        speedup = fb.get("speedup_vs_baseline")
        if speedup is not None:
            low, high = (fb.get("speedup_ci") or [None, None])[:2]
            lines.append(f"- speedup vs baseline: {speedup:.3g}x (CI {low}-{high}): {fb.get('verdict')}")
        if fb.get("achieved_gflops") is not None:
            # The device peak is the fp32 FMA rate; fp16/bf16 problems may go past it on tensor cores.
            element = fb.get("element", "fp32")
            on = "" if element == "fp32" else f" on {element} buffers"
            lines.append(f"- achieved {fb['achieved_gflops']:.1f} GFLOP/s{on}"
                         + _pct(fb["achieved_gflops"], fb.get("peak_gflops_fp32"), "fp32 FMA peak"))
        if fb.get("achieved_gbps") is not None:
            lines.append(f"- achieved {fb['achieved_gbps']:.1f} GB/s DRAM" + _pct(fb["achieved_gbps"], fb.get("peak_gbps")))
    for name, info in (fb.get("kernels") or {}).items():
        if isinstance(info, dict):
            lines.extend(_kernel_lines(name, info))
    if fb.get("timed") is False:
        lines.append("- not timed (compile-only backend): judge by registers, spills and occupancy")
    if fb.get("sass") and isinstance(fb["sass"], str):
        lines.append(f"- {fb['sass']}")
    for finding in fb.get("guard_findings") or []:
        lines.append(f"- rejected at line {finding['line'] + 1}: {finding['message']}")
    return "\n".join(lines)
