"""Turn a kit problem (baseline file + candidate file) into the translation units of one A/B binary.

main.cu       the trusted harness part of the BASELINE file (never the candidate's) plus main()
baseline.cu   the baseline solution inside `namespace sp_baseline`
candidate.cu  the candidate solution inside `namespace sp_candidate`
harness_only.cu  the harness with an empty `sp_candidate` solution: never linked, compiled only as what the
              candidate's object is compared with (objcheck.py: what the harness itself defines and runs)
Each solution is its own translation unit, so its #defines, statics and kernels cannot collide with the
other's. `#include` lines of a solution are hoisted out of the namespace; `#line` keeps compiler messages
pointing at the lines of the original file.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from speedpatch.targets.cuda.problem import KIT, ProblemLayout, split_problem

INCLUDE_DIR = Path(__file__).parent / "include"
INCLUDE_LINE = re.compile(r"^[ \t]*#[ \t]*include\b[^\n]*$", re.MULTILINE)
# spd::elem is the harness's element type (float unless it defines SPEEDPATCH_ELEMENT): every unit agrees.
LAUNCH_DECL = "void launch(const ::spd::elem* const* inputs, ::spd::elem* output);"
BASE_FLAGS = ["-O3", "-std=c++17", "-lineinfo"]
HARNESS_ONLY = "harness_only.cu"


class ProblemError(ValueError):
    """The file is not a usable problem (no marker, harness changed, ...): the message says why."""


@dataclass
class Units:
    files: dict[str, str] = field(default_factory=dict)  # file name -> text
    harness_hash: str = ""


def _solution_unit(layout: ProblemLayout, namespace: str, filename: str) -> str:
    hoisted = [m.group(0).strip() for m in INCLUDE_LINE.finditer(layout.solution)]
    body = INCLUDE_LINE.sub("", layout.solution)  # keeps the newline, so line numbers stay right
    quoted = filename.replace("\\", "/").replace('"', "")
    return (
        "#define SPEEDPATCH_SPLIT 1\n#define SPEEDPATCH_SOLUTION_UNIT 1\n#include \"harness.cuh\"\n"
        + "".join(line + "\n" for line in hoisted)
        + f"namespace {namespace} {{\n#line {layout.solution_line + 1} \"{quoted}\"\n{body}\n}}  // namespace {namespace}\n"
    )


def _forwarding_unit() -> str:
    return (
        "#define SPEEDPATCH_SPLIT 1\n#define SPEEDPATCH_SOLUTION_UNIT 1\n#include \"harness.cuh\"\n"
        f"namespace sp_candidate {{ {LAUNCH_DECL} }}\n"
        "namespace sp_baseline {\n"
        "void launch(const ::spd::elem* const* inputs, ::spd::elem* output) { sp_candidate::launch(inputs, output); }\n"
        "}  // namespace sp_baseline\n"
    )


def _main_unit() -> str:
    return (
        "#define SPEEDPATCH_SPLIT 1\n#include \"harness.cuh\"\n"
        f"namespace sp_baseline {{ {LAUNCH_DECL} }}\nnamespace sp_candidate {{ {LAUNCH_DECL} }}\n"
        "int main(int argc, char** argv) {\n"
        "  return spd::run_main(problem(), sp_baseline::launch, sp_candidate::launch, argc, argv);\n}\n"
    )


def layouts(candidate: str, baseline: str | None, path: str) -> tuple[ProblemLayout, ProblemLayout]:
    """Split both files; the candidate must keep the baseline's harness byte for byte."""
    cand = split_problem(candidate, path)
    base = split_problem(baseline if baseline is not None else candidate, path)
    if base is None or cand is None:
        raise ProblemError("no `// speedpatch: solution` line: this file is not a speedpatch CUDA problem "
                           "(see examples/cuda/ for the layout)")
    if cand.harness != base.harness:
        raise ProblemError("the candidate changed the trusted harness part (above `speedpatch: solution`)")
    return cand, base


def kit_units(candidate: str, baseline: str | None, path: str) -> Units:
    """Translation units for an A/B binary (baseline None: the candidate against itself)."""
    cand, base = layouts(candidate, baseline, path)
    if cand.kind != KIT:
        raise ProblemError("not a .cu kit problem")
    name = os.path.basename(path) or "kernel.cu"
    units = Units(harness_hash=hashlib.sha256(base.harness.encode()).hexdigest()[:16])
    units.files["harness.cuh"] = base.harness
    units.files["candidate.cu"] = _solution_unit(cand, "sp_candidate", name)
    # The file measured against itself (`speedpatch evaluate`, a run's baseline evaluation): the baseline side
    # calls the candidate's launch instead of compiling the same solution a second time. The unit then depends
    # only on the harness, so the compile cache serves it to every such evaluation of the problem.
    units.files["baseline.cu"] = (_forwarding_unit() if base.solution == cand.solution
                                  else _solution_unit(base, "sp_baseline", name))
    units.files["main.cu"] = _main_unit()
    units.files[HARNESS_ONLY] = _solution_unit(dataclasses.replace(cand, solution=""), "sp_candidate", name)
    return units


def write_units(units: Units, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in units.files.items():
        (directory / name).write_text(text)
    # The kit headers travel with the units, so a remote host needs nothing from us installed.
    for header in INCLUDE_DIR.iterdir():
        if header.suffix in (".h", ".cuh"):
            shutil.copyfile(header, directory / header.name)


def find_nvcc(settings: dict | None = None) -> str | None:
    configured = (settings or {}).get("nvcc")
    if configured:
        return configured if (shutil.which(configured) or os.path.exists(configured)) else None
    for candidate in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


@functools.lru_cache(maxsize=8)
def nvcc_version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    m = re.search(r"release ([\d.]+), V([\d.]+)", out)
    return f"nvcc {m.group(2)}" if m else "unknown"


def compile_flags(arch: str, extra: list[str] | None = None) -> list[str]:
    return [*BASE_FLAGS, f"-arch={arch}", *(extra or [])]


def include_flags(path: str) -> list[str]:
    """-I flags for a local build: the build dir (kit headers) and the problem file's folder (its own headers)."""
    return ["-I."] + ([f"-I{os.path.dirname(os.path.abspath(path))}"] if path else [])
