"""Documents as kernel views: the editor's buffer (or the file on disk), the kernels in it, and for each one
what the editor shows (runnable or why not, the live job, the latest stored run and its freshness, the
re-verification of an applied rewrite). Lenses, hints, diagnostics and code actions all read these views.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from speedpatch.model import Kernel
from speedpatch.states import Freshness
from speedpatch.store import RunRecord

from .backends import BackendChooser
from .documents import Detection, Detector, kernel_named
from .folders import Folder, Folders
from .index import norm_path
from .runs import Job
from .views import KernelView, freshness, verification_for

JobLookup = Callable[[str, str], "Job | None"]
"""(path, kernel) -> the queued or running search for that kernel, if any."""


class DocumentViews:
    def __init__(
        self,
        server: LanguageServer,
        folders: Folders,
        detector: Detector,
        backends: BackendChooser,
        job_for: JobLookup,
        external_staleness: Callable[[str], str],
    ):
        self.server = server
        self.folders = folders
        self.detector = detector
        self.backends = backends
        self._job_for = job_for
        self._external = external_staleness  # run id -> why its file changed outside the editor ("" if not)
        self._winner_texts: dict[tuple[str, str], str | None] = {}

    # ---------------------------------------------------------------- documents
    def path_of(self, uri: str) -> str | None:
        if not uri.startswith("file:"):
            return None
        fs = to_fs_path(uri)
        return norm_path(fs) if fs else None

    def text_of(self, uri: str) -> str | None:
        """The editor's buffer when open, else the file on disk."""
        try:
            doc = self.server.workspace.text_documents.get(uri)
        except RuntimeError:
            doc = None
        if doc is not None:
            return doc.source
        path = self.path_of(uri)
        if path is None:
            return None
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def uri_for_path(self, path: str) -> str:
        # prefer the exact uri the editor used for an open document
        for uri in list(self.server.workspace.text_documents):
            if self.path_of(uri) == path:
                return uri
        return from_fs_path(path) or path

    def folder_for(self, path: str) -> Folder:
        return self.folders.owner(path)

    def detect(self, uri: str) -> tuple[Detection, str, str | None]:
        text = self.text_of(uri)
        path = self.path_of(uri)
        if text is None or path is None:
            return Detection(), text or "", path
        return self.detector.detect(uri, path, text), text, path

    # ---------------------------------------------------------------- views
    def views(self, uri: str) -> tuple[list[KernelView], Detection, str]:
        detection, text, path = self.detect(uri)
        if path is None:
            return [], detection, text
        return [self._view(k, path, detection) for k in detection.kernels], detection, text

    def view(self, uri: str, kernel: str) -> KernelView | None:
        views, _, _ = self.views(uri)
        return next((v for v in views if v.kernel.name == kernel), None)

    def _view(self, kernel: Kernel, path: str, detection: Detection) -> KernelView:
        folder = self.folder_for(path)
        backend = self.backends.backend_for(kernel.target, folder.config)
        runnable, reason, untimed = kernel.runnable, kernel.reason, False
        if runnable and detection.syntax:
            # the baseline would fail to compile: say why now, where the user is typing
            runnable, reason = False, f"the file does not parse ({detection.syntax})"
        if runnable:
            if not backend:
                runnable, reason = False, f"no backend configured for target {kernel.target}"
            else:
                avail = self.backends.availability(kernel.target, backend, folder.config)
                if not avail.usable:
                    runnable, reason = False, f"backend {backend} is not usable here: {avail.reason}"
                    untimed = self.backends.cannot_time(kernel.target, backend)
        view = KernelView(kernel=kernel, backend=backend, runnable=runnable, reason=reason, untimed=untimed)
        view.job = self._job_for(path, kernel.name)
        record = folder.index.latest(path, kernel.name)
        if record is None or (view.job is not None and view.job.run_id == record.run_id):
            return view
        view.record = record
        state, why = freshness(record, kernel, self.winner_text(record), self._external(record.run_id))
        view.freshness, view.stale_reason = state, why
        if state == Freshness.APPLIED:
            view.verification = verification_for(folder.verifications.get(record.run_id), kernel)
            view.saved = self._disk_holds(path, kernel)
        return view

    def _disk_holds(self, path: str, kernel: Kernel) -> bool:
        """Whether the file on disk has this kernel text (an applied rewrite that was saved)."""
        try:
            disk = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        on_disk = kernel_named(self.detector.detect(f"speedpatch-disk:{path}", path, disk).kernels, kernel.name)
        return on_disk is not None and on_disk.text.rstrip() == kernel.text.rstrip()

    def winner_text(self, record: RunRecord) -> str | None:
        """The winning candidate's kernel text (what the document holds once the rewrite is applied)."""
        if record.best is None or record.baseline is None or record.best.id == record.baseline.id:
            return None
        # (run, candidate) names immutable content, so entries never go stale
        key = (record.run_id, record.best.id)
        if key in self._winner_texts:
            return self._winner_texts[key]
        found = self.detector.detect(f"speedpatch-run:{record.run_id}", record.path, record.best.source)
        winner = kernel_named(found.kernels, record.kernel)
        text = winner.text if winner else None
        self._winner_texts[key] = text
        return text
