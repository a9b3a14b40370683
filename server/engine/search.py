"""The beam search of the Autocomp method.

For T iterations: every beam member gets N plans, every plan K code samples (fix-on-failure gives each
failed sample one repair); all candidates are evaluated in parallel; the next beam is selected by the
method's rules (selection.py). The best correct candidate of the whole run is tracked and stored as the
run goes, so a cancel, a budget running out or a crash never loses it.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from speedpatch.config import Config
from speedpatch.engine import events as ev
from speedpatch.engine.budget import Budget
from speedpatch.engine.executors import ExecutorLost
from speedpatch.engine.pool import EvaluationPool
from speedpatch.engine.proposer import BudgetExhausted, Cancelled, Code, Plan, Proposer, Slot
from speedpatch.engine.reverify import Reverifier, reverify
from speedpatch.engine.schedule import Schedule
from speedpatch.engine.selection import select_beam
from speedpatch.errors import LLMError
from speedpatch.model import Candidate, Evaluation, Problem, source_hash, speedup
from speedpatch.states import EvalStatus, RunStatus
from speedpatch.store import RunRecord, Store

BASELINE_ID = "base"


@dataclass
class Session:
    run_id: str
    problem: Problem
    config: Config
    store: Store
    proposer: Proposer
    pool: EvaluationPool
    budget: Budget
    emit: ev.EventSink
    cancel: threading.Event = field(default_factory=threading.Event)
    stop_reason: str = ""  # set when the run must end early (LLM down, budget)
    stop_status: RunStatus = RunStatus.FINISHED  # how it ends once stop_reason is set
    schedule: Schedule | None = None  # a similar run's plans, one step guiding each iteration
    reverifier: Reverifier | None = None  # the independent backend the winner must also pass (reverify.py)
    counts: dict[str, int] = field(default_factory=lambda: {"evaluated": 0, "correct": 0})
    lock: threading.Lock = field(default_factory=threading.Lock)

    def stopping(self) -> bool:
        return self.cancel.is_set() or bool(self.stop_reason)

    def stop(self, status: RunStatus, reason: str) -> None:
        with self.lock:
            if not self.stop_reason:
                self.stop_status, self.stop_reason = status, reason


def _await(session: Session, fut: Future[Evaluation]) -> Evaluation | None:
    """The evaluation, or None when the run is cancelled or its executor is gone (the run then stops as
    interrupted: nothing is lost, and resuming continues where it stopped)."""
    while True:
        done, _ = wait([fut], timeout=0.2)
        if done:
            try:
                return fut.result()
            except ExecutorLost as exc:
                session.stop(RunStatus.INTERRUPTED, f"{exc}. The run is stored")  # clients say how to resume
                return None
            except CancelledError:
                return None
        if session.cancel.is_set():
            return None


def _evaluate(session: Session, cand: Candidate) -> Candidate | None:
    """Evaluate (or reuse a stored/identical evaluation), store, report. None when stopped first."""
    pool = session.pool
    future = pool.known(cand.source)  # a reused evaluation costs no budget
    if future is None:
        if not session.budget.take_evaluation():
            session.stop(RunStatus.FINISHED, session.budget.exhausted)
            return None
        future = pool.submit(cand.source)
    result = _await(session, future)
    if result is None:
        return None
    cand.evaluation = result
    session.store.save_candidate(cand)
    with session.lock:
        session.counts["evaluated"] += 1
        session.counts["correct"] += int(result.correct)
        counts = dict(session.counts)
    session.emit(ev.Event(ev.CANDIDATE, session.run_id, {"candidate": cand.to_dict(), **counts}))
    return cand


def _child(session: Session, slot: Slot, plan: Plan, code: Code, cid: str, fixed: bool) -> Candidate:
    source = code.source if code.source is not None else ""
    cand = Candidate(
        id=cid, run_id=session.run_id, parent_id=slot.parent.id, iteration=slot.iteration, plan=plan.text,
        source=source, source_hash=source_hash(source), model=code.model, fixed=fixed,
    )
    if code.source is None:
        cand.evaluation = Evaluation(status=EvalStatus.REJECTED, message=f"no code: {code.error}")
        session.store.save_candidate(cand)
    return cand


def _slots(session: Session, parent: Candidate, plans: int) -> int:
    """How many plan slots the proposer gives `parent`; none, said as a warning, when it fails (a bug in the
    proposer or in the target moves it asks for must not end the run)."""
    try:
        return session.proposer.slots(parent, plans)
    except Exception as exc:
        session.emit(ev.Event(ev.WARNING, session.run_id, {
            "message": f"no plans for {parent.id}: the proposer failed ({type(exc).__name__}: {exc})"}))
        return 0


def _run_slot(session: Session, slot: Slot) -> list[Candidate]:
    """One plan for one parent, its K code samples, and a repair for each that fails. With
    fix_within_samples (the default) a repair takes the place of one of the K samples, so that runs with
    and without fix-on-failure spend the same number of samples per plan."""
    proposer, cfg = session.proposer, session.config.search
    children: list[Candidate] = []
    try:
        if session.stopping():
            return children
        plan = proposer.plan(slot)
        if plan is None:
            return children
        session.store.save_plan(session.run_id, slot.key, slot.parent.id, slot.iteration, plan.model, plan.text)
        samples, used, k = proposer.codes(cfg.codes), 0, -1
        while used < samples:
            k, used = k + 1, used + 1
            if session.stopping():
                break
            cand = _child(session, slot, plan, proposer.code(slot, plan, k), f"{slot.key}.c{k}", False)
            if cand.evaluation is None:
                done = _evaluate(session, cand)
                if done is None:
                    break
            children.append(cand)
            room = not cfg.fix_within_samples or used < samples
            if cand.evaluation and not cand.evaluation.correct and cfg.fix_on_failure and room \
                    and not session.stopping():
                code = proposer.fix(slot, plan, k, cand)
                if code is not None:
                    used += int(cfg.fix_within_samples)
                    fixed = _child(session, slot, plan, code, f"{slot.key}.c{k}f", True)
                    if fixed.evaluation is not None or _evaluate(session, fixed) is not None:
                        children.append(fixed)
    except Cancelled:
        pass
    except BudgetExhausted as exc:
        session.stop(RunStatus.FINISHED, str(exc))
    except LLMError as exc:
        session.stop(RunStatus.INTERRUPTED, f"LLM failed: {exc}. The run is stored")  # clients say how to resume
    except Exception as exc:  # a bug in a proposer or the target it asks (moves, feedback): this slot is lost,
        # not the run; the user is told which slot and why
        session.emit(ev.Event(ev.WARNING, session.run_id, {
            "message": f"slot {slot.key} skipped: the proposer failed ({type(exc).__name__}: {exc})"}))
    return children


def run_search(session: Session, iterations: int) -> RunRecord:
    store, run_id, problem = session.store, session.run_id, session.problem
    session.emit(
        ev.Event(ev.RUN_STARTED, run_id, {
            "kernel": problem.kernel.name, "path": problem.path, "target": problem.target,
            "backend": problem.backend, "iterations": iterations,
            "schedule": session.schedule.describe() if session.schedule else None,
        })
    )
    try:
        return _search(session, iterations)
    except Exception as exc:  # record the failure; the caller still gets a RunRecord
        store.set_status(run_id, RunStatus.FAILED, f"internal error: {exc}")
        session.emit(ev.Event(ev.RUN_FINISHED, run_id, {"status": RunStatus.FAILED, "speedup": None, "best": None,
                                                        "message": f"internal error: {exc}"}))
        raise
    finally:
        session.pool.shutdown(wait=False, kill=True)


def _search(session: Session, iterations: int) -> RunRecord:
    store, run_id, problem, cfg = session.store, session.run_id, session.problem, session.config.search
    base = Candidate(
        id=BASELINE_ID, run_id=run_id, parent_id=None, iteration=0, plan="", source=problem.source,
        source_hash=source_hash(problem.source), model="",
    )
    session.budget.evaluations += 1  # the baseline counts against the evaluation budget, but always runs
    result = _await(session, session.pool.submit(base.source))
    if result is None and session.stop_reason:
        return _finish(session, None, None, session.stop_status, session.stop_reason)
    if result is None:
        return _finish(session, None, None, RunStatus.CANCELLED, "cancelled before the baseline was measured")
    base.evaluation = result
    store.save_candidate(base)
    store.update_run(run_id, baseline_id=BASELINE_ID)
    session.emit(ev.Event(ev.BASELINE, run_id, {"candidate": base.to_dict()}))
    if not result.correct:
        why = f"initial code is incorrect ({result.status}): {result.message}"
        if result.log:
            why += "\n" + result.log
        return _finish(session, base, None, RunStatus.FAILED, why)
    if result.status != EvalStatus.OK:
        return _finish(session, base, None, RunStatus.FAILED, f"the baseline could not be measured: {result.message}")
    store.update_run(run_id, best_id=BASELINE_ID)
    beam, best, stale = [base], base, 0
    store.save_beam(run_id, 0, [base.id], base.id)
    threads = max(1, min(64, cfg.beam * max(cfg.plans, 8)))
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="slot") as slots:
        for it in range(1, iterations + 1):
            if session.stopping():
                break
            begin = getattr(session.proposer, "begin_iteration", None)  # proposers that order by the schedule
            if begin is not None:
                begin(it, session.schedule.step(it) if session.schedule else "")
            counts = [_slots(session, parent, cfg.plans) for parent in beam]
            if not any(counts):  # nothing left to propose (offline moves exhausted): say so, spend nothing
                exhausted = getattr(session.proposer, "exhausted_message", None)
                session.stop(RunStatus.FINISHED, exhausted(len(beam)) if exhausted else "no plans left to propose")
                break
            store.update_run(run_id, iteration=it, seconds=session.budget.seconds())
            session.emit(ev.Event(ev.ITERATION_STARTED, run_id, {"iteration": it, "iterations": iterations}))
            futures: list[Future[list[Candidate]]] = []
            for b, parent in enumerate(beam):
                for n in range(counts[b]):
                    guided = session.schedule.step(it) if session.schedule and b == 0 and n == 0 else ""
                    slot = Slot(it, iterations, parent, n, f"i{it}.b{b}.p{n}", guided, position=len(futures))
                    futures.append(slots.submit(_run_slot, session, slot))
            children: list[Candidate] = []
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for fut in done:
                    children.extend(fut.result())
                if session.cancel.is_set():
                    break  # in-flight work is abandoned; what finished still counts below
            beam = select_beam(beam, children, it, cfg.beam, cfg.regression_slack, cfg.slack_iterations)
            improved = min(beam, key=lambda c: c.score)
            if improved.score < best.score:
                best, stale = improved, 0
                store.update_run(run_id, best_id=best.id)
            else:
                stale += 1
            store.save_beam(run_id, it, [c.id for c in beam], best.id)
            session.emit(ev.Event(ev.ITERATION_FINISHED, run_id, {
                "iteration": it, "beam": [c.id for c in beam], "best": best.to_dict(), "speedup": speedup(base, best),
            }))
            if cfg.early_stop and stale >= cfg.early_stop and not session.stopping():
                session.stop(RunStatus.FINISHED, f"stopped early: no improvement in {stale} iterations")
    if session.cancel.is_set():
        return _finish(session, base, best, RunStatus.CANCELLED, "cancelled; the best candidate so far is kept")
    if session.stop_reason:
        return _finish(session, base, best, session.stop_status, session.stop_reason)
    return _finish(session, base, best, RunStatus.FINISHED, "")


def _finish(session: Session, base: Candidate | None, best: Candidate | None, status: RunStatus,
            message: str) -> RunRecord:
    store, run_id = session.store, session.run_id
    if base is not None and best is not None and best.id != base.id and session.reverifier is not None:
        best = _reverified(session, base)
    if best is not None:
        store.update_run(run_id, best_id=best.id)
    store.update_run(run_id, status=status, message=message, seconds=session.budget.seconds())
    session.emit(ev.Event(ev.RUN_FINISHED, run_id, {
        "status": status, "speedup": speedup(base, best), "best": best.to_dict() if best else None,
        "message": message,
    }))
    return store.get_run(run_id)


def _reverified(session: Session, base: Candidate) -> Candidate:
    """The run's winner after re-verification on the independent backend (engine/reverify.py)."""
    assert session.reverifier is not None
    ranked = sorted((c for c in session.store.candidates(session.run_id)
                     if c.id != base.id and c.evaluation is not None and c.evaluation.status == EvalStatus.OK
                     and c.score < base.score), key=lambda c: c.score)
    if ranked and session.reverifier.run is not None:
        session.emit(ev.Event(ev.REVERIFYING, session.run_id, {"backend": session.reverifier.backend,
                                                               "candidate": ranked[0].id}))
    outcome, changed = reverify(session.reverifier, base, ranked, lambda: session.cancel.is_set())
    for cand in changed:
        session.store.save_candidate(cand)
    for warning in outcome.warnings:
        session.emit(ev.Event(ev.WARNING, session.run_id, {"message": warning}))
    return outcome.best or base
