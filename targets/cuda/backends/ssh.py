"""cuda-ssh: copy the build to a GPU host, build it there with its nvcc, run it there.

speedpatch.toml:
    [backend.cuda-ssh]
    host = "gpu1"                 # anything ssh accepts: alias, user@host
    ssh = "ssh -o BatchMode=yes"  # command (with options) used to run remote commands
    scp = "scp -o BatchMode=yes"
    remote_dir = "/tmp/speedpatch"
    nvcc = "/usr/local/cuda/bin/nvcc"
    arch = "native"              # or e.g. "sm_90"
    python = "python3"           # for KernelBench-style problems
"""

from __future__ import annotations

from typing import Any

from speedpatch.model import Evaluation
from speedpatch.targets.base import Availability, Backend, EvalContext
from speedpatch.targets.cuda.evaluate import TIMED_KEYS, evaluate_with
from speedpatch.targets.hosts import REMOTE_KEYS, SshHost, missing_ssh_tool


class CudaSshBackend(Backend):
    name = "cuda-ssh"
    settings_keys = TIMED_KEYS | REMOTE_KEYS
    target = "cuda"
    measures_speed = True
    description = "copy, build and run on a remote GPU host over ssh (same timing discipline as cuda-local)"

    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        settings = settings or {}
        if not settings.get("host"):
            return Availability(False, "no GPU host: set host = \"...\" in [backend.cuda-ssh] of speedpatch.toml")
        missing = missing_ssh_tool(settings)
        if missing:
            return Availability(False, missing)
        return Availability(True, f"GPU host {settings['host']} (reachability is checked at the first evaluation)")

    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        settings = ctx.settings or {}
        if (refused := self.refusal(settings)) is not None:
            return refused
        ev = evaluate_with(SshHost(settings, ctx.workdir), source, ctx, self.name, str(settings.get("nvcc", "nvcc")),
                           str(settings.get("arch", "native")))
        if ev.receipt:
            ev.receipt["host"] = settings["host"]
        return ev
