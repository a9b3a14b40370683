"""cuda-local: build with nvcc and run on this machine's GPU, baseline and candidate alternated."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from typing import Any

from speedpatch.model import INFRA_ERROR, Evaluation
from speedpatch.targets.base import Availability, Backend, EvalContext
from speedpatch.targets.cuda.build import find_nvcc, nvcc_version
from speedpatch.targets.cuda.evaluate import TIMED_KEYS, evaluate_with
from speedpatch.targets.hosts import LocalHost
from speedpatch.targets.sandbox import DEVICES


@functools.lru_cache(maxsize=1)
def local_gpu() -> str | None:
    """Name of this machine's first NVIDIA GPU, or None. nvidia-smi when present, else the device node
    (a node without a working driver still fails at run time, with a clear harness message)."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        first = out.stdout.strip().splitlines()[:1]
        return first[0] if out.returncode == 0 and first and first[0].startswith("GPU") else None
    return "/dev/nvidia0" if os.path.exists("/dev/nvidia0") else None


class CudaLocalBackend(Backend):
    name = "cuda-local"
    target = "cuda"
    settings_keys = TIMED_KEYS
    measures_speed = True
    description = "nvcc + this machine's GPU: CUDA-event timing, L2 flushed, baseline/candidate alternated"

    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        nvcc = find_nvcc(settings)
        if nvcc is None:
            return Availability(False, "nvcc not found: install the CUDA toolkit or set nvcc in [backend.cuda-local] of speedpatch.toml")
        gpu = local_gpu()
        if gpu is None:
            return Availability(False, "no NVIDIA GPU on this machine: use cuda-ssh with a GPU host to measure, "
                                       "or cuda-compile for compile-only checks")
        return Availability(True, f"{gpu}; {nvcc_version(nvcc)}")

    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        settings = ctx.settings or {}
        nvcc = find_nvcc(settings)
        if nvcc is None:
            return Evaluation(status=INFRA_ERROR, message="nvcc not found on this machine")
        # the harness writes its verdict to the sandbox's private result pipe
        host = LocalHost(ctx.workdir, devices=DEVICES["nvidia"], result_channel=True)
        ev = evaluate_with(host, source, ctx, self.name, nvcc, str(settings.get("arch", "native")))
        if ev.receipt:
            ev.receipt["compiler_version"] = nvcc_version(nvcc)
        return ev
