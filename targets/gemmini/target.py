"""The Gemmini target: C kernels written against the Gemmini programming interface.

A kernel is a function (other than main) that calls the Gemmini API: gemmini_* instructions and loops,
tiled_matmul*, tiled_conv*. A file is runnable when it also has main() (usually the speedpatch harness
from speedpatch_harness.h, see examples/gemmini/).
"""

from __future__ import annotations

import re
from typing import Any

from speedpatch.model import Evaluation, Kernel
from speedpatch.targets.base import Backend, Move, Target
from speedpatch.targets.gemmini import checks, csource, moves

NO_MAIN = (
    "no main() in this file, so there is nothing to run: add the speedpatch harness "
    "(#include \"include/speedpatch_harness.h\" and a main() calling speedpatch_run_matmul/"
    "speedpatch_run_conv, see examples/gemmini/)"
)


# Whole-program mode: a program that does its Gemmini work in main() itself (upstream gemmini-rocc-tests
# style) is run as it is. Its verdict is its exit status and its figure the model's cycles between its own
# read_cycles() calls; main() holds the program's checks, so it is never rewritten.
WHOLE_PROGRAM = (
    "whole program: its Gemmini work is in main(), which also holds its checks, so it can be evaluated "
    "(speedpatch evaluate) but not optimized; move the accelerator code into a function of its own to "
    "optimize it"
)
class GemminiTarget(Target):
    name = "gemmini"
    extensions = (".c", ".h")
    language_ids = ("c",)
    default_backend = "gemmini-native"

    def find_kernels(self, text: str, path: str = "") -> list[Kernel]:
        try:
            fns = csource.functions(text)
        except Exception:  # tree-sitter on pathological input: not a kernel file
            return []
        has_main = any(f.name == "main" for f in fns)
        kernels = []
        for fn in fns:
            if fn.name == "main" or not csource.calls_gemmini(fn) or csource.is_instruction_wrapper(fn):
                continue
            kernels.append(Kernel(
                name=fn.name, target=self.name, start=fn.start, end=fn.end, start_line=fn.start_line,
                end_line=fn.end_line, signature_line=fn.signature_line, text=fn.text,
                runnable=has_main, reason="" if has_main else NO_MAIN,
            ))
        return kernels

    def backends(self) -> list[Backend]:
        from speedpatch.targets.gemmini.backends.command import CommandBackend
    def whole_program_kernel(self, text: str, path: str = "") -> Kernel | None:
        """main() as a run-only kernel, for a program without kernel functions whose main() uses Gemmini;
        None otherwise. Runnable (it can be evaluated) with a reason (it cannot be optimized)."""
        try:
            fns = csource.functions(text)
        except Exception:
            return None
        mains = [f for f in fns if f.name == "main"]
        if len(mains) != 1 or not csource.calls_gemmini(mains[0]) or self.find_kernels(text, path):
            return None
        fn = mains[0]
        return Kernel(name=fn.name, target=self.name, start=fn.start, end=fn.end, start_line=fn.start_line,
                      end_line=fn.end_line, signature_line=fn.signature_line, text=fn.text, runnable=True,
                      reason=WHOLE_PROGRAM)

        from speedpatch.targets.gemmini.backends.native import NativeBackend
        from speedpatch.targets.gemmini.backends.spike import SpikeBackend

        return [NativeBackend(), SpikeBackend(), CommandBackend()]

    def extract_kernel(self, code: str, kernel: Kernel) -> str:
        """The kernel function from an LLM code block, with the helper functions and macros of the block
        that it uses (transitively); never main() or the harness. A block without the kernel is used as
        is (the compiler or the static check will say what is wrong with it)."""
        items = csource.top_level_items(code)
        fns = {name: text for kind, name, text in items if kind == "function" and name}
        if kernel.name not in fns:
            return code
        defines = {name: text for kind, name, text in items if kind == "define" and name}
        wanted: set[str] = set()
        todo = [kernel.name]
        while todo:
            name = todo.pop()
            if name in wanted or name == "main" or name.startswith("speedpatch_"):
                continue
            wanted.add(name)
            body = fns.get(name) or defines.get(name) or ""
            todo.extend(n for n in list(fns) + list(defines) if n not in wanted and _mentions(body, n))
        parts = [text for kind, name, text in items if kind in ("function", "define") and name in wanted]
        return "\n\n".join(p.rstrip() for p in parts)

    def static_check(self, source: str, kernel: Kernel) -> list[str]:
        if kernel.reason == WHOLE_PROGRAM:  # the program as it is, or nothing
            mains = [f for f in csource.functions(source) if f.name == "main"]
            if len(mains) != 1 or mains[0].text != kernel.text:
                return ["whole-program mode runs the program as it is: its main() may not be rewritten"]
            return []
        try:
            return checks.static_check(source, kernel)
        except Exception as exc:  # a guard bug must not hide the candidate's real result
            return [f"static check failed on this candidate: {exc}"]

    def offline_moves(self, source: str, kernel: Kernel) -> list[Move]:
        try:
            return moves.offline_moves(source, kernel)
        except Exception:
            return []

    def feedback_text(self, evaluation: Evaluation) -> str:
        return feedback_text(evaluation.feedback or {})


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def feedback_text(fb: dict[str, Any]) -> str:
    """A hardware-feedback paragraph for the plan prompt."""
    if not fb:
        return ""
    lines = []
    if fb.get("utilization") is not None:
        lines.append(
            f"Systolic-array utilization: {fb['utilization'] * 100:.1f}% "
            f"(useful MACs / (DIM*DIM) / cycles; {fb.get('macs', '?')} MACs in {fb.get('cycles', '?')} cycles)."
        )
    if fb.get("spad_kb_used") is not None:
        lines.append(
            f"Scratchpad used: {fb['spad_kb_used']:.1f} KB of {fb.get('spad_kb_total', 256):.0f} KB; accumulator used: "
            f"{fb.get('acc_kb_used', 0):.1f} KB of {fb.get('acc_kb_total', 64):.0f} KB."
        )
    counts = fb.get("instructions")
    if isinstance(counts, dict) and counts:
        top = ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])[:8])
        lines.append(f"Gemmini instructions issued: {top}.")
    for key, label in (("dma_bytes", "DMA bytes moved"), ("stall", "where time went")):
        if fb.get(key) is not None:
            lines.append(f"{label}: {fb[key]}.")
    return " ".join(lines)
