"""A remote host on this machine, for tests of backends that use ssh and scp: stand-in `ssh` and `scp`
scripts (run as real processes) that do with commands and files what sshd and scp would, and record
every ssh call, so that a test can see what reached the "host"."""

from __future__ import annotations

import stat
from pathlib import Path

# scp -q [HOST:]FILE... [HOST:]DEST  ->  cp FILE... DEST
SCP = ('args=("$@"); dest="${args[-1]}"; unset "args[${#args[@]}-1]"\n'
       'files=(); for a in "${args[@]}"; do [ "$a" != -q ] && files+=("${a#*:}"); done\n'
       'exec cp "${files[@]}" "${dest#*:}"\n')


def script(path: Path, body: str) -> str:
    """An executable bash script at `path`; its path as a string (for settings)."""
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def fake_ssh(folder: Path, log: Path) -> str:
    """`ssh HOST COMMAND`: records HOST and COMMAND in `log` (see ssh_calls), then runs COMMAND with bash, as
    sshd hands it to the login shell."""
    return script(folder / "ssh", f'host="$1"; shift; printf "%s|%s\\0" "$host" "$*" >> {log}\nexec bash -c "$*"\n')


def fake_scp(folder: Path) -> str:
    """`scp -q SOURCE... DEST` where `HOST:` before a path is dropped: a copy on this machine."""
    return script(folder / "scp", SCP)


def ssh_calls(log: Path) -> list[tuple[str, str]]:
    """(host, command) of every call the fake ssh recorded, in order; none when it was never called."""
    if not log.exists():
        return []
    calls = log.read_text().split("\0")[:-1]
    return [(host, command) for host, _, command in (call.partition("|") for call in calls)]
