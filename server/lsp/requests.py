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
        located = session.locate(run_id)
        if located is None:
            raise JsonRpcInvalidParams(f"no run {run_id!r}")
        folder, record = located
        report = run_report(folder.store, record, folder.index.path_of(record), session.is_stale(folder, record))
        report["run"] = session.record_summary(folder, record)  # the same summary, labelled with its folder
        return report
