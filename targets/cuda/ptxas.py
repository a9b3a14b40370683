"""Parse `nvcc -Xptxas -v` output: registers, shared memory, spills and stack per kernel."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
PROPS = re.compile(r"Function properties for (\S+)")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers(.*)")
SMEM = re.compile(r"(\d+) bytes smem")
BARRIERS = re.compile(r"used (\d+) barriers")


@dataclass
class KernelResources:
    mangled: str
    name: str  # demangled base name, e.g. "matmul_kernel"
    arch: str = ""
    registers: int = 0
    shared_bytes: int = 0  # static shared memory
    barriers: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def demangle_name(mangled: str) -> str:
    """The innermost identifier of an Itanium-mangled function name (enough to match a kernel by name);
    the input itself when it is not mangled (extern "C" kernels)."""
    if not mangled.startswith("_Z"):
        return mangled
    i = 2
    nested = i < len(mangled) and mangled[i] == "N"
    if nested:
        i += 1
    last = mangled
    while i < len(mangled) and mangled[i].isdigit():
        j = i
        while j < len(mangled) and mangled[j].isdigit():
            j += 1
        length = int(mangled[i:j])
        last = mangled[j : j + length]
        i = j + length
        if not nested:
            break
        if i < len(mangled) and mangled[i] == "I":  # template arguments follow the name
            break
    return last


def parse_ptxas(output: str) -> dict[str, KernelResources]:
    """Resources per entry function (kernel), keyed by mangled name, in the order ptxas reports them."""
    kernels: dict[str, KernelResources] = {}
    current: KernelResources | None = None
    for line in output.splitlines():
        m = ENTRY.search(line)
        if m:
            current = kernels.setdefault(m.group(1), KernelResources(m.group(1), demangle_name(m.group(1)), m.group(2)))
            continue
        m = PROPS.search(line)
        if m:
            # Properties of a non-entry (device) function are not a kernel's own numbers.
            current = kernels.get(m.group(1))
            continue
        if current is None:
            continue
        m = FRAME.search(line)
        if m:
            current.stack_bytes, current.spill_stores, current.spill_loads = (int(g) for g in m.groups())
            continue
        m = USED.search(line)
        if m:
            current.registers = int(m.group(1))
            rest = m.group(2)
            if (s := SMEM.search(rest)) is not None:
                current.shared_bytes = int(s.group(1))
            if (b := BARRIERS.search(rest)) is not None:
                current.barriers = int(b.group(1))
    return kernels
