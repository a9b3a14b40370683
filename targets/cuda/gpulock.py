"""One timing run per GPU at a time. The engine evaluates candidates in parallel; builds may overlap,
but two harnesses timing on the same GPU would slow each other and corrupt both measurements. An
exclusive file lock (works across threads and processes of this machine) serialises the run step."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def gpu_lock(directory: Path, key: str, timeout: float) -> Iterator[bool]:
    """Yields True once the lock for `key` is held, False if `timeout` seconds passed first."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"gpu-{re.sub(r'[^A-Za-z0-9_.-]', '_', key)}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    held = False
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.05)
        yield held
    finally:
        if held:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
