"""The trust boundary: a candidate is the problem file with only its kernel region replaced.

The problem file the run started from is trusted: everything before the kernel region (includes,
constants, the CUDA harness) and after it (main, INPUTS, reference) belongs to it. A candidate is
accepted for evaluation only when it is byte-identical to that file outside the region, and when its
region does not define, declare or undefine a name the problem or the target's harness kit defines
(changing MAT_DIM_I from inside the region would change the problem as surely as editing its line).
Every candidate passes here before it runs, whoever wrote it: the LLM, an offline move, a repair.
"""

from __future__ import annotations

from dataclasses import replace

from speedpatch.model import Kernel, Problem
from speedpatch.targets.base import Target


def _outside(problem: Problem) -> tuple[str, str]:
    source, kernel = problem.source, problem.kernel
    return source[: kernel.start], source[kernel.end :]


def region_of(problem: Problem, source: str) -> str | None:
    """The kernel region of a candidate file, or None when the file differs from the problem outside it."""
    prefix, suffix = _outside(problem)
    if len(source) < len(prefix) + len(suffix) or not source.startswith(prefix) or not source.endswith(suffix):
        return None
    return source[len(prefix) : len(source) - len(suffix)]


def region_kernel(problem: Problem, source: str) -> Kernel | None:
    """The problem's kernel as it sits in a candidate file: its whole region (helpers included)."""
    region = region_of(problem, source)
    if region is None:
        return None
    k = problem.kernel
    return replace(k, end=k.start + len(region), end_line=k.start_line + region.count("\n") + (
        0 if region.endswith("\n") or not region else 1), text=region)


def compose(problem: Problem, region: str) -> str:
    """The trusted problem file with `region` as its kernel region."""
    prefix, suffix = _outside(problem)
    return prefix + region + suffix


def _first_difference(expected: str, got: str, first_line: int, from_end: bool) -> str:
    """'line N: `expected` became `got`' for the first differing line (1-based in the problem file)."""
    want, have = expected.splitlines(), got.splitlines()
    if from_end:
        want, have = want[::-1], have[::-1]
    for i in range(max(len(want), len(have))):
        a = want[i] if i < len(want) else None
        b = have[i] if i < len(have) else None
        if a != b:
            line = first_line + (len(want) - 1 - i if from_end else i)
            if a is None:
                return f"near line {line}: `{_short(b)}` was added"
            if b is None:
                return f"line {line}: `{_short(a)}` was removed"
            return f"line {line}: `{_short(a)}` became `{_short(b)}`"
    return "whitespace at the region's edge changed"


def _short(text: str | None) -> str:
    text = (text or "").strip()
    return text if len(text) <= 80 else text[:77] + "..."


def outside_change(problem: Problem, source: str) -> str:
    """What a candidate changed outside the kernel region ('' when nothing)."""
    prefix, suffix = _outside(problem)
    if region_of(problem, source) is not None:
        return ""
    if not source.startswith(prefix):
        lines = prefix.count("\n") + 1
        return "before the kernel region, " + _first_difference(prefix, "\n".join(source.split("\n")[:lines]), 1,
                                                                False)
    tail = source[len(prefix) :]
    lines = suffix.count("\n") + 1
    suffix_line = problem.source[: problem.kernel.end].count("\n") + 1
    return "after the kernel region, " + _first_difference(suffix, "\n".join(tail.split("\n")[-lines:]),
                                                           suffix_line, True)


def check(target: Target, problem: Problem, source: str) -> list[str]:
    """Why `source` is not a candidate for `problem` (empty when it is): it changes the file outside the
    kernel region, its region redefines a problem or harness name, or holds what only the problem file
    may (Target.region_problems)."""
    if source == problem.source:
        return []
    changed = outside_change(problem, source)
    if changed:
        return [
            f"the candidate changes the problem outside the kernel {problem.kernel.name} ({changed}); "
            "constants, includes and the harness always come from the original file"
        ]
    region = region_of(problem, source) or ""
    try:
        kernel = problem.kernel
        own = target.defined_names(kernel.text, kernel)
        reserved = target.problem_names(problem.source, kernel)
        clash = sorted(name for name in target.defined_names(region, kernel) if name in reserved or (
            name.startswith(target.harness_prefixes) and name not in own))
    except Exception as exc:  # a parser bug must not let a candidate through unchecked
        return [f"the kernel region could not be checked for redefinitions: {exc}"]
    if clash:
        names = ", ".join(clash)
        return [
            f"the kernel region redefines {names}, which the problem or its harness defines outside the "
            f"kernel {problem.kernel.name}; the problem's constants, harness and main are fixed"
        ]
    return target.region_problems(region, problem.kernel, problem.path)
