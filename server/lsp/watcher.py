"""watchdog on the workspace root: kernel files changed outside the editor, speedpatch.toml edits, and
writes to the run store by other processes (the CLI).

Events arrive in bursts (an editor save is several events, SQLite touches its WAL on every commit), so
they are coalesced per path for a short delay before the session is told. The store's data_version is
also polled now and then: file events are not guaranteed on every file system.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from speedpatch import targets
from speedpatch.config import CONFIG_FILE
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from .index import norm_path

if TYPE_CHECKING:
    from .session import Session

log = logging.getLogger(__name__)

DEBOUNCE_S = 0.3
POLL_S = 3.0
_IGNORED_DIRS = {".git", "node_modules", "__pycache__", ".venv"}


class WorkspaceWatcher(FileSystemEventHandler):
    def __init__(self, session: Session):
        self.session = session
        self.root = session.root
        self.store_dir = norm_path(self.root / ".speedpatch")
        self.config_path = norm_path(self.root / CONFIG_FILE)
        self._pending: dict[str, float] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._observer = Observer()
        self._thread = threading.Thread(target=self._drain, name="speedpatch-watch", daemon=True)

    def start(self) -> None:
        try:
            self._observer.schedule(self, str(self.root), recursive=True)
            self._observer.start()
        except Exception as exc:  # e.g. inotify limits: polling the store still shows CLI runs
            log.warning("cannot watch %s: %s", self.root, exc)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        try:
            self._observer.stop()
            self._observer.join(timeout=2)
        except RuntimeError:
            pass

    # watchdog thread: record and return quickly
    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type in ("opened", "closed_no_write"):
            return
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if raw:
                path = str(raw if isinstance(raw, str) else raw.decode())
                if not (set(Path(path).parts) & _IGNORED_DIRS):
                    with self._lock:
                        self._pending[path] = time.monotonic()
                    self._wake.set()

    def _drain(self) -> None:
        last_poll = time.monotonic()
        while not self._stop.is_set():
            # wake at least twice per debounce period; a path is handed on once it has been quiet that long
            self._wake.wait(timeout=DEBOUNCE_S / 2)
            self._wake.clear()
            now = time.monotonic()
            with self._lock:
                ready = [p for p, t in self._pending.items() if now - t >= DEBOUNCE_S]
                for p in ready:
                    del self._pending[p]
            try:
                self._dispatch(ready)
                if now - last_poll >= POLL_S:
                    last_poll = now
                    self.session.on_store_change()
            except Exception:
                log.exception("handling file changes failed")

    def _dispatch(self, paths: list[str]) -> None:
        if not paths:
            return
        store_changed = False
        kernel_files: set[str] = set()
        extensions = {e for t in targets.all_targets() for e in t.extensions}
        for raw in paths:
            path = norm_path(raw)
            if path.startswith(self.store_dir):
                store_changed = True
            elif path == self.config_path:
                self.session.on_config_change()
            elif Path(path).suffix.lower() in extensions:
                kernel_files.add(path)
        if store_changed:
            self.session.on_store_change()
        for path in sorted(kernel_files):
            self.session.on_disk_change(path)
