"""The JSON shapes of docs/lsp-protocol.md: run summaries, candidate payloads (for diffs), run reports."""

from __future__ import annotations

from typing import Any

from pygls.uris import from_fs_path
from speedpatch.model import Candidate
from speedpatch.states import EvalStatus
from speedpatch.store import RunRecord, Store
from speedpatch.verdict import verdict

from .failures import first_line, tally
from .formatting import measured, speedup_of
from .runs import Job


def summary_of_record(record: RunRecord, path: str, stale: bool = False) -> dict[str, Any]:
    base, unit = measured(record.baseline)
    best, best_unit = measured(record.best)
    return {
        "runId": record.run_id,
        "uri": from_fs_path(path) or path,
        "kernel": record.kernel,
        "target": record.target,
        "backend": record.backend,
        "status": record.status,
        "iteration": record.iteration,
        "iterations": record.iterations,
        "speedup": record.speedup,
        "bestValue": best,
        "baselineValue": base,
        "unit": unit or best_unit,
        "evaluations": {
            "total": int((record.evaluations or {}).get("total", 0)),
            "correct": int((record.evaluations or {}).get("correct", 0)),
        },
        "created": record.created,
        "message": record.message,
        "stale": stale,  # extra field: the kernel or its file changed since the run
        "verdict": record.verdict.to_dict(),
        "executor": (record.config.get("search") or {}).get("executor", "local"),
    }


def summary_of_job(job: Job) -> dict[str, Any]:
    return {
        "runId": job.run_id,
        "uri": job.uri,
        "kernel": job.kernel,
        "target": job.target,
        "backend": job.backend,
        "status": job.status,
        "iteration": job.iteration,
        "iterations": job.iterations,
        "speedup": job.speedup,
        "bestValue": job.best_value,
        "baselineValue": job.baseline_value,
        "unit": job.unit,
        "evaluations": {"total": job.evaluated, "correct": job.correct},
        "created": job.created,
        "message": job.message,
        "stale": False,
        "failures": job.failures.to_dict(),  # extra field: failed candidates so far, by why
    }


def candidate_payload(store: Store, record: RunRecord, path: str, candidate_id: str | None) -> dict[str, Any]:
    """Everything a client needs to show a real diff of one candidate against the run's starting file."""
    if candidate_id:
        candidate = store.get_candidate(record.run_id, candidate_id)
    elif record.best is not None:
        candidate = record.best
    else:
        raise KeyError(f"run {record.run_id} has no best candidate yet")
    base, unit = measured(record.baseline)
    value, value_unit = measured(candidate)
    ok = candidate.evaluation is not None and candidate.evaluation.status == EvalStatus.OK
    speedup = speedup_of(base, value) if ok else None
    lineage = store.lineage(record.run_id, candidate.id)
    judged = verdict(record.baseline, candidate)
    return {
        "runId": record.run_id,
        "candidateId": candidate.id,
        "uri": from_fs_path(path) or path,
        "kernel": record.kernel,
        "originalText": record.problem.source,
        "newText": candidate.source,
        "speedup": speedup,
        "baseline": {"value": base, "unit": unit},
        "best": {"value": value, "unit": value_unit or unit},
        "backend": record.backend,
        "receipt": (candidate.evaluation.receipt if candidate.evaluation else {}) or {},
        "verdict": judged.to_dict(),
        "lineage": [_lineage_item(c) for c in lineage],
        "title": f"speedpatch: {record.kernel} {judged.short} ({record.backend})"
        if speedup
        else f"speedpatch: {record.kernel} candidate {candidate.id} ({record.backend})",
    }


def _lineage_item(c: Candidate) -> dict[str, Any]:
    value, unit = measured(c)
    return {"id": c.id, "iteration": c.iteration, "plan": c.plan, "value": value, "unit": unit}


def run_report(store: Store, record: RunRecord, path: str, stale: bool = False) -> dict[str, Any]:
    candidates = store.candidates(record.run_id)
    by_id = {c.id: c for c in candidates}
    iterations = []
    for iteration, beam in sorted(store.beams(record.run_id).items()):
        values = [
            v for v in (measured(by_id[c])[0] for c in beam if c in by_id and _ok(by_id[c])) if v is not None
        ]
        iterations.append(
            {"iteration": iteration, "best": min(values) if values else None, "beam": list(beam)}
        )
    return {
        "run": summary_of_record(record, path, stale),
        "iterations": iterations,
        "candidates": [
            {
                "id": c.id,
                "parentId": c.parent_id,
                "iteration": c.iteration,
                "plan": c.plan,
                "status": c.evaluation.status if c.evaluation else "pending",
                "value": measured(c)[0],
                "unit": measured(c)[1],
                "model": c.model,
                "message": first_line(c.evaluation.message) if c.evaluation else "",  # why it failed
            }
            for c in candidates
        ],
        "failures": tally(candidates).to_dict(),
    }


def _ok(c: Candidate) -> bool:
    return c.evaluation is not None and c.evaluation.status == EvalStatus.OK
