"""Static guards for Gemmini candidates: reasons to reject a rewrite without running it.

The harness (main(), the speedpatch_run_* runners, read_cycles, the fences around the timed region) is
trusted; a candidate may only change kernel code. Known cheats on this target: touching the timer or the
harness, talking to the model directly, and moving accelerator work onto the host CPU.

These source checks are an early, cheap filter with readable messages; they go by names and can be
re-spelled. What holds is checked on the compiled kernel object (build.kernel_object_problems: what it links
and executes), by the harness's verdict channel and by the work/physics checks (backends/trusted.py).
"""

from __future__ import annotations

import re

from speedpatch.model import Kernel
from speedpatch.targets.gemmini import csource

# Names a candidate must not call from kernel code.
FORBIDDEN_CALLS = re.compile(
    r"^(read_cycles|rdcycle|speedpatch_\w+|gemmini_model_\w+|getenv|setenv|system|popen|fork|vfork|"
    r"pthread_create|thrd_create|fopen|open|dlopen|dlsym|signal|sigaction|setjmp|longjmp|atexit|exit|_exit|_Exit|"
    r"quick_exit|abort|raise|kill)$"
)
# Names a candidate must not (re)define as macros anywhere in the file.
PROTECTED_MACRO = re.compile(
    r"^\s*#\s*(?:define|undef)\s+(read_cycles|rdcycle|main|gemmini_fence|gemmini_flush|gemmini_model_\w+|"
    r"speedpatch_\w+|SPEEDPATCH_\w+|ROCC_INSTRUCTION\w*|printf|exit|memset|memcmp)\b",
    re.MULTILINE,
)
ASM = re.compile(r"\b(__asm__|__asm|asm)\b")
# The library's host fallback: tiled_matmul*/tiled_conv*(..., CPU) computes on the core, not on Gemmini.
LIBRARY_ON_CPU = re.compile(r"\btiled_(?:matmul|conv)\w*\s*\([^;]*,\s*CPU\s*\)\s*;")


def _reachable(fns: dict[str, csource.Function], root: str) -> list[csource.Function]:
    """The kernel function and every function of the file it calls, transitively (not main)."""
    seen: dict[str, csource.Function] = {}
    todo = [root]
    while todo:
        name = todo.pop()
        if name in seen or name not in fns or name == "main":
            continue
        seen[name] = fns[name]
        todo.extend(fns[name].calls)
    return list(seen.values())


def static_check(source: str, kernel: Kernel) -> list[str]:
    reasons: list[str] = []
    if not csource.looks_like_text(source):
        return ["the candidate is not a C source text"]
    fns_list = csource.functions(source)
    fns = {f.name: f for f in fns_list}
    if kernel.name not in fns:
        return [f"the candidate no longer defines the kernel {kernel.name}()"]
    if sum(1 for f in fns_list if f.name == "main") > 1:
        reasons.append("the candidate defines main() again (the harness is not part of the kernel)")
    for match in PROTECTED_MACRO.finditer(source):
        reasons.append(f"the candidate redefines the harness/timer name {match.group(1)!r}")
    kernel_fns = _reachable(fns, kernel.name)
    for fn in kernel_fns:
        bad = sorted({c for c in fn.calls if FORBIDDEN_CALLS.match(c)})
        if bad:
            reasons.append(f"{fn.name}() calls {', '.join(bad)}: kernels may not touch the timer, the harness, "
                           "the model or the environment")
        if ASM.search(fn.text):
            reasons.append(f"{fn.name}() contains inline assembly (use the gemmini_* API)")
        if LIBRARY_ON_CPU.search(fn.text) and not LIBRARY_ON_CPU.search(kernel.text):
            reasons.append(f"{fn.name}() asks the library to compute on the CPU (tiled_*(..., CPU)): accelerator "
                           "work must stay on Gemmini")
    original_uses_gemmini = any(csource.calls_gemmini(f) for f in csource.functions(kernel.text))
    if original_uses_gemmini and not any(csource.calls_gemmini(f) for f in kernel_fns):
        reasons.append(f"{kernel.name}() no longer uses the Gemmini accelerator: the work moved to the CPU")
    elif csource.host_mac_loop_depth(kernel.text) < 2:
        hosts = [f.name for f in kernel_fns if csource.host_mac_loop_depth(f.text) >= 2]
        if hosts:
            reasons.append(f"{', '.join(hosts)}() computes multiply-accumulate loops on the CPU; accelerator work "
                           "must stay on Gemmini")
    return reasons
