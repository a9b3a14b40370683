"""What the compiler knows about the candidate's kernels: ptxas resources, SASS mix, theoretical occupancy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from speedpatch.targets.cuda.occupancy import block_size, occupancy
from speedpatch.targets.cuda.ptxas import parse_ptxas
from speedpatch.targets.cuda.sass import dump_sass, find_cuobjdump, instruction_mix


def arch_of_device(cc: str) -> str:
    """"9.0" -> "sm_90"."""
    return "sm_" + cc.replace(".", "") if cc else ""


def resource_feedback(ptxas_output: str, candidate_object: Path, solution: str, harness: str, arch: str,
                      timeout: float, sass: str | None = None) -> dict[str, Any]:
    """{"kernels": {name: {registers, shared memory, spills, occupancy, sass}}, "sass": note}. `sass`: the
    candidate's SASS when the object check already read it (then cuobjdump is not run again)."""
    kernels: dict[str, Any] = {}
    sass_mix: dict[str, Any] = {}
    sass_note = ""
    cuobjdump = find_cuobjdump()
    if sass:
        sass_mix = instruction_mix(sass)
    elif cuobjdump and candidate_object.exists():
        sass, sass_note = dump_sass(cuobjdump, candidate_object, timeout)
        if sass is not None:
            sass_mix = instruction_mix(sass)
    elif not cuobjdump:
        sass_note = "cuobjdump not found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)"
    for r in parse_ptxas(ptxas_output).values():
        if "sp_candidate" not in r.mangled:
            continue  # the harness's own kernels (the L2 flush) are not the candidate's
        info: dict[str, Any] = {"registers": r.registers, "shared_bytes_static": r.shared_bytes,
                                "spill_stores_bytes": r.spill_stores, "spill_loads_bytes": r.spill_loads,
                                "stack_bytes": r.stack_bytes}
        threads = block_size(solution, r.name, harness)
        if arch and arch != "native":
            info["occupancy"] = (occupancy(arch, threads, r.registers, r.shared_bytes) if threads
                                 else {"error": "block size not known at compile time"})
        if r.name in sass_mix:
            info["sass"] = sass_mix[r.name]
        kernels[r.name] = info
    feedback: dict[str, Any] = {"kernels": kernels}
    if sass_note:
        feedback["sass"] = sass_note
    return feedback
