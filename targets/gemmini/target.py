"""The Gemmini target: C kernels written against the Gemmini programming interface.

A kernel is a function (other than main) that calls the Gemmini API: gemmini_* instructions and loops,
tiled_matmul*, tiled_conv*. A file is runnable when it also has main() (usually the speedpatch harness
from speedpatch_harness.h, see examples/gemmini/).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from speedpatch.model import Evaluation, Kernel
from speedpatch.targets import cfamily
from speedpatch.targets.base import Backend, Move, Target
from speedpatch.targets.gemmini import checks, csource, moves
from speedpatch.targets.gemmini.backends.common import uses_harness

INCLUDE = Path(__file__).resolve().parent / "include"  # the trusted headers problems include
NO_MAIN = (
    "no main() in this file, so there is nothing to run: add the speedpatch harness "
    "(#include \"include/speedpatch_harness.h\" and a main() calling speedpatch_run_matmul/"
    "speedpatch_run_conv, see examples/gemmini/)"
)
# riscv-tests' crt calls thread_entry(core id, cores) on every core; a program defining it runs on several
NO_MAIN_THREADS = (
    "no main(): this file's entry point is thread_entry(), which riscv-tests' start-up code calls on every core "
    "of a multi-core SoC; the Gemmini model runs one core with one accelerator, so it cannot run this program "
    "(keep the single-core work in a main(), or add the speedpatch harness, see examples/gemmini/)"
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
    title = "Gemmini"
    fence_language = "c"
    extensions = (".c", ".h")
    language_ids = ("c", "cpp")  # VS Code opens .h files as "cpp"
    default_backend = "gemmini-native"
    kernel_hint = ("a C function that issues Gemmini work: gemmini_* or mvin/preload/compute instructions, or "
                   "tiled_matmul*/tiled_conv* calls; see examples/gemmini/")

    def find_kernels(self, text: str, path: str = "") -> list[Kernel]:
        try:
            fns = csource.functions(text)
        except Exception:  # tree-sitter on pathological input: not a kernel file
            return []
        # main() may be where the parser gives up (upstream programs split braces across #ifdef branches)
        has_main = any(f.name == "main" for f in fns) or any(
            f.name == "main" for f in csource.functions(text, first_branches=True))
        no_main = NO_MAIN_THREADS if any(f.name == "thread_entry" for f in fns) else NO_MAIN
        kernels = []
        for fn in fns:
            if fn.name == "main" or not csource.calls_gemmini(fn) or csource.is_instruction_wrapper(fn):
                continue
            kernels.append(Kernel(
                name=fn.name, target=self.name, start=fn.start, end=fn.end, start_line=fn.start_line,
                end_line=fn.end_line, signature_line=fn.signature_line, text=fn.text,
                runnable=has_main, reason="" if has_main else no_main,
            ))
        return kernels

    def whole_program_kernel(self, text: str, path: str = "") -> Kernel | None:
        """main() as a run-only kernel, for a program whose main() uses Gemmini and that does not run its
        kernels through the speedpatch harness (upstream test programs: their helper functions issue
        Gemmini work too, e.g. test_os/test_ws, but the program checks itself as a whole); None otherwise.
        Runnable (it can be evaluated) with a reason (it cannot be optimized)."""
        try:
            # upstream programs split braces across #ifdef branches: read each #if's first branch if need be
            fns = csource.functions(text, first_branches=True)
        except Exception:
            return None
        mains = [f for f in fns if f.name == "main"]
        if len(mains) != 1 or not csource.calls_gemmini(mains[0]) or uses_harness(text):
            return None
        fn = mains[0]
        return Kernel(name=fn.name, target=self.name, start=fn.start, end=fn.end, start_line=fn.start_line,
                      end_line=fn.end_line, signature_line=fn.signature_line, text=fn.text, runnable=True,
                      reason=WHOLE_PROGRAM)

    def backends(self) -> list[Backend]:
        from speedpatch.targets.gemmini.backends.command import CommandBackend
        from speedpatch.targets.gemmini.backends.native import NativeBackend
        from speedpatch.targets.gemmini.backends.spike import SpikeBackend

        return [NativeBackend(), SpikeBackend(), CommandBackend()]

    def extract_kernel(self, code: str, kernel: Kernel, problem_names: frozenset[str] = frozenset()) -> str:
        """The kernel function from an LLM code block, with the helper functions, macros and declarations
        of the block that it uses (transitively); never main(), an #include, or a definition of a problem
        name (the trusted file has those: a reply's `#define MAT_DIM_I 32` is dropped, not obeyed). A
        block without the kernel is used as is (the compiler or the static check will say what is wrong)."""
        items = cfamily.items(code)
        if not any(kernel.name in item.names for item in items):
            return code
        allowed = [item for item in items if item.kind not in ("include", "comment", "other") and (
            kernel.name in item.names or not item.names & (problem_names | {"main"}))]
        kept = cfamily.used_items(allowed, {kernel.name})
        return "\n\n".join(item.text.rstrip() for item in kept)

    def splice(self, text: str, kernel: Kernel, new_code: str) -> str:
        """The kernel region replaced by new_code; helpers of the old region that new_code still uses but
        does not define stay (a reply may send the kernel alone after an earlier step added helpers)."""
        region_items = [item for item in cfamily.items(text[kernel.start : kernel.end])
                        if item.kind not in ("include", "comment")]
        new_names = {name for item in cfamily.items(new_code) for name in item.names}
        needed = [item for item in cfamily.used_items(region_items, cfamily.words(new_code) - new_names)
                  if not item.names & new_names]
        if needed:
            new_code = "\n\n".join(item.text.rstrip() for item in needed) + "\n\n" + new_code.lstrip("\n")
        return super().splice(text, kernel, new_code)

    harness_prefixes = ("speedpatch_", "SPEEDPATCH_", "gemmini_model_")

    def defined_names(self, code: str, kernel: Kernel) -> set[str]:
        return cfamily.touched_names(code, cfamily.C)

    def used_names(self, code: str, kernel: Kernel) -> set[str]:
        """Every identifier and keyword of the code around the kernel: main() comes after the region, so a
        macro the region defines (even `#define true 0`) would rewrite it."""
        return cfamily.tokens(code, cfamily.C)

    def harness_names(self, kernel: Kernel) -> set[str]:
        """main and every name the shipped headers (gemmini.h, speedpatch_harness.h...) define."""
        return {"main"} | set(cfamily.header_names(str(INCLUDE), cfamily.C))

    def region_problems(self, region: str, kernel: Kernel, path: str = "") -> list[str]:
        """Includes are the problem file's: the kernel region adds none (not even inside the kernel), in any
        spelling gcc reads (`#import`, `#include_next`, `%:include`, after a splice or a form feed)."""
        return [f"the kernel region has `{include.line}`: includes come from the problem file, the kernel adds none"
                for include in cfamily.file_reads(region, cpp=False)]

    def syntax_error(self, code: str, kernel: Kernel) -> str:
        return cfamily.syntax_error(code, cfamily.C)

    def static_check(self, source: str, kernel: Kernel) -> list[str]:
        if kernel.reason == WHOLE_PROGRAM:  # the program as it is, or nothing
            mains = [f for f in csource.functions(source, first_branches=True) if f.name == "main"]
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
