"""A test-only target that writes to stdout while detecting kernels, as careless code might: both a
print in the server process and a child process inheriting stdout. Files: *.noisy."""

from __future__ import annotations

import subprocess

from speedpatch import targets
from speedpatch.model import Kernel
from speedpatch.targets.base import Backend, Target


class NoisyTarget(Target):
    name = "noisy"
    extensions = (".noisy",)
    default_backend = ""

    def find_kernels(self, text: str, path: str = "") -> list[Kernel]:
        # no newline: glued to the next message header, this would make the client drop that message
        print("noise printed by a target", end="", flush=True)
        subprocess.run(["printf", "noise from a child process"], check=False)
        return []

    def backends(self) -> list[Backend]:
        return []


targets.register(NoisyTarget())
