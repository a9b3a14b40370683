"""The NKI target: AWS Trainium kernels written in Python against `nki` / `nki.language` / `nki.isa`
(or the legacy `neuronxcc.nki`).

A kernel is a function decorated with nki.jit / nki.baremetal / nki.benchmark / nki.profile. The file is
a complete problem when it also carries a harness at module level (trusted; the search only ever
rewrites the kernel function):

    INPUTS = {"a": ((256, 512), "float32"), "b": ((256, 512), "float32")}  # kernel args, in order
    def reference(a, b):                                                   # NumPy, same order
        return a + b
    # optional: make_inputs(rng) -> dict (instead of INPUTS), OUTPUTS = {name: (shape, dtype)} for kernels
    # that write output arguments, TOLERANCE = {"rtol": ..., "atol": ...}, SEEDS = (0, 1, 2),
    # GRID = (4, 2) for an SPMD kernel launched as kernel[4, 2](...), and non-tensor arguments in INPUTS
    # ("eps": 1e-5, "pool": {"value": (2, 2)})

Every evaluation checks the kernel against reference() on input sets drawn from fresh random seeds
(as many as SEEDS has; rtol/atol, rejecting NaN and constant outputs) before its latency counts. In the
emulator the kernel runs in its own sandboxed process that holds only handles; the harness, inputs, cost
model and verdict stay in the trusted process (isolation/, docs/threat-model.md "NKI"). See runner.py.

Backends: nki-emulator (default; NumPy emulator + engine cost model, "us" of modeled latency),
nki-simulate (the real nki.simulate, functional only), nki-neuron (real Trainium via nki.benchmark).
"""

from __future__ import annotations

import ast
import re

from speedpatch.model import Evaluation, Kernel
from speedpatch.targets import pynames
from speedpatch.targets.base import Backend, Move, Target
from speedpatch.targets.nki import detect
from speedpatch.targets.nki.backends.emulator import NkiEmulatorBackend
from speedpatch.targets.nki.backends.neuron import NkiNeuronBackend
from speedpatch.targets.nki.backends.simulate import NkiSimulateBackend
from speedpatch.targets.nki.isolation.kernel_side import ALLOWED_IMPORTS
from speedpatch.targets.nki.runner import HARNESS_NAMES  # read from the problem; never bound by a candidate

# Names a kernel has no business touching: the harness, the emulator's internals, process escape hatches.
# A first, cheap line only: the boundary is the kernel's own sandboxed process, which holds no data, no
# cost model and no verdict (isolation/, docs/threat-model.md "NKI"); these names just fail early and clearly.
_FORBIDDEN = {
    "reference", "INPUTS", "OUTPUTS", "TOLERANCE", "SEEDS", "GRID", "make_inputs", "globals", "locals", "vars",
    "__import__", "importlib", "sys", "os", "subprocess", "threading", "multiprocessing", "ctypes", "gc",
    "inspect", "speedpatch", "costmodel", "last_report", "exec", "eval", "open", "builtins", "__builtins__",
    "compile", "breakpoint", "__subclasses__", "__globals__", "__code__", "_getframe", "f_back", "f_globals",
    "get_objects", "get_referrers", "posix", "signal", "socket", "pickle", "marshal",
}


# The module names among them (not builtins: reachable only by an import, which the allowlist refuses)
_MODULE_NAMES = {"importlib", "sys", "os", "subprocess", "threading", "multiprocessing", "ctypes", "gc", "inspect",
                 "speedpatch", "costmodel", "posix", "signal", "socket", "pickle", "marshal"}


def _imported_modules(tree: ast.AST) -> list[str]:
    """Every module an import statement anywhere in the file names ('.' for a relative import)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append("." if node.level else (node.module or ""))
    return found


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for m in re.finditer("\n", text):
        offsets.append(m.end())
    return offsets


class NkiTarget(Target):
    name = "nki"
    title = "NKI"
    fence_language = "python"
    extensions = (".py",)
    language_ids = ("python",)
    default_backend = "nki-emulator"
    kernel_hint = ("a Python function decorated with @nki.jit (or nki.baremetal / benchmark / profile), with INPUTS "
                   "and reference(...) at module level as its harness; see examples/nki/")

    def find_kernels(self, text: str, path: str = "") -> list[Kernel]:
        tree = detect.parse_python(text)
        try:
            found = detect.find_in_tree(tree) if tree is not None else detect.scan_lines(text)
        except RecursionError:
            return []
        if not found:
            return []
        reason = ""
        if tree is None:
            reason = f"the file does not parse ({detect.syntax_error(text)}: fix it first)"
        else:
            names = detect.module_names(tree)
            if "reference" not in names or not any(n in names for n in detect.INPUT_NAMES):
                reason = ("no harness in the file: define INPUTS = {name: (shape, dtype)} (or make_inputs(rng)) "
                          "and reference(...) at module level")
        offsets = _line_offsets(text)
        kernels = []
        for f in found:
            start = offsets[f.start_line - 1]
            end = offsets[f.end_line] if f.end_line < len(offsets) else len(text)
            kernels.append(Kernel(
                name=f.name, target=self.name, start=start, end=end, start_line=f.start_line - 1,
                end_line=f.end_line, signature_line=f.def_line - 1, text=text[start:end],
                runnable=not reason, reason=reason,
            ))
        return kernels

    def backends(self) -> list[Backend]:
        return [NkiEmulatorBackend(), NkiSimulateBackend(), NkiNeuronBackend()]

    def offline_moves(self, source: str, kernel: Kernel) -> list[Move]:
        from speedpatch.targets.nki.moves import offline_moves

        return offline_moves(source, kernel)

    def extract_kernel(self, code: str, kernel: Kernel, problem_names: frozenset[str] = frozenset()) -> str:
        """The decorated kernel function alone, from a reply's code: never INPUTS, reference or the file's
        imports, and no module-level helpers either (static_check inspects the kernel function, so code
        outside it would run unchecked; helpers belong inside the kernel)."""
        return super().extract_kernel(code, kernel, problem_names)

    harness_prefixes = ("speedpatch_",)

    def defined_names(self, code: str, kernel: Kernel) -> set[str]:
        return pynames.touched_names(code) or set()

    def used_names(self, code: str, kernel: Kernel) -> set[str]:
        """What the harness reads from module scope or builtins (reference's sum, abs...)."""
        return pynames.free_names(code)

    def harness_names(self, kernel: Kernel) -> set[str]:
        """What the trusted runner reads from the module, whether or not this problem defines it."""
        return set(HARNESS_NAMES)

    def syntax_error(self, code: str, kernel: Kernel) -> str:
        return pynames.syntax_error(code)

    def static_check(self, source: str, kernel: Kernel) -> list[str]:
        current = [k for k in self.find_kernels(source) if k.name == kernel.name]
        if not current:
            return [f"kernel {kernel.name!r} is missing from the candidate"]
        reasons = []
        module = detect.parse_python(source)
        if module is not None:
            refused = sorted({m.split(".")[0] or m for m in _imported_modules(module)} - ALLOWED_IMPORTS)
            reasons += [f"the candidate imports {name!r}, which NKI kernels may not (allowed: "
                        f"{', '.join(sorted(ALLOWED_IMPORTS - {'__future__'}))})" for name in refused]
        tree = detect.parse_python(current[0].text)
        if tree is None:
            return reasons  # the evaluation reports the syntax error with its line
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        # A module's name the kernel binds itself (a local `gc = ...`: the public chunked delta-rule kernel names
        # a cumulative gate so) is a variable, not the module: modules arrive only by an import, which the
        # allowlist above refuses, or through names that stay forbidden (__import__, builtins, globals...).
        bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
                  for a in (*n.posonlyargs, *n.args, *n.kwonlyargs)}
        bad = sorted(((names - (bound & _MODULE_NAMES)) | attributes) & _FORBIDDEN)
        reasons += [f"the kernel uses {name!r}, which kernels may not touch (harness or process internals)"
                    for name in bad]
        return reasons

    def feedback_text(self, evaluation: Evaluation) -> str:
        fb = evaluation.feedback or {}
        if "engines" not in fb:
            return super().feedback_text(evaluation)
        lines = [f"- modeled latency: {fb.get('latency_us')} us; bottleneck: {fb.get('bottleneck', '?')}; "
                 f"busiest engine {fb.get('utilization', 0) * 100:.0f}% busy"]
        labels = {"tensor": "Tensor engine", "vector": "Vector engine", "scalar": "Scalar engine",
                  "gpsimd": "GpSimd engine", "dma": "DMA queues"}
        for engine, e in fb["engines"].items():
            if not e.get("instructions"):
                continue
            label = labels.get(engine, engine)
            lines.append(f"- {label}: busy {e['busy_us']} us ({e['utilization'] * 100:.0f}% of the kernel), "
                         f"{e['instructions']} instructions")
        lines.append(f"- Tensor engine (PE array) utilization: {fb.get('pe_utilization', 0) * 100:.1f}%")
        lines.append(f"- DMA: {fb.get('dma_transfers')} transfers, {fb.get('dma_bytes')} bytes")
        lines.append(f"- peak SBUF {fb.get('sbuf_peak_kib_per_partition')} KiB of 192 KiB per partition, "
                     f"peak PSUM {fb.get('psum_peak_kib_per_partition')} KiB of 16 KiB per partition")
        hot = ", ".join(f"line {h['line']} ({h['busy_us']} us)" for h in fb.get("hot_lines", []))
        if hot:
            lines.append(f"- busiest source lines (engine time): {hot}")
        return "\n".join(lines)
