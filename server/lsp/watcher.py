"""watchdog on every workspace folder: kernel files changed outside the editor, speedpatch.toml edits, and
writes to the run store by other processes (the CLI).

Events arrive in bursts (an editor save is several events, SQLite touches its WAL on every commit), so
they are coalesced per path for a short delay before the callbacks are told. The store's data_version is
also polled now and then: file events are not guaranteed on every file system.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from speedpatch import targets
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from .index import norm_path

if TYPE_CHECKING:
    from .folders import Folder, Folders

log = logging.getLogger(__name__)

DEBOUNCE_S = 0.3
POLL_S = 3.0
_IGNORED_DIRS = {".git", "node_modules", "__pycache__", ".venv"}


class WorkspaceWatcher(FileSystemEventHandler):
    """Watches the folders and tells three callbacks (called on this watcher's thread) what changed: a
    folder's run store (None: any, the periodic poll), a folder's speedpatch.toml, a kernel file."""

    def __init__(
        self,
        folders: Folders,
        on_store_change: Callable[[Folder | None], None],
        on_config_change: Callable[[Folder], None],
        on_disk_change: Callable[[str], None],
    ):
        self.folders = folders
        self._on_store_change = on_store_change
        self._on_config_change = on_config_change
        self._on_disk_change = on_disk_change
        self._watches: dict[str, Any] = {}  # folder root -> watchdog's handle, to unwatch it
        self._pending: dict[str, float] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._observer = Observer()
        self._thread = threading.Thread(target=self._drain, name="speedpatch-watch", daemon=True)

    def start(self, folders: list[Folder]) -> None:
        try:
            self._observer.start()
        except Exception as exc:  # polling the stores still shows CLI runs
            log.warning("cannot watch files: %s", exc)
        for folder in folders:
            self.watch(folder)
        self._thread.start()

    def watch(self, folder: Folder) -> None:
        try:
            self._watches[str(folder.root)] = self._observer.schedule(self, str(folder.root), recursive=True)
        except Exception as exc:  # e.g. inotify limits: polling the store still shows CLI runs
            log.warning("cannot watch %s: %s", folder.root, exc)

    def unwatch(self, folder: Folder) -> None:
        watch = self._watches.pop(str(folder.root), None)
        if watch is not None:
            try:
                self._observer.unschedule(watch)
            except Exception as exc:  # already gone (the folder was deleted): nothing left to stop
                log.debug("unwatching %s: %s", folder.root, exc)

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
                    self._on_store_change(None)
            except Exception:
                log.exception("handling file changes failed")

    def _dispatch(self, paths: list[str]) -> None:
        if not paths:
            return
        folders = self.folders.all()
        stores_changed: dict[str, Folder] = {}
        kernel_files: set[str] = set()
        extensions = {e for t in targets.all_targets() for e in t.extensions}
        for raw in paths:
            path = norm_path(raw)
            store = next((f for f in folders if path.startswith(f.store_dir)), None)
            config = next((f for f in folders if path == f.config_path), None)
            if store is not None:
                stores_changed[str(store.root)] = store
            elif config is not None:
                self._on_config_change(config)
            elif Path(path).suffix.lower() in extensions:
                kernel_files.add(path)
        for folder in stores_changed.values():
            self._on_store_change(folder)
        for path in sorted(kernel_files):
            self._on_disk_change(path)
