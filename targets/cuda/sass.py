"""SASS instruction mix per kernel from `cuobjdump -sass` (PyPI package nvidia-cuda-cuobjdump)."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from speedpatch.targets.cuda.ptxas import demangle_name

FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)")
# ptxas zeroes or copies registers with `HFMA2.MMA Rx, -RZ, RZ, ...` on the tensor pipe: a move, not fp16 math.
MOVE_IDIOMS = {"HFMA2.MMA"}
# And it widens a half to a float with `HADD2.F32 Rd, -RZ, Rs.H0_H0` (-0 + h): a conversion, not fp16 math.
WIDEN_IDIOM = re.compile(r"\bHADD2\.F32\s+R\d+\s*,\s*-RZ\s*,")
WIDEN = "HADD2.F32(widen)"

CATEGORIES = {
    "fp32": {"FFMA", "FADD", "FMUL", "FMNMX", "FSETP", "FSEL", "FCHK", "FRND", "FSET", "FSWZADD"},
    "special_function": {"MUFU"},
    "fp16/bf16": {"HADD2", "HFMA2", "HMUL2", "HSETP2", "HMNMX2"},
    "tensor_core": {"HMMA", "IMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA", "BMMA", "UTCHMMA", "UTCQMMA", "QMMA", "OMMA"},
    "global_memory": {"LDG", "STG", "ATOMG", "RED", "LD", "ST", "ATOM", "LDGSTS", "UBLKCP", "UTMALDG", "UTMASTG"},
    "shared_memory": {"LDS", "STS", "ATOMS", "LDSM", "STSM"},
    "local_memory(spills)": {"LDL", "STL"},
    "constant": {"LDC", "ULDC"},
    "warp_shuffle": {"SHFL", "VOTE", "REDUX", "MATCH"},
    "sync/control": {"BAR", "BRA", "EXIT", "BSSY", "BSYNC", "WARPSYNC", "RET", "CALL", "SYNCS", "MEMBAR", "DEPBAR"},
    "conversion": {"F2F", "I2F", "F2I", "I2I", "F2FP", WIDEN},
}


def find_cuobjdump() -> str | None:
    """cuobjdump on PATH, in the CUDA toolkit, or inside the nvidia-cuda-cuobjdump wheel of this Python."""
    found = shutil.which("cuobjdump") or ("/usr/local/cuda/bin/cuobjdump" if os.path.exists("/usr/local/cuda/bin/cuobjdump") else None)
    if found:
        return found
    for site in sys.path:
        for path in sorted(glob.glob(os.path.join(site, "nvidia", "*", "bin", "cuobjdump")) +
                           glob.glob(os.path.join(site, "nvidia", "cuda_cuobjdump", "bin", "cuobjdump"))):
            if os.access(path, os.X_OK):
                return path
    return None


def cuobjdump_env(cuobjdump: str) -> dict[str, str]:
    """cuobjdump -sass runs nvdisasm; the wheels put both in the same bin folder, which may not be on PATH."""
    env = dict(os.environ)
    folder = os.path.dirname(cuobjdump)
    env["PATH"] = folder + os.pathsep + env.get("PATH", "")
    if os.path.exists(os.path.join(folder, "nvdisasm")):
        env.setdefault("NVDISASM_PATH", folder)
    return env


def instruction_mix(sass: str) -> dict[str, dict[str, Any]]:
    """Per kernel (demangled base name): total instructions, counts by category and the top opcodes."""
    per_fn: dict[str, Counter[str]] = {}
    current: Counter[str] | None = None
    for line in sass.splitlines():
        m = FUNCTION.match(line)
        if m:
            current = per_fn.setdefault(demangle_name(m.group(1)), Counter())
            continue
        if current is not None and (i := INSTRUCTION.search(line)) is not None:
            full = i.group(1) + i.group(2)
            if any(full.startswith(m) for m in MOVE_IDIOMS):
                current["MOV"] += 1
            else:
                current[WIDEN if WIDEN_IDIOM.search(line) else i.group(1)] += 1
    result: dict[str, dict[str, Any]] = {}
    for name, ops in per_fn.items():
        ops.pop("NOP", None)
        categories: Counter[str] = Counter()
        for op, count in ops.items():
            cat = next((c for c, members in CATEGORIES.items() if op in members), "integer/other")
            categories[cat] += count
        result[name] = {
            "instructions": sum(ops.values()),
            "by_category": dict(categories.most_common()),
            "top": dict(ops.most_common(12)),
        }
    return result


def dump_sass(cuobjdump: str, obj: Path, timeout: float) -> tuple[str | None, str]:
    """(SASS text, "") or (None, why). Run directly, not through run_process: the disassembly of a big
    kernel is longer than the log limit and must not be cut."""
    try:
        done = subprocess.run([cuobjdump, "-sass", str(obj)], capture_output=True, text=True, timeout=timeout,
                              env=cuobjdump_env(cuobjdump))
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"cuobjdump failed: {exc}"
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["failed"]
        return None, f"cuobjdump -sass failed: {last[0]}"
    return done.stdout, ""
