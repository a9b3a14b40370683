"""The custom requests speedpatch/candidate, speedpatch/runs and speedpatch/runReport."""

from __future__ import annotations

from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from . import params
from .commands import candidate
from .reports import run_report
from .session import Session

CANDIDATE = "speedpatch/candidate"
RUNS = "speedpatch/runs"
RUN_REPORT = "speedpatch/runReport"


def register(server: LanguageServer, session: Session) -> None:
    @server.feature(CANDIDATE)
    def get_candidate(raw):
        arg = params.plain(raw) or {}
        return candidate(session, params.text(arg, "runId"), params.text(arg, "candidateId", required=False))

    @server.feature(RUNS)
    def get_runs(raw):
        return session.all_summaries()

    @server.feature(RUN_REPORT)
    def get_report(raw):
        arg = params.plain(raw) or {}
        run_id = params.text(arg, "runId")
        assert session.index is not None and session.store is not None
        record = session.index.get(run_id)
        if record is None:
            raise JsonRpcInvalidParams(f"no run {run_id!r}")
        return run_report(session.store, record, session.record_path(record), session.is_stale(record))
