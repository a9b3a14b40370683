"""Accept on save: when a saved kernel is an applied winner, re-verify it on the run's backend.

The saved file is checked as it is (its harness is the user's truth for correctness), but a speedup is
only claimed against the run's baseline when the file is the run's problem outside the kernel region: a
harness edited after the run (a smaller MAT_DIM_I) would otherwise make the kept rewrite look faster than
it is.

The evaluation runs on a one-thread executor (it spawns the backend's subprocesses and may take a
while); its verdict is stored with the run id and shown by the lens, the inlay hint and, if the rewrite
no longer holds, a Warning diagnostic and message.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from speedpatch.engine import boundary
from speedpatch.model import source_hash
from speedpatch.states import Freshness, VerificationState

from .engine import api
from .formatting import measured, value_text
from .verify import Verification, judge

if TYPE_CHECKING:
    from speedpatch.config import Config
    from speedpatch.store import RunRecord

    from .docviews import DocumentViews
    from .folders import Folder


class AcceptOnSave:
    def __init__(
        self,
        views: DocumentViews,
        make_config: Callable[[Folder, dict[str, Any] | None], Config],
        show: Callable[[str, types.MessageType], None],
        refresh_editor: Callable[[], None],
    ):
        self.views = views
        self._make_config = make_config
        self._show = show  # thread-safe, as is refresh_editor: both are called from the executor
        self._refresh_editor = refresh_editor
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="speedpatch-verify")

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    def on_save(self, uri: str) -> None:
        views, _, text = self.views.views(uri)
        path = self.views.path_of(uri)
        if path is None:
            return
        folder = self.views.folder_for(path)
        store = folder.verifications
        started = False
        for view in views:
            record = view.record
            if record is None or view.freshness != Freshness.APPLIED or view.job is not None:
                continue
            file_hash = source_hash(text)
            kernel_hash = source_hash(view.kernel.text.rstrip())
            known = store.get(record.run_id)
            if known and known.file_hash == file_hash and known.kernel_hash == kernel_hash:
                continue  # this exact file was verified already
            base, unit = measured(record.baseline)
            v = Verification(
                run_id=record.run_id,
                kernel=record.kernel,
                kernel_hash=kernel_hash,
                file_hash=file_hash,
                unit=unit,
                baseline_value=base,
                backend=record.backend,
            )
            store.put(v)
            self._executor.submit(self._verify, folder, v, path, text, record)
            started = True
        if started:
            self._refresh_editor()

    def _verify(self, folder: Folder, v: Verification, path: str, text: str, record: RunRecord) -> None:
        try:
            config = self._make_config(folder, None)
            problem = api().make_problem(path, text, v.kernel, config, backend=v.backend)
            judge(v, api().evaluate(problem, None, config))
            changed = boundary.outside_change(record.problem, text)
            # a different problem: its figure is not comparable
            if changed and v.state == VerificationState.HOLDS:
                v.speedup = None
                v.message = (f"correct on re-verification ({value_text(v.value, v.unit)}, {v.backend}); not "
                             f"compared with the run's baseline: the file changed outside the kernel ({changed})")
        except Exception as exc:  # an infrastructure failure is a verdict to show, never a server crash
            v.state, v.message = VerificationState.FAILED, f"re-verification could not run: {exc}"
        folder.verifications.put(v)
        if v.state == VerificationState.FAILED:
            self._show(f"speedpatch: {v.kernel}: {v.message}", types.MessageType.Warning)
        self._refresh_editor()  # (posted to the loop thread)
