"""How a CUDA problem file is laid out: a trusted harness part and a solution part.

A `.cu` problem file has a line `// speedpatch: solution`. Everything above it is the harness (inputs,
reference, `problem()`, and `#include "speedpatch_timing.cuh"`); everything below it is the solution that
the search rewrites (kernels plus `void launch(const float* const* inputs, float* output)`).
The buffers' element type is float unless the harness selects another before including the kit header:
    #define SPEEDPATCH_ELEMENT __half          (fp16; or __nv_bfloat16: bf16)
and `launch` then takes `const __half* const*` and `__half*`.
A KernelBench-style `.py` problem has a line `# speedpatch: solution` instead: above it the PyTorch
reference `Model`, `get_inputs`, `get_init_inputs`; below it the CUDA sources, `load_inline` and `ModelNew`.

Directives in the harness part tune the static guards:
    // speedpatch: precision fp32        (fp32 | tf32 | fp16 | bf16; lower precision than this is a cheat;
                                          default: the element's precision, fp32 for float buffers)
    // speedpatch: allow cublas, cudnn   (reference libraries the solution may call)
    // speedpatch: forbid cutlass, thrust (more libraries it may not; cuBLAS, cuDNN, torch ops... always)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath

CU_MARKER = re.compile(r"^[ \t]*//[ \t]*speedpatch:[ \t]*solution\b[^\n]*$", re.MULTILINE)
PY_MARKER = re.compile(r"^[ \t]*#[ \t]*speedpatch:[ \t]*solution\b[^\n]*$", re.MULTILINE)
DIRECTIVE = re.compile(r"^[ \t]*(?://|#)[ \t]*speedpatch:[ \t]*(precision|allow|forbid)\b[ \t:=]*([^\n]*)$", re.MULTILINE)
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")  # highest first
ELEMENT = re.compile(r"^[ \t]*#[ \t]*define[ \t]+SPEEDPATCH_ELEMENT[ \t]+(\w+)", re.MULTILINE)
ELEMENTS = {"float": "fp32", "__half": "fp16", "__nv_bfloat16": "bf16"}  # C++ type -> element name
KIT_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"]speedpatch_timing\.cuh[>\"]", re.MULTILINE)

KIT = "kit"  # .cu file using speedpatch_timing.cuh
KERNELBENCH = "kernelbench"  # .py file with Model / ModelNew


@dataclass(frozen=True)
class ProblemLayout:
    kind: str  # KIT or KERNELBENCH
    harness: str  # text above the marker line, marker line included
    solution: str  # text below the marker line
    solution_start: int  # character offset of the solution in the file
    solution_line: int  # 0-based line of the solution's first line
    precision: str = "fp32"  # the lowest precision the solution may compute in
    element: str = "fp32"  # the buffers' type: fp32, fp16 or bf16 (KernelBench problems: fp32)
    allow: tuple[str, ...] = field(default_factory=tuple)
    forbid: tuple[str, ...] = field(default_factory=tuple)


def is_kernelbench_path(path: str) -> bool:
    return PurePath(path).suffix.lower() == ".py"


def split_problem(text: str, path: str = "") -> ProblemLayout | None:
    """The layout of a problem file, or None when the file has no solution marker."""
    kernelbench = is_kernelbench_path(path) or (bool(PY_MARKER.search(text)) and not CU_MARKER.search(text))
    match = (PY_MARKER if kernelbench else CU_MARKER).search(text)
    if match is None:
        return None
    start = match.end() + 1 if match.end() < len(text) else match.end()
    harness = text[:start]
    element = "fp32"
    kit_include = KIT_INCLUDE.search(harness)
    # Only a #define before the kit header counts: after it, the header has already chosen float.
    before = harness[: kit_include.start()] if kit_include else harness
    if not kernelbench and (chosen := ELEMENT.search(before)):
        # A type the kit does not know stays as written: the kit header refuses it with a clear #error.
        element = ELEMENTS.get(chosen.group(1), chosen.group(1))
    # Without a directive the floor is the element's own precision: fp16 buffers allow fp16 arithmetic.
    precision, allow, forbid = element if element in PRECISIONS else "fp32", [], []
    for m in DIRECTIVE.finditer(harness):
        words = [w for w in re.split(r"[\s,]+", m.group(2).strip()) if w]
        if m.group(1) == "precision" and words and words[0].lower() in PRECISIONS:
            precision = words[0].lower()
        elif m.group(1) == "allow":
            allow += [w.lower() for w in words]
        elif m.group(1) == "forbid":
            forbid += [w.lower() for w in words]
    return ProblemLayout(
        kind=KERNELBENCH if kernelbench else KIT,
        harness=harness,
        solution=text[start:],
        solution_start=start,
        solution_line=harness.count("\n"),
        precision=precision,
        element=element,
        allow=tuple(allow),
        forbid=tuple(forbid),
    )
