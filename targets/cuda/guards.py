"""Static guards: known ways a candidate can look fast without being fast, found in its source.

`check(solution, ...)` returns structured findings (rule, message, 0-based line and column in the whole
file) so the same result feeds evaluation rejections and editor diagnostics. Only the solution part is
checked: the harness above the `speedpatch: solution` line is trusted. Comments and string literals are
blanked first (keeping offsets), so a comment that mentions cudaStreamCreate is not a cheat.
"""

from __future__ import annotations

import re

from speedpatch.targets.base import Finding  # line: 0-based, in the whole file
from speedpatch.targets.cuda.problem import PRECISIONS


def _rule(rule: str, message: str, *patterns: str) -> tuple[str, str, re.Pattern[str]]:
    return rule, message, re.compile("|".join(f"(?:{p})" for p in patterns), re.MULTILINE)


SIDE_STREAM = _rule(
    "side-stream",
    "work on a non-default stream escapes the timer; launch on the default stream",
    r"\bcudaStreamCreate\w*\s*\(", r"\bcudaStreamPerThread\b", r"\bcudaStreamNonBlocking\b",
    r"\bcudaLaunchHostFunc\b", r"\bcudaStreamBeginCapture\b", r"\bcudaStreamFork\w*",
    r"\btorch\.cuda\.Stream\b", r"\bc10::cuda::getStreamFromPool\b", r"\bat::cuda::getStreamFromPool\b",
)
HOST_THREAD = _rule(
    "host-thread",
    "host threads or processes do work the timer does not see",
    r"\bstd::(?:j?thread|async)\b", r"\bpthread_create\b", r"^[ \t]*#[ \t]*pragma[ \t]+omp\b", r"\bomp_\w+\s*\(",
    r"\bfork\s*\(\s*\)", r"\bthreading\.Thread\b", r"\bmultiprocessing\b", r"\bconcurrent\.futures\b",
)
L2_PERSIST = _rule(
    "persisting-l2",
    "persisting-L2 access windows keep data in L2 across the harness's cache flush",
    r"\baccessPolicyWindow\b", r"\bcudaStreamAttrValue\b", r"\bcudaLimitPersistingL2CacheSize\b",
    r"\bcudaAccessPropertyPersisting\b", r"\bcudaStreamSetAttribute\b", r"\bcudaLaunchAttributeAccessPolicyWindow\b",
    r"\bcudaCtxResetPersistingL2Cache\b", r"\bcudaDeviceSetLimit\b",
)
TIMER = _rule(
    "harness",
    "the timer and harness are off limits to the solution",
    r"\bcudaEvent\w*", r"\bcudaDeviceReset\b", r"\bcudaProfilerSt\w+", r"\bstd::chrono\b",
    r"\bclock64\s*\(", r"\bclock\s*\(\s*\)", r"%globaltimer", r"%clock64", r"\bspd::", r"\bspd_\w+",
    r"\bSPEEDPATCH_\w+", r"\breference\s*\(", r"\bproblem\s*\(\s*\)", r"\bint\s+main\s*\(",
    r"\bexit\s*\(", r"\batexit\s*\(", r"\bquick_exit\s*\(", r"\b_Exit\s*\(", r"\bsetenv\s*\(", r"\bfreopen\s*\(",
    r"\bcudaSetDevice\b", r"\btorch\.cuda\.(?:synchronize|Event)\b", r"\btime\.(?:time|perf_counter)\w*\b",
)

IO = _rule(
    "io",
    "a solution computes; file, process and console I/O could forge or hide results",
    r"\bf?open\s*\(", r"\bfreopen\b", r"\bfwrite\b", r"\bf?printf\s*\(", r"\bputs\s*\(", r"\bstd::(?:cout|cerr|clog)\b",
    r"\b[io]?fstream\b", r"\bsystem\s*\(", r"\bpopen\b", r"\bdup2?\s*\(", r"\bwrite\s*\(\s*[12]\s*,",
)

# Reference libraries, matched case-insensitively against `allow` directives by key.
LIBRARIES: dict[str, str] = {
    "cublas": r"\bcublas\w*|#\s*include\s*[<\"]cublas",
    "cublaslt": r"\bcublasLt\w*",
    "cudnn": r"\bcudnn\w*|#\s*include\s*[<\"]cudnn",
    "cufft": r"\bcufft\w*",
    "cusparse": r"\bcusparse\w*",
    "cusolver": r"\bcusolver\w*",
    "cutlass": r"\bcutlass::|#\s*include\s*[<\"]cutlass",
    "thrust": r"\bthrust::",
    "cub": r"\bcub::",
    "torch": (
        r"\b(?:at|torch)::(?!Tensor\b|empty\w*|zeros\w*|ones\w*|kFloat\w*|kCUDA\b|ScalarType\b|IntArrayRef\b|"
        r"TensorOptions\b|Device\b|cuda::getCurrentCUDAStream\b)\w+"
        r"|\btorch\.(?!empty\w*|zeros\w*|ones\w*|float\d*\b|half\b|bfloat16\b|Tensor\b|Size\b|device\b|"
        r"nn\.Module\b|utils\.cpp_extension\b|no_grad\b|cuda\.current_device\b|cuda\.is_available\b)\w+"
        r"|\bF\.\w+\s*\(|\b(?:nn|torch\.nn)\.(?!Module\b)\w+"
    ),
}
DEFAULT_FORBIDDEN = ("cublas", "cublaslt", "cudnn", "cufft", "cusparse", "cusolver", "torch")

# Lower-precision code by the precision it drops to, in two parts. STORAGE: the type, its conversions and
# its header, which a problem whose buffers hold that type (its element) needs just to read and write them.
# ARITHMETIC: computing in it. A problem whose element is fp16 but whose precision is fp32 (an explicit
# `precision fp32` directive) may load and store halves and convert them, but not compute in them.
STORAGE: dict[str, str] = {
    # `half` only as a type (`half x`, `half* p`): `int half = n / 2;` is an ordinary variable.
    "fp16": r"\b__half2?\b|(?<![\w.])half2?(?=\s*[*&]*\s*[A-Za-z_]\w*\s*[=;,()\[{])|\b__float2half\w*|"
    r"\b__floats?22?half2_rn\b|\b__half2float\b|\b__half22float2\b|"
    r"#\s*include\s*[<\"]cuda_fp16|\btorch\.(?:half|float16)\b|\.half\s*\(",
    "bf16": r"\b__nv_bfloat16\w*|\bnv_bfloat162?\b|\b__float2bfloat16\w*|\b__floats?22?bfloat162_rn\b|"
    r"\b__bfloat162float\b|\b__bfloat1622float2\b|#\s*include\s*[<\"]cuda_bf16|\btorch\.bfloat16\b|\.bfloat16\s*\(",
}
ARITHMETIC: dict[str, str] = {
    "fp16": r"\.f16(?:x2)?\b",
    "bf16": r"\.bf16(?:x2)?\b",
    "tf32": r"\bprecision::tf32\b|\b__float_to_tf32\b|\bwmma::__float_to_tf32\b|\.tf32\b|allow_tf32",
    "fp8": r"\b__nv_fp8\w*|#\s*include\s*[<\"]cuda_fp8|\.e4m3\b|\.e5m2\b|float8_e",
}
# The 16-bit math intrinsics are overloaded for __half and __nv_bfloat16 alike: computing with them is
# lower precision unless the problem permits fp16 or bf16 arithmetic.
HALF_MATH = (r"\b__h(?:add|sub|mul|fma|div|neg|abs|max|min)\w*\s*\(|"
             r"\bh2?(?:exp|exp2|exp10|log|log2|log10|sqrt|rsqrt|rcp|sin|cos|tanh|floor|ceil|trunc|rint)\s*\(")
# What each problem precision permits in addition to itself.
PERMITTED = {"fp32": set(), "tf32": {"tf32"}, "bf16": {"tf32", "bf16"}, "fp16": {"tf32", "fp16"}}


def _precision_rules(precision: str, element: str, allowed: set[str]) -> list[tuple[str, str, re.Pattern[str]]]:
    """Findings for lower precision than `precision`, the type of the buffers (`element`) always storable."""
    permitted = PERMITTED.get(precision, set()) | {precision} | allowed
    rules = []
    for kind in dict.fromkeys([*STORAGE, *ARITHMETIC]):
        if kind in permitted:
            continue
        parts = [ARITHMETIC[kind]] if kind in ARITHMETIC else []
        if kind in STORAGE and kind != element:
            parts.append(STORAGE[kind])
        what = f"{kind} arithmetic" if kind == element else kind
        rules.append(_rule("precision", f"{what} is lower precision than this {precision} problem allows", *parts))
    if not permitted & {"fp16", "bf16"}:
        rules.append(_rule("precision", f"fp16/bf16 arithmetic is lower precision than this {precision} problem "
                           "allows", HALF_MATH))
    return rules


def blank_comments_and_strings(text: str, python: bool = False) -> str:
    """Same length, same newlines: comments and the insides of string literals become spaces.
    Python sources keep their strings: inline CUDA lives in them and must be checked."""
    if python:
        return re.sub(r"#[^\n]*", lambda m: " " * len(m.group(0)), text)
    pattern = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.DOTALL)

    def keep_newlines(m: re.Match[str]) -> str:
        s = m.group(0)
        if s[0] in "\"'":
            return s[0] + re.sub(r"[^\n]", " ", s[1:-1]) + s[-1]
        return re.sub(r"[^\n]", " ", s)

    return pattern.sub(keep_newlines, text)


def check(
    solution: str,
    precision: str = "fp32",
    allow: tuple[str, ...] | list[str] = (),
    line_offset: int = 0,
    python: bool = False,
    forbid: tuple[str, ...] | list[str] = (),
    element: str = "fp32",
) -> list[Finding]:
    """Findings for a solution text whose first line is line `line_offset` of the file. Reference
    libraries: DEFAULT_FORBIDDEN plus `forbid`, minus `allow` (both from the problem's directives).
    `element` is the buffers' type: its storage is always allowed, its arithmetic only if `precision` is."""
    code = blank_comments_and_strings(solution, python=python)
    allowed = {a.lower() for a in allow}
    rules = [SIDE_STREAM, HOST_THREAD, L2_PERSIST, TIMER] + ([] if python else [IO])
    for lib in dict.fromkeys([*DEFAULT_FORBIDDEN, *(f.lower() for f in forbid)]):
        if lib in LIBRARIES and lib not in allowed:
            rules.append(_rule("reference-library", f"calls {lib}, the reference library, instead of computing",
                               LIBRARIES[lib]))
    if precision in PRECISIONS:
        rules.extend(_precision_rules(precision, element, allowed))
    findings: list[Finding] = []
    for rule, message, pattern in rules:
        if rule == "harness" and python:
            pattern = re.compile(r"\bcudaEvent\w*|%globaltimer|\btorch\.cuda\.(?:synchronize|Event)\b|"
                                 r"\btime\.(?:time|perf_counter)\w*\b|\bclock64\s*\(|\bsys\.exit\b|\bos\._exit\b")
        for m in pattern.finditer(code):
            line = code.count("\n", 0, m.start())
            col = m.start() - (code.rfind("\n", 0, m.start()) + 1)
            findings.append(Finding(rule, f"{message} (`{m.group(0).strip()}`)", line + line_offset, col))
    findings.extend(_side_stream_launches(code, line_offset, python))
    if python:  # the Python around the inline CUDA, as a syntax tree (re-spelling does not hide a name there)
        from speedpatch.targets.cuda import pycheck

        findings.extend(pycheck.check(solution, line_offset))
    # The result marker inside a string is blanked above; look for it in the raw text.
    for m in re.finditer(r"SPEEDPATCH_RESULT", solution):
        line = solution.count("\n", 0, m.start())
        findings.append(Finding("harness", "the solution prints the harness's result marker (a forged result)",
                                line + line_offset, m.start() - (solution.rfind("\n", 0, m.start()) + 1)))
    findings.sort(key=lambda f: (f.line, f.column, f.rule))
    return findings


LAUNCH = re.compile(r"<<<(.*?)>>>", re.DOTALL)
DEFAULT_STREAMS = {"0", "nullptr", "NULL", "cudaStreamLegacy", "0u"}


def _side_stream_launches(code: str, line_offset: int, python: bool) -> list[Finding]:
    """A 4th launch-configuration argument other than the legacy default stream."""
    found = []
    for m in LAUNCH.finditer(code):
        depth, args, current = 0, [], ""
        for ch in m.group(1):
            depth += ch in "([{"
            depth -= ch in ")]}"
            if ch == "," and depth == 0:
                args.append(current.strip())
                current = ""
            else:
                current += ch
        args.append(current.strip())
        stream = args[3] if len(args) >= 4 else "0"
        if python and "getCurrentCUDAStream" in stream:
            continue  # PyTorch's current stream is the one the runner times
        if stream not in DEFAULT_STREAMS:
            line = code.count("\n", 0, m.start())
            col = m.start() - (code.rfind("\n", 0, m.start()) + 1)
            found.append(Finding("side-stream", f"kernel launched on stream `{stream}`, not the default stream",
                                 line + line_offset, col))
    return found
