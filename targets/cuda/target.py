"""The CUDA target: kernels are `__global__` functions. In a problem file the optimizable region is the
whole solution part (kernels + launch), because a kernel and its launch configuration change together.
That region is named after its entry point, `launch` (`ModelNew` in KernelBench files), not after a
`__global__` function: a rewrite may rename or split kernels, and the region must still be found by name
in every candidate. Its signature line is the first `__global__` function, where the editor shows it."""

from __future__ import annotations

import ast
import functools
import os
import re
from pathlib import Path

from speedpatch.model import Evaluation, Kernel
from speedpatch.targets import cfamily, pynames
from speedpatch.targets.base import Backend, Finding, Move, Target
from speedpatch.targets.cuda import guards
from speedpatch.targets.cuda.backends.compile import CudaCompileBackend
from speedpatch.targets.cuda.backends.local import CudaLocalBackend, local_gpu
from speedpatch.targets.cuda.backends.ssh import CudaSshBackend
from speedpatch.targets.cuda.build import find_nvcc
from speedpatch.targets.cuda.detect import global_functions
from speedpatch.targets.cuda.feedback import feedback_text
from speedpatch.targets.cuda.moves import offline_moves
from speedpatch.targets.cuda.problem import KERNELBENCH, KIT_INCLUDE, ProblemLayout, split_problem

NO_HARNESS = ("no speedpatch harness in this file: add a trusted harness and a `// speedpatch: solution` line "
              "(see examples/cuda/)")
SOLUTION_NAME = "launch"  # the region of a .cu problem: every kernel plus launch()
KERNELBENCH_NAME = "ModelNew"
KB_REFERENCE_NAMES = {"Model", "get_inputs", "get_init_inputs"}
INCLUDE = Path(__file__).resolve().parent / "include"  # the timing kit problems include


def _end_line(text: str, end: int) -> int:
    """Exclusive 0-based end line of a region ending at character `end`."""
    return text.count("\n", 0, end) + (0 if end == 0 or text[end - 1] == "\n" else 1)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset)


@functools.lru_cache(maxsize=1)
def _has_local_gpu() -> bool:
    return find_nvcc() is not None and local_gpu() is not None


class CudaTarget(Target):
    name = "cuda"
    title = "CUDA"
    fence_language = "cuda"
    extensions = (".cu", ".cuh", ".py")  # .py: KernelBench-style problems (Model + ModelNew)
    language_ids = ("cuda-cpp", "cuda", "python")
    kernel_hint = ("a __global__ function in a .cu file, or a KernelBench Model with its ModelNew in a .py file; "
                   "see examples/cuda/")

    @property
    def default_backend(self) -> str:  # type: ignore[override]  # a property where Target has a plain attribute: read alike
        return "cuda-local" if _has_local_gpu() else "cuda-compile"

    def backends(self) -> list[Backend]:
        return [CudaLocalBackend(), CudaSshBackend(), CudaCompileBackend()]

    # --- kernels -------------------------------------------------------------------------------------

    def find_kernels(self, text: str, path: str = "") -> list[Kernel]:
        try:
            layout = split_problem(text, path)
            if layout is not None and layout.kind == KERNELBENCH:
                return self._kernelbench_kernels(text, layout)
            functions = global_functions(text)
        except Exception:  # find_kernels must not raise on junk
            return []
        if layout is None:
            return [
                Kernel(f.name, self.name, f.start, f.end, _line_of(text, f.start), _end_line(text, f.end),
                       f.signature_line, text[f.start : f.end], runnable=False, reason=NO_HARNESS)
                for f in functions
            ]
        solution = [f for f in functions if f.start >= layout.solution_start]
        if not solution:
            return []
        end = len(text)
        return [Kernel(SOLUTION_NAME, self.name, layout.solution_start, end, layout.solution_line,
                       _end_line(text, end), solution[0].signature_line, layout.solution)]

    def _kernelbench_kernels(self, text: str, layout: ProblemLayout) -> list[Kernel]:
        if "ModelNew" not in layout.solution:
            return []
        line = next((i for i, s in enumerate(text.splitlines()) if "class ModelNew" in s), layout.solution_line)
        return [Kernel(KERNELBENCH_NAME, self.name, layout.solution_start, len(text),
                       layout.solution_line, _end_line(text, len(text)), line, layout.solution)]

    def extract_kernel(self, code: str, kernel: Kernel, problem_names: frozenset[str] = frozenset()) -> str:
        """The code to splice in, taken from an LLM reply (or the solution part of a whole-file reply): a
        whole solution (with launch) as written, kernels alone with what they use (device helpers,
        constants, includes), a KernelBench ModelNew with what it uses. Never the harness: a definition of
        a problem name (ROWS, reference, Model...) is dropped, the trusted file has it. Kernels without
        launch are swapped by name into the parent's solution by `splice`."""
        python = _is_kernelbench(kernel)
        layout = split_problem(code, "x.py" if python else "x.cu")
        if layout is not None:
            code = layout.solution
        if python:
            found = pynames.kernel_and_helpers(code, {KERNELBENCH_NAME}, problem_names)
            return found if found is not None else _kernelbench_solution(code)
        if not kernel.runnable:
            return super().extract_kernel(code, kernel, problem_names)
        items = cfamily.items(code, cfamily.CUDA)
        defined = {name for item in items for name in item.names}
        roots = {SOLUTION_NAME} if SOLUTION_NAME in defined else {f.name for f in global_functions(code)}
        if not roots:
            return code
        allowed = [item for item in items if not KIT_INCLUDE.search(item.text) and (
            item.names & roots or not item.names & problem_names)]
        if SOLUTION_NAME in roots:  # a whole solution: as written, less what the harness owns
            return cfamily.without(code, [item for item in items if item not in allowed])
        # kernels alone: with what they use, and new values for the solution's own constants and helpers
        used = cfamily.used_items(allowed, roots | cfamily.touched_names(kernel.text, cfamily.CUDA))
        kept = [item for item in allowed if item.kind == "include" or item in used]
        return "\n\n".join(item.text.rstrip() for item in kept) + "\n"

    def region_problems(self, region: str, kernel: Kernel, path: str = "") -> list[str]:
        """A candidate's solution reads no file the problem does not: every `#include` names a header of the
        compiler's own folders (no `#import`/`#include_next`, computed name, absolute path or `..`), a quoted
        one only when the trusted solution has it too, and none that the problem's folder holds (the build
        searches it first): the compiler quotes what it cannot parse in the log the LLM is shown."""
        if _is_kernelbench(kernel):
            return []  # its extension's sources are read by pycheck
        trusted = {i.line for i in cfamily.file_reads(kernel.text)}
        folder = os.path.dirname(os.path.abspath(path)) if path else ""
        found = []
        for include in cfamily.file_reads(region):
            if include.line in trusted:
                continue
            why = cfamily.unsafe_include(include)
            if not why and include.quoted and not include.name.startswith(self.harness_prefixes):
                why = "a quoted header the problem's solution does not include"
            if not why and folder and os.path.exists(os.path.join(folder, include.name)):
                why = "a file of the problem's folder"
            if why:
                found.append(f"the solution has `{include.line}` ({why}): a candidate includes only the compiler's "
                             "and CUDA's headers, and those the problem's own solution includes")
        return found

    harness_prefixes = ("speedpatch_", "SPEEDPATCH_", "spd_", "SPD_")

    def defined_names(self, code: str, kernel: Kernel) -> set[str]:
        if _is_kernelbench(kernel):
            return pynames.touched_names(code) or set()
        return cfamily.touched_names(code, cfamily.CUDA)

    def used_names(self, code: str, kernel: Kernel) -> set[str]:
        """KernelBench: what the reference reads from module scope (rebinding it after the harness would
        change the reference too); .cu: the functions the harness calls (the solution comes last, so
        only a definition of one of those could reach back into it)."""
        if _is_kernelbench(kernel):
            return pynames.free_names(code)
        return cfamily.called_names(code, cfamily.CUDA)

    def harness_names(self, kernel: Kernel) -> set[str]:
        """KernelBench: the reference definitions; .cu: main and the timing kit's names (spd, SPD_*...)."""
        if _is_kernelbench(kernel):
            return set(KB_REFERENCE_NAMES)
        return {"main"} | set(cfamily.header_names(str(INCLUDE), cfamily.CUDA))

    def kernel_names(self, region: str, kernel: Kernel) -> set[str]:
        """A reply holds the solution when it defines its entry point or one of the region's kernels."""
        if _is_kernelbench(kernel):
            return {KERNELBENCH_NAME}
        return {kernel.name} | {f.name for f in global_functions(region)}

    def syntax_error(self, code: str, kernel: Kernel) -> str:
        if _is_kernelbench(kernel):
            return pynames.syntax_error(code)
        return cfamily.syntax_error(code, cfamily.CUDA)

    def splice(self, text: str, kernel: Kernel, new_code: str) -> str:
        """A whole solution replaces the region; kernels alone replace the same-named kernels in it (the
        rest of the parent's solution, e.g. its launch configuration, stays), and the helpers sent with
        them (device functions, constants, includes) replace the same-named ones or go before the first
        kernel."""
        if kernel.name != SOLUTION_NAME or _defines_launch(new_code) or not global_functions(new_code):
            return super().splice(text, kernel, new_code)
        region = text[kernel.start : kernel.end]
        kernels = global_functions(new_code)
        replacements = {f.name: new_code[f.start : f.end] for f in kernels}
        for old in reversed(global_functions(region)):
            if old.name in replacements:
                region = region[: old.start] + replacements.pop(old.name) + region[old.end :]
        if replacements:  # new helper kernels go before launch(), which may call them
            launch = re.search(r"^[^\n]*\bvoid\s+launch\s*\(", region, re.MULTILINE)
            at = launch.start() if launch else len(region)
            region = region[:at] + "\n\n".join(replacements.values()) + "\n\n" + region[at:]
        kernel_names = {f.name for f in kernels}
        helpers = [item for item in cfamily.items(new_code, cfamily.CUDA)
                   if item.kind != "comment" and not item.names & kernel_names and (item.names or item.kind == "include")]
        return text[: kernel.start] + _merge_helpers(region, helpers) + text[kernel.end :]

    # --- checks, feedback, moves --------------------------------------------------------------------

    def diagnostics(self, text: str, path: str = "") -> list[Finding]:
        """Guard findings with positions, for editor diagnostics (empty for files without a harness)."""
        layout = split_problem(text, path)
        if layout is None:
            return []
        return guards.check(layout.solution, layout.precision, layout.allow, layout.solution_line, forbid=layout.forbid,
                            element=layout.element, python=layout.kind == KERNELBENCH)

    def static_check(self, source: str, kernel: Kernel) -> list[str]:
        python = "class ModelNew" in source and "load_inline" in source
        return [f.text() for f in self.diagnostics(source, "x.py" if python else "x.cu")]

    def feedback_text(self, evaluation: Evaluation) -> str:
        return feedback_text(evaluation)

    def offline_moves(self, source: str, kernel: Kernel) -> list[Move]:
        return offline_moves(source, kernel)



def _merge_helpers(region: str, helpers: list[cfamily.Item]) -> str:
    """`region` with each helper in place of the region's item of the same name, or else before the
    region's first kernel (an include: at the top, unless the region already has it)."""
    current = cfamily.items(region, cfamily.CUDA)
    edits: list[tuple[int, int, str]] = []
    before_kernels: list[str] = []
    top: list[str] = []
    for helper in helpers:
        same = next((item for item in current if item.names & helper.names), None)
        if same is not None:
            edits.append((same.start, same.end, helper.text))
        elif helper.kind == "include":
            if " ".join(helper.text.split()) not in {" ".join(i.text.split()) for i in current}:
                top.append(helper.text)
        else:
            before_kernels.append(helper.text)
    first = global_functions(region)
    at = first[0].start if first else 0
    if before_kernels:
        edits.append((at, at, "\n\n".join(before_kernels) + "\n\n"))
    if top:
        edits.append((0, 0, "\n".join(top) + "\n"))
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        region = region[:start] + new + region[end:]
    return region


def _is_kernelbench(kernel: Kernel) -> bool:
    return kernel.name == KERNELBENCH_NAME


def _defines_launch(code: str) -> bool:
    return re.search(r"\bvoid\s+launch\s*\([^)]*\)\s*\{", code) is not None


def _kernelbench_solution(code: str) -> str:
    """A reply holding a whole KernelBench file: keep everything but the reference definitions."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    lines = code.splitlines(keepends=True)
    drop: set[int] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name in KB_REFERENCE_NAMES:
            first = min([node.lineno, *[d.lineno for d in node.decorator_list]])
            drop.update(range(first - 1, node.end_lineno or node.lineno))
    return "".join(line for i, line in enumerate(lines) if i not in drop)
