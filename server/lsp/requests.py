"""The custom requests speedpatch/candidate, speedpatch/runs, speedpatch/runReport and speedpatch/targets."""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from .arguments import CandidateArgs, NoArgs, RunArgs, parse
from .commands import candidate
from .reports import run_report
from .state import SpeedpatchServer
from .targetinfo import TARGETS, get_targets

CANDIDATE = "speedpatch/candidate"
RUNS = "speedpatch/runs"
RUN_REPORT = "speedpatch/runReport"


def get_candidate(ls: SpeedpatchServer, raw: Any) -> dict[str, Any]:
    """{"runId", "candidateId"?} -> a candidate's texts and measurements, for a diff."""
    arg = parse(CandidateArgs, raw, CANDIDATE)
    return candidate(ls, arg.run_id, arg.candidate_id)


def get_runs(ls: SpeedpatchServer, raw: Any) -> list[dict[str, Any]]:
    """{} -> the summaries of every open folder's runs."""
    parse(NoArgs, raw, RUNS)
    return ls.state.runs.all_summaries()


def get_report(ls: SpeedpatchServer, raw: Any) -> dict[str, Any]:
    """{"runId"} -> the run's summary, iterations, candidates and failures."""
    run_id = parse(RunArgs, raw, RUN_REPORT).run_id
    runs = ls.state.runs
    located = runs.locate(run_id)
    if located is None:
        raise JsonRpcInvalidParams(f"no run {run_id!r}")
    folder, record = located
    report = run_report(folder.store, record, folder.index.path_of(record), runs.staleness.is_stale(folder, record))
    report["run"] = runs.record_summary(folder, record)  # the same summary, labelled with its folder
    return report


def register(server: SpeedpatchServer) -> None:
    for name, handler in [
        (CANDIDATE, get_candidate),
        (RUNS, get_runs),
        (RUN_REPORT, get_report),
        (TARGETS, get_targets),
    ]:
        server.feature(name)(handler)
