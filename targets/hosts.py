"""Where a backend runs commands: this machine, in speedpatch's sandbox, or a remote host over ssh/scp.

One small interface, `Host`, with two kinds; what runs there (nvcc and the CUDA bench, the Neuron runner,
a Gemmini user command) stays in the targets:

    upload(folder)   the folder's files become the place commands run in (remotely: copied there by scp
                     into a fresh sp-<random> folder under remote_dir)
    run(argv)        a command, as a list, in that place (before an upload: where the host starts)
    shell(command)   a shell command line as written (the remote login shell's; here /bin/sh -c)
    fetch(name)      the text of a file a command wrote in that place, or None
    cleanup()        remove what upload made on a remote host
    lost(result)     whether a result says the connection failed rather than the command

Remote settings (the backend's table in speedpatch.toml): host (anything ssh accepts: an alias, user@host),
ssh ("ssh", may carry options), scp ("scp"), remote_dir ("/tmp/speedpatch").

Trust: here, commands run in the sandbox (targets/sandbox.py) unless a backend's user opts out; ssh and scp
run trusted (they need the network and your keys), so a candidate sent to a host runs outside our sandbox,
on that host.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from speedpatch.targets.sandbox import ProcResult, run_process

SSH_FAILED = 255  # ssh's own exit status when it cannot connect or the connection drops
THIS_MACHINE = "this machine"


# the settings every backend that can run over SSH takes (SshHost)
REMOTE_KEYS = frozenset({"host", "ssh", "scp", "remote_dir"})


def where(settings: dict[str, Any]) -> str:
    """Where a backend with these settings runs, for messages and receipts: "host gpu1" or "this machine"."""
    return f"host {settings['host']}" if settings.get("host") else THIS_MACHINE


class Host(Protocol):
    where: str  # for messages and receipts: "this machine", "host gpu1"
    address: str | None  # the remote host as ssh names it; None for this machine
    default_python: str  # the Python a backend runs there when its settings name none

    def upload(self, local_dir: Path, timeout: float) -> ProcResult | None:
        """Make local_dir's files the place commands run in; a ProcResult describes a failure, None is success."""

    def run(self, argv: Sequence[str], timeout: float, stdin: str | None = None) -> ProcResult:
        """Run argv in the uploaded folder; `stdin` is written to its standard input."""

    def shell(self, command: str, timeout: float, stdin: str | None = None) -> ProcResult:
        """Run a shell command line as written (its words, quotes and expansions are the shell's)."""

    def fetch(self, name: str, timeout: float) -> str | None:
        """The whole text of a file a command wrote in the uploaded folder, or None."""

    def cleanup(self) -> None: ...

    def lost(self, result: ProcResult) -> bool:
        """Whether `result` is a failed connection to the host rather than the command's own exit."""


class LocalHost:
    """This machine. `sandboxed` False runs commands trusted (the user's own command asked for it: it needs
    the network or their home); `devices` are the device-node globs the sandbox shows; `result_channel`
    gives each process the sandbox's private result pipe (ProcResult.result)."""

    where = THIS_MACHINE
    address: str | None = None
    default_python = sys.executable

    def __init__(self, cwd: Path, *, env: dict[str, str] | None = None, devices: Iterable[str] = (),
                 sandboxed: bool = True, result_channel: bool = False) -> None:
        self.cwd = Path(cwd)
        self.env = env
        self.devices = tuple(devices)
        self.sandboxed = sandboxed
        self.result_channel = result_channel

    def upload(self, local_dir: Path, timeout: float) -> ProcResult | None:
        self.cwd = Path(local_dir)  # already here: commands run in it
        return None

    def run(self, argv: Sequence[str], timeout: float, stdin: str | None = None) -> ProcResult:
        return run_process(list(argv), cwd=self.cwd, timeout=timeout, env=self.env, input_text=stdin,
                           trusted=not self.sandboxed, devices=self.devices, result_channel=self.result_channel)

    def shell(self, command: str, timeout: float, stdin: str | None = None) -> ProcResult:
        return self.run(["/bin/sh", "-c", command], timeout, stdin)

    def fetch(self, name: str, timeout: float) -> str | None:
        try:
            return (self.cwd / name).read_text(errors="replace")
        except OSError:
            return None

    def cleanup(self) -> None:  # the folder belongs to the caller
        pass

    def lost(self, result: ProcResult) -> bool:
        return False


class SshHost:
    """A remote host reached with the settings' ssh and scp. `scratch` is the local folder the ssh and scp
    processes run in (fetched files land there); `env` is their environment (default: speedpatch's)."""

    default_python = "python3"

    def __init__(self, settings: dict[str, Any], scratch: Path, env: dict[str, str] | None = None) -> None:
        self.address: str | None = str(settings["host"])
        self.ssh = shlex.split(str(settings.get("ssh", "ssh")))
        self.scp = shlex.split(str(settings.get("scp", "scp")))
        self.remote_root = str(settings.get("remote_dir", "/tmp/speedpatch")).rstrip("/")
        self.dir: str | None = None  # the remote folder upload made
        self.scratch = Path(scratch)
        self.env = env
        self.where = where(settings)

    def _trusted(self, argv: list[str], timeout: float, stdin: str | None = None) -> ProcResult:
        # trusted: ssh/scp need the network and your keys; the candidate runs on the host, outside our sandbox
        return run_process(argv, cwd=self.scratch, timeout=timeout, env=self.env, input_text=stdin, trusted=True)

    def shell(self, command: str, timeout: float, stdin: str | None = None) -> ProcResult:
        return self._trusted([*self.ssh, str(self.address), command], timeout, stdin)

    def run(self, argv: Sequence[str], timeout: float, stdin: str | None = None) -> ProcResult:
        command = shlex.join(argv)
        return self.shell(f"cd {shlex.quote(self.dir)} && {command}" if self.dir else command, timeout, stdin)

    def upload(self, local_dir: Path, timeout: float) -> ProcResult | None:
        folder = f"{self.remote_root}/sp-{uuid.uuid4().hex[:12]}"
        made = self.shell(f"mkdir -p {shlex.quote(folder)}", timeout)
        if made.returncode != 0:
            return made
        self.dir = folder
        files = sorted(str(p) for p in Path(local_dir).iterdir() if p.is_file())
        copied = self._trusted([*self.scp, "-q", *files, f"{self.address}:{folder}/"], timeout)
        return None if copied.returncode == 0 else copied

    def fetch(self, name: str, timeout: float) -> str | None:
        local = self.scratch / f"fetched-{name}"
        remote = f"{self.dir}/{name}" if self.dir else name
        copied = self._trusted([*self.scp, "-q", f"{self.address}:{remote}", str(local)], timeout)
        if copied.returncode != 0:
            return None
        try:
            return local.read_text(errors="replace")
        except OSError:
            return None

    def cleanup(self) -> None:
        if self.dir:
            self.shell(f"rm -rf {shlex.quote(self.dir)}", 30)
            self.dir = None

    def lost(self, result: ProcResult) -> bool:
        return result.returncode == SSH_FAILED


def host_for(settings: dict[str, Any], scratch: Path, *, env: dict[str, str] | None = None,
             devices: Iterable[str] = ()) -> LocalHost | SshHost:
    """The remote host the settings name (host = "..."), else this machine, sandboxed with `devices`."""
    if settings.get("host"):
        return SshHost(settings, scratch, env)
    return LocalHost(scratch, env=env, devices=devices)


def missing_ssh_tool(settings: dict[str, Any]) -> str:
    """'' when the settings' ssh and scp commands are found here, else which one is not."""
    for key in ("ssh", "scp"):
        command = shlex.split(str(settings.get(key, key)))
        if not command or shutil.which(command[0]) is None:
            return f"{key} command not found: {settings.get(key, key)}"
    return ""
