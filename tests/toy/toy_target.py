"""A tiny deterministic target for testing the engine, CLI and server without any accelerator.

A `.toy` file is Python: kernels are top-level functions named `kernel_*`; the harness is the rest:
`INPUTS` (a list of argument tuples), `reference(*args)`, and optionally `MOVES`, a dict of
plan text -> new kernel source, which the offline proposer offers as moves. The `toy-count` backend runs
the file in a subprocess and measures the number of Python lines the kernel executes: deterministic.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

from speedpatch import targets
from speedpatch.model import COMPILE_ERROR, INCORRECT, OK, RUNTIME_ERROR, Evaluation, Kernel
from speedpatch.targets import pynames
from speedpatch.targets.base import (
    Availability,
    Backend,
    EvalContext,
    Move,
    Target,
    run_process,
    timeout_evaluation,
)

RUNNER = r'''
import json, sys
path, name = sys.argv[1], sys.argv[2]
ns = {"__name__": "candidate"}
exec(compile(open(path).read(), path, "exec"), ns)
kernel = ns[name]
lines = 0
def tracer(frame, event, arg):
    global lines
    if event == "line":
        lines += 1
    return tracer
def outer(frame, event, arg):
    if event == "call" and frame.f_code.co_filename == path and frame.f_code.co_name != "reference":
        return tracer
    return None
correct = True
for args in ns["INPUTS"]:
    expected = ns["reference"](*args)
    sys.settrace(outer)
    got = kernel(*args)
    sys.settrace(None)
    if got != expected:
        correct = False
        print(f"mismatch for {args!r}: got {got!r}, expected {expected!r}")
print("TOY-RESULT " + json.dumps({"correct": correct, "lines": lines}))
'''


def _kernels(text: str) -> list[Kernel]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("kernel_"):
            start_line, end_line = node.lineno - 1, node.end_lineno or node.lineno
            start, end = offsets[start_line], offsets[min(end_line, len(offsets) - 1)]
            found.append(Kernel(node.name, "toy", start, end, start_line, end_line, start_line, text[start:end]))
    return found


class ToyCountBackend(Backend):
    name = "toy-count"
    target = "toy"
    measured_on = "model"
    description = "counts executed Python lines of the kernel (deterministic)"

    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        return Availability(True, "runs the file with this Python")

    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        cand = ctx.workdir / "candidate.py"
        cand.write_text(source)
        runner = ctx.workdir / "runner.py"
        runner.write_text(RUNNER)
        try:
            compile(source, str(cand), "exec")
        except SyntaxError as exc:
            return Evaluation(status=COMPILE_ERROR, message=f"line {exc.lineno}: {exc.msg}")
        proc = run_process([sys.executable, str(runner), str(cand), ctx.kernel.name], ctx.workdir, ctx.timeout)
        if proc.timed_out:
            return timeout_evaluation("the toy program", ctx.timeout, proc.output)
        result = next((ln for ln in proc.output.splitlines() if ln.startswith("TOY-RESULT ")), None)
        if proc.returncode != 0 or result is None:
            last = proc.output.strip().splitlines()[-1:] or ["no output"]
            return Evaluation(status=RUNTIME_ERROR, message=f"exit {proc.returncode}: {last[0]}", log=proc.output)
        data = json.loads(result.split(" ", 1)[1])
        receipt = {"backend": self.name, "statistic": "executed lines", "spread": "deterministic model"}
        if not data["correct"]:
            return Evaluation(status=INCORRECT, message="output differs from the reference", log=proc.output,
                              receipt=receipt)
        return Evaluation(status=OK, value=float(data["lines"]), unit="lines", log=proc.output, receipt=receipt,
                          feedback={"executed lines": data["lines"]})


class ToyTarget(Target):
    name = "toy"
    extensions = (".toy",)
    language_ids = ("toy", "python")
    default_backend = "toy-count"

    def __init__(self) -> None:
        self._backends = [ToyCountBackend()]

    def find_kernels(self, text: str, path: str = "") -> list[Kernel]:
        return _kernels(text)

    def backends(self) -> list[Backend]:
        return self._backends

    def extract_kernel(self, code: str, kernel: Kernel, problem_names: frozenset[str] = frozenset()) -> str:
        found = pynames.kernel_and_helpers(code, {kernel.name}, problem_names)
        return found if found is not None else super().extract_kernel(code, kernel, problem_names)

    def defined_names(self, code: str, kernel: Kernel) -> set[str]:
        return pynames.touched_names(code) or set()

    def used_names(self, code: str, kernel: Kernel) -> set[str]:
        return pynames.free_names(code)

    def harness_names(self, kernel: Kernel) -> set[str]:
        return {"INPUTS", "reference"}  # what RUNNER reads from the module

    def syntax_error(self, code: str, kernel: Kernel) -> str:
        return pynames.syntax_error(code)

    def offline_moves(self, source: str, kernel: Kernel) -> list[Move]:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return []
        moves: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "MOVES" for t in node.targets):
                moves = ast.literal_eval(node.value)
        return [Move(plan, self.splice(source, kernel, code)) for plan, code in moves.items()]


def example(tmp: Path, name: str = "sum.toy") -> Path:
    """Write the standard toy problem used by tests."""
    path = tmp / name
    path.write_text(EXAMPLE)
    return path


EXAMPLE = '''\
INPUTS = [([1, 2, 3, 4, 5, 6, 7, 8],), ([5] * 16,), (list(range(30)),)]


def reference(xs):
    return sum(xs)


def kernel_sum(xs):
    total = 0
    i = 0
    while i < len(xs):
        total = total + xs[i]
        i = i + 1
    return total


MOVES = {
    "Replace the index loop by a for-each loop.":
        "def kernel_sum(xs):\\n    total = 0\\n    for x in xs:\\n        total += x\\n    return total\\n",
    "Unroll the loop by 2 with a remainder step.":
        "def kernel_sum(xs):\\n    total = 0\\n    n = len(xs)\\n    i = 0\\n    while i + 1 < n:\\n"
        "        total += xs[i] + xs[i + 1]\\n        i += 2\\n    if i < n:\\n        total += xs[i]\\n"
        "    return total\\n",
    "Use the builtin sum.": "def kernel_sum(xs):\\n    return sum(xs)\\n",
    "Drop the last element (wrong on purpose).": "def kernel_sum(xs):\\n    return sum(xs[:-1])\\n",
}
'''

targets.register(ToyTarget())
