"""Where a CUDA build runs: this machine, or a GPU host over ssh/scp. Same three steps either way:
upload a build folder, run commands in it, clean up."""

from __future__ import annotations

import shlex
import uuid
from pathlib import Path
from typing import Any, Protocol

from speedpatch.targets.base import ProcResult, run_process
from speedpatch.targets.sandbox import DEVICES


class Executor(Protocol):
    where: str  # for messages and receipts, e.g. "this machine" or "host gpu1"

    def upload(self, local_dir: Path, timeout: float) -> ProcResult | None:
        """Make local_dir's files available; a ProcResult describes a failure, None is success."""

    def run(self, argv: list[str], timeout: float, stdin: str | None = None) -> ProcResult:
        """Run argv where the build lives; `stdin` is written to its standard input. Where the runner
        offers one (locally), the process also gets a private result pipe: ProcResult.result."""

    def fetch(self, name: str, timeout: float) -> str | None:
        """The whole text of a file the run wrote in the build folder, or None."""

    def cleanup(self) -> None: ...


class LocalExecutor:
    where = "this machine"

    def __init__(self) -> None:
        self.dir: Path | None = None

    def upload(self, local_dir: Path, timeout: float) -> ProcResult | None:
        self.dir = local_dir
        return None

    def run(self, argv: list[str], timeout: float, stdin: str | None = None) -> ProcResult:
        assert self.dir is not None, "upload first"
        return run_process(argv, cwd=self.dir, timeout=timeout, devices=DEVICES["nvidia"], input_text=stdin,
                           result_channel=True)

    def fetch(self, name: str, timeout: float) -> str | None:
        assert self.dir is not None, "upload first"
        try:
            return (self.dir / name).read_text(errors="replace")
        except OSError:
            return None

    def cleanup(self) -> None:  # the scratch directory belongs to the caller
        pass


class SshExecutor:
    """settings: host (required), ssh ("ssh", may carry options), scp ("scp"), remote_dir ("/tmp/speedpatch")."""

    def __init__(self, settings: dict[str, Any], scratch: Path) -> None:
        self.host = str(settings["host"])
        self.ssh = shlex.split(str(settings.get("ssh", "ssh")))
        self.scp = shlex.split(str(settings.get("scp", "scp")))
        self.remote = f"{str(settings.get('remote_dir', '/tmp/speedpatch')).rstrip('/')}/sp-{uuid.uuid4().hex[:12]}"
        self.scratch = scratch  # local cwd for the ssh/scp processes themselves
        self.where = f"host {self.host}"

    def _ssh(self, command: str, timeout: float, stdin: str | None = None) -> ProcResult:
        # trusted: ssh/scp need the network and your keys; the candidate runs on the host, outside our sandbox
        return run_process([*self.ssh, self.host, command], cwd=self.scratch, timeout=timeout, trusted=True,
                           input_text=stdin)

    def upload(self, local_dir: Path, timeout: float) -> ProcResult | None:
        made = self._ssh(f"mkdir -p {shlex.quote(self.remote)}", timeout)
        if made.returncode != 0:
            return made
        files = sorted(str(p) for p in local_dir.iterdir() if p.is_file())
        copied = run_process([*self.scp, "-q", *files, f"{self.host}:{self.remote}/"], cwd=self.scratch, timeout=timeout,
                             trusted=True)
        return None if copied.returncode == 0 else copied

    def run(self, argv: list[str], timeout: float, stdin: str | None = None) -> ProcResult:
        return self._ssh(f"cd {shlex.quote(self.remote)} && {shlex.join(argv)}", timeout, stdin)

    def fetch(self, name: str, timeout: float) -> str | None:
        local = self.scratch / f"fetched-{name}"
        copied = run_process([*self.scp, "-q", f"{self.host}:{self.remote}/{name}", str(local)], cwd=self.scratch,
                             timeout=timeout, trusted=True)
        if copied.returncode != 0:
            return None
        try:
            return local.read_text(errors="replace")
        except OSError:
            return None

    def cleanup(self) -> None:
        self._ssh(f"rm -rf {shlex.quote(self.remote)}", 30)
