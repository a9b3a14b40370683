"""An in-memory view of the run store, so editor requests never wait on SQLite.

Reloaded only when the store's data_version changes (our runs, or the CLI writing from another process).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from speedpatch.store import RunRecord, Store

log = logging.getLogger(__name__)


def norm_path(path: str | os.PathLike[str], root: Path | None = None) -> str:
    """One spelling per file: absolute, symlinks resolved (runs may be recorded relative to the root)."""
    p = Path(path)
    if not p.is_absolute() and root is not None:
        p = root / p
    try:
        return str(p.resolve())
    except OSError:
        return str(p.absolute())


class RunIndex:
    def __init__(self, store: Store, root: Path):
        self.store = store
        self.root = root
        self._lock = threading.Lock()
        self._version: int | None = None
        self._runs: list[RunRecord] = []
        self._by_id: dict[str, RunRecord] = {}
        self._latest: dict[tuple[str, str], RunRecord] = {}
        self._paths: dict[str, str] = {}

    def refresh(self, force: bool = False) -> bool:
        """Reload if anything was written since the last load. Returns whether it reloaded."""
        try:
            version = self.store.data_version()
            if not force and version == self._version:
                return False
            runs = self.store.list_runs()  # newest first
        except Exception:  # a locked or half-written database: keep what we have, retry next time
            log.exception("reading the run store failed")
            return False
        latest: dict[tuple[str, str], RunRecord] = {}
        for record in runs:
            latest.setdefault((self.path_of(record), record.kernel), record)
        with self._lock:
            self._version = version
            self._runs = runs
            self._by_id = {r.run_id: r for r in runs}
            self._latest = latest
        return True

    def path_of(self, record: RunRecord) -> str:
        cached = self._paths.get(record.path)
        if cached is None:
            cached = self._paths[record.path] = norm_path(record.path, self.root)
        return cached

    def latest(self, path: str, kernel: str) -> RunRecord | None:
        with self._lock:
            return self._latest.get((path, kernel))

    def get(self, run_id: str) -> RunRecord | None:
        with self._lock:
            found = self._by_id.get(run_id)
        if found is None:
            # written a moment ago and not reloaded yet: ask the store directly
            try:
                found = self.store.get_run(run_id)
            except KeyError:
                return None
        return found

    def all(self) -> list[RunRecord]:
        with self._lock:
            return list(self._runs)

    def for_path(self, path: str) -> list[RunRecord]:
        with self._lock:
            return [r for (p, _), r in self._latest.items() if p == path]
