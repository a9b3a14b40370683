"""The one small interface through which targets and backends plug into speedpatch.

A Target knows a kernel language: it finds kernels in a file, splices rewritten kernel code back in,
supplies prompt knowledge (its menu) and offline moves. A Backend runs a whole candidate file and
measures it. Backends must run candidate code only through `run_process` (sandbox.py: bubblewrap, a
time limit, rlimits) inside `ctx.workdir` (a fresh scratch directory); `evaluate` must never raise for a bad candidate: a compile
error, crash, hang or wrong answer is an Evaluation with the matching status.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from speedpatch.errors import NotFoundError
from speedpatch.model import INFRA_ERROR, TIMEOUT, Evaluation, Kernel

# The process runner lives in sandbox.py; these names stay importable from here for every caller.
from speedpatch.targets.sandbox import (  # noqa: F401  (re-exported)
    LINE_LIMIT,
    LOG_LIMIT,
    ProcResult,
    _running,
    _running_lock,
    _scope,
    kill_processes,
    run_process,
    set_process_scope,
    truncate_output,
)


@dataclass(frozen=True)
class Availability:
    usable: bool
    reason: str = ""  # why not, and what to do about it; or a short description when usable


@dataclass
class EvalContext:
    kernel: Kernel  # the kernel being optimized (name, region in the ORIGINAL file)
    path: str  # the original file's path (for includes next to it); never write to it
    workdir: Path  # fresh scratch directory for this evaluation
    timeout: float = 60.0  # seconds for the whole evaluation (build + run)
    settings: dict[str, Any] = field(default_factory=dict)  # this backend's speedpatch.toml table
    baseline_source: str | None = None  # for backends that alternate baseline/candidate (A/B timing)
    seed: int = 0


@dataclass(frozen=True)
class Finding:
    """A problem a target sees in a file without running it (a known cheat, a harness violation)."""

    rule: str
    message: str
    line: int  # 0-based
    column: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        return f"line {self.line + 1}: {self.message}"


@dataclass(frozen=True)
class Move:
    """An offline, deterministic rewrite: a plan in words and the whole resulting file."""

    plan: str
    source: str


class Backend(ABC):
    name: str = ""
    target: str = ""
    measures_speed: bool = True  # False: compile-only/functional; the search will not rank by it
    # where its figures come from, shown next to every speedup: "hardware", "model", "emulator",
    # "simulator" or "compile-only" (a model figure is a claim about hardware, not a measurement of it)
    measured_on: str = "hardware"
    description: str = ""
    # a backend of the same target that checks correctness independently; the run's winner must also be
    # correct there before it is reported (server/engine/reverify.py). "" = none.
    reverify_with: str = ""
    # the keys its [backend.NAME] table in speedpatch.toml may hold; a key outside them is refused as a typo
    # (a setting that silently does nothing). None: not declared (a plug-in's backend), any key passes.
    settings_keys: frozenset[str] | None = None

    @abstractmethod
    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        """Cheap check (no candidate run) whether this backend can work on this machine."""

    @abstractmethod
    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        """Build, run, check and measure the whole candidate file `source`."""

    def refusal(self, settings: dict[str, Any] | None = None) -> Evaluation | None:
        """What `evaluate` returns instead of running where this backend is unusable: an INFRA_ERROR with
        availability's reason; None where it is usable. It asks availability again at every candidate, so it
        suits backends whose check is cheap (settings, a tool on PATH)."""
        usable = self.availability(settings)
        return None if usable.usable else Evaluation(status=INFRA_ERROR, message=usable.reason)


class Target(ABC):
    name: str = ""
    title: str = ""  # how people write its name ("CUDA"); default: name
    extensions: tuple[str, ...] = ()  # file suffixes this target looks at, e.g. (".c", ".h")
    # the LSP languageIds editors give its files (the extension asks for those documents and activates on them)
    language_ids: tuple[str, ...] = ()
    fence_language: str = ""  # the language tag of its code blocks in prompts (default: the target's name)
    default_backend: str = ""
    # where a plug-in target ships its menu (<name>.toml, <name>.api.txt: see server/menu.py); None: the
    # built-ins' menus/ folder of speedpatch itself
    menu_dir: Path | None = None
    # what a kernel of this target looks like, in a few words, for "no kernel found" (where to look included)
    kernel_hint: str = ""

    def prompt_language(self) -> str:
        """The language tag of its code blocks in prompts: fence_language, else the target's name (the LLM
        proposer and the editor's speedpatch/targets both ask here, so neither keeps a table)."""
        return self.fence_language or self.name

    @abstractmethod
    def find_kernels(self, text: str, path: str = "") -> list[Kernel]:
        """Kernels in a file (empty when the file is not for this target). Must not raise on junk."""

    @abstractmethod
    def backends(self) -> list[Backend]:
        """Every backend of this target, usable here or not."""

    def splice(self, text: str, kernel: Kernel, new_code: str) -> str:
        """The file with the kernel region replaced by new_code."""
        # keep the file's own layout around the region: a region that ended with a newline gets one back
        tail = "\n" if kernel.text.endswith("\n") else ""
        return text[: kernel.start] + new_code.rstrip("\n") + tail + text[kernel.end :]

    def extract_kernel(self, code: str, kernel: Kernel, problem_names: frozenset[str] = frozenset()) -> str:
        """Given an LLM code block, the kernel region to splice in: the kernel and the helpers it uses,
        never a definition of one of `problem_names` (constants, harness, main: the trusted file has
        them). The default cuts out the kernel by name, so that the harness is never taken from the LLM."""
        found = [k for k in self.find_kernels(code) if k.name == kernel.name]
        if found:
            return found[0].text
        return code

    # --- the trust boundary: a candidate is the kernel region and nothing else ----------------------
    def defined_names(self, code: str, kernel: Kernel) -> set[str]:
        """File-scope names `code` defines, declares or undefines anywhere in it, in this target's
        language (macros, functions, globals, types, imports). A target that cannot tell returns none."""
        return set()

    def harness_names(self, kernel: Kernel) -> set[str]:
        """Names the target's trusted harness kit owns whether or not the problem file spells them (its
        headers' macros and functions, the names its runner reads such as INPUTS or reference)."""
        return set()

    # Prefixes of names the harness kit owns or may add later (speedpatch_*): never a candidate's to define.
    harness_prefixes: tuple[str, ...] = ()

    def used_names(self, code: str, kernel: Kernel) -> set[str]:
        """Names the trusted code outside the kernel region depends on without defining them (builtins,
        library functions, tokens a later macro could rewrite): a region that defines one hijacks it."""
        return set()

    def problem_names(self, source: str, kernel: Kernel) -> frozenset[str]:
        """Names a candidate's kernel region may not (re)define: those the problem file defines or depends
        on outside the kernel region and the harness kit's, less those the original region defines."""
        outside = source[: kernel.start] + "\n" + source[kernel.end :]
        names = self.defined_names(outside, kernel) | self.used_names(outside, kernel) | self.harness_names(kernel)
        return frozenset(names - self.defined_names(kernel.text, kernel))

    def region_problems(self, region: str, kernel: Kernel, path: str = "") -> list[str]:
        """What a candidate's kernel region holds that only the problem file may (an `#include`), each
        said in one line; empty when nothing. `path`: the problem file's."""
        return []

    def kernel_names(self, region: str, kernel: Kernel) -> set[str]:
        """Names whose definition marks a reply's code as holding the kernel (`region`: the parent's)."""
        return {kernel.name}

    def syntax_error(self, code: str, kernel: Kernel) -> str:
        """'' when `code` parses in this target's language, else where it does not (tells code in a reply
        without fences from prose)."""
        return ""

    def offline_moves(self, source: str, kernel: Kernel) -> list[Move]:
        """Deterministic rewrites of `source` (the whole file) that may speed up `kernel`."""
        return []

    def feedback_text(self, evaluation: Evaluation) -> str:
        """Hardware feedback for the plan prompt, from evaluation.feedback."""
        fb = evaluation.feedback or {}
        return "\n".join(f"- {k}: {v}" for k, v in fb.items())

    def diagnostics(self, text: str, path: str = "") -> list[Finding]:
        """Findings with positions, shown by editors as diagnostics while the user types."""
        return []

    def static_check(self, source: str, kernel: Kernel) -> list[str]:
        """Reasons to reject a candidate without running it (known cheats). Empty = fine."""
        return []

    def backend(self, name: str) -> Backend:
        for b in self.backends():
            if b.name == name:
                return b
        names = ", ".join(b.name for b in self.backends())
        raise NotFoundError(f"unknown backend {name!r} for target {self.name}; known: {names}")


def timeout_evaluation(what: str, seconds: float, output: str) -> Evaluation:
    return Evaluation(status=TIMEOUT, message=f"{what} did not finish within {seconds:.0f} s", log=output)
