"""Staleness of stored runs: whether a run still describes its kernel, in the editor and on disk.

A run is stale when its kernel was edited since it started (seen in the document, views.freshness), or
when its file changed on disk outside the editor (another tool, a git checkout): the watcher reports
those changes here, and the reason is kept per run until the file matches again.
"""

from __future__ import annotations

import threading
from pathlib import Path

from speedpatch.states import Freshness
from speedpatch.store import RunRecord

from .documents import kernel_named
from .docviews import DocumentViews
from .folders import Folder
from .views import disk_staleness, freshness


class StalenessTracker:
    def __init__(self, views: DocumentViews):
        self.views = views
        self._external: dict[str, str] = {}  # run id -> why (file changed on disk outside the editor)
        self._lock = threading.Lock()  # written on the watcher thread, read on the loop thread

    def external(self, run_id: str) -> str:
        """Why the run's file changed on disk outside the editor ("" when it did not)."""
        with self._lock:
            return self._external.get(run_id, "")

    def is_stale(self, folder: Folder, record: RunRecord) -> bool:
        if self.external(record.run_id):
            return True
        views = self.views
        path = folder.index.path_of(record)
        uri = views.uri_for_path(path)
        text = views.text_of(uri)
        if text is None:
            return False
        found = views.detector.detect(uri, path, text)
        state, _ = freshness(record, kernel_named(found.kernels, record.kernel), views.winner_text(record))
        return state == Freshness.STALE

    def on_disk_change(self, path: str) -> bool:
        """A kernel file changed on disk (watcher thread); True when that changed any run's staleness.
        Saves from the editor leave disk == buffer and are not external; anything else that no longer
        matches a run's start or winner marks it stale."""
        views = self.views
        # any folder's runs may describe the file (nested folders: the outer one may hold older runs)
        records = [r for folder in views.folders.all() for r in folder.index.for_path(path)]
        if not records:
            return False  # no run describes this file: nothing can go stale
        uri = views.uri_for_path(path)
        try:
            disk = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            disk = None
        buffer = views.server.workspace.text_documents.get(uri)
        if buffer is not None and disk is not None and buffer.source == disk:
            return False
        changed = False
        for record in records:
            current = None
            if disk is not None:
                found = views.detector.detect(f"speedpatch-disk:{path}", path, disk)
                current = kernel_named(found.kernels, record.kernel)
            why = disk_staleness(record, disk, current, views.winner_text(record))
            with self._lock:
                if why and self._external.get(record.run_id) != why:
                    self._external[record.run_id] = why
                    changed = True
                elif not why and record.run_id in self._external:
                    del self._external[record.run_id]
                    changed = True
        return changed
