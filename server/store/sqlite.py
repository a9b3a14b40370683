"""SQLite persistence for runs, plans, candidates (with lineage and evaluations), beams and LLM calls.

WAL mode and one connection per thread, so the engine's worker threads, the language server and a CLI
process can all use the same file. Every write bumps meta.version, which readers poll to notice changes
made by other processes. Every text written passes speedpatch.redact first: no known secret is stored.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from speedpatch.errors import NotFoundError
from speedpatch.model import Candidate, Evaluation, Problem
from speedpatch.redact import known_secrets, redact, redact_data
from speedpatch.states import EvalStatus, RunStatus
from speedpatch.store.records import RunRecord

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta VALUES ('version', 0);
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY, created TEXT NOT NULL, updated TEXT NOT NULL, path TEXT NOT NULL,
  kernel TEXT NOT NULL, target TEXT NOT NULL, backend TEXT NOT NULL, status TEXT NOT NULL,
  message TEXT NOT NULL DEFAULT '', iteration INTEGER NOT NULL DEFAULT 0, iterations INTEGER NOT NULL,
  problem TEXT NOT NULL, config TEXT NOT NULL, baseline_id TEXT, best_id TEXT, pid INTEGER, host TEXT,
  seconds REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS plans (
  run_id TEXT NOT NULL, id TEXT NOT NULL, parent_id TEXT NOT NULL, iteration INTEGER NOT NULL,
  model TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (run_id, id)
);
CREATE TABLE IF NOT EXISTS candidates (
  run_id TEXT NOT NULL, id TEXT NOT NULL, parent_id TEXT, iteration INTEGER NOT NULL,
  plan TEXT NOT NULL, source TEXT NOT NULL, source_hash TEXT NOT NULL, model TEXT NOT NULL,
  fixed INTEGER NOT NULL, status TEXT, value REAL, unit TEXT, evaluation TEXT, created TEXT NOT NULL,
  PRIMARY KEY (run_id, id)
);
CREATE INDEX IF NOT EXISTS candidates_hash ON candidates (run_id, source_hash);
CREATE TABLE IF NOT EXISTS beams (
  run_id TEXT NOT NULL, iteration INTEGER NOT NULL, members TEXT NOT NULL, best_id TEXT,
  PRIMARY KEY (run_id, iteration)
);
CREATE TABLE IF NOT EXISTS llm_calls (
  run_id TEXT NOT NULL, key TEXT NOT NULL, phase TEXT NOT NULL, model TEXT NOT NULL,
  prompt TEXT NOT NULL, reply TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL, seconds REAL NOT NULL, created TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
"""


def now() -> str:
    """The time stamp written with every row: UTC, ISO 8601, whole seconds."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _pid_alive(pid: int | None, host: str | None) -> bool:
    if host != os.uname().nodename:
        return True  # driven from another machine: we cannot tell, assume it is alive
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Store:
    """The runs of one workspace, in <workspace>/.speedpatch/runs.sqlite3 (created when missing)."""

    def __init__(self, workspace: Path | str) -> None:
        self.root = Path(workspace) / ".speedpatch"
        self.root.mkdir(parents=True, exist_ok=True)
        self.path = self.root / "runs.sqlite3"
        self._local = threading.local()
        self._conn().executescript(SCHEMA)  # idempotent; executescript manages its own transaction
        self._migrate()

    def _migrate(self) -> None:
        """Bring a store written by an older speedpatch up to this schema, keeping every run."""
        columns = {row["name"] for row in self._conn().execute("PRAGMA table_info(runs)")}
        if "seconds" not in columns:
            try:
                self._conn().execute("ALTER TABLE runs ADD COLUMN seconds REAL NOT NULL DEFAULT 0")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise

    # connection handling -------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    class _Tx:
        def __init__(self, conn: sqlite3.Connection, write: bool) -> None:
            self.conn, self.write = conn, write

        def __enter__(self) -> sqlite3.Connection:
            self.conn.execute("BEGIN IMMEDIATE" if self.write else "BEGIN")
            return self.conn

        def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
            if exc_type is None:
                if self.write:
                    self.conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'version'")
                self.conn.execute("COMMIT")
            else:
                self.conn.execute("ROLLBACK")

    def _tx(self, write: bool = True) -> Store._Tx:
        return Store._Tx(self._conn(), write)

    def close(self) -> None:
        """Close this thread's connection (other threads keep theirs)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def data_version(self) -> int:
        """A number that changes with every write by any process: poll it to notice changes."""
        row = self._conn().execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        return int(row[0])

    # runs ----------------------------------------------------------------------------------------
    def create_run(self, run_id: str, problem: Problem, iterations: int, config: dict[str, Any]) -> None:
        """Record a run this process starts driving now. A placeholder that this process queued under the
        same id (queue_run) becomes the run; any other run with that id is an error."""
        self._insert(run_id, problem, iterations, config, RunStatus.RUNNING)

    def queue_run(self, run_id: str, problem: Problem, iterations: int, config: dict[str, Any]) -> None:
        """Record a run that waits for its turn in this process, so that it is not lost if the process
        stops before it starts: it then reads as interrupted and resumes from the start."""
        self._insert(run_id, problem, iterations, config, RunStatus.QUEUED)

    def _insert(self, run_id: str, problem: Problem, iterations: int, config: dict[str, Any],
                status: RunStatus) -> None:
        stamp = now()
        with self._tx() as db:
            written = db.execute(
                "INSERT INTO runs (id, created, updated, path, kernel, target, backend, status, iterations,"
                " problem, config, pid, host) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT(id) DO UPDATE SET updated=excluded.updated, path=excluded.path,"
                " kernel=excluded.kernel, target=excluded.target, backend=excluded.backend,"
                " status=excluded.status, message='', iterations=excluded.iterations, problem=excluded.problem,"
                " config=excluded.config"
                " WHERE runs.status=? AND runs.pid=excluded.pid AND runs.host=excluded.host",
                (
                    run_id, stamp, stamp, problem.path, problem.kernel.name, problem.target, problem.backend,
                    status, iterations, json.dumps(redact_data(problem.to_dict())), json.dumps(redact_data(config)),
                    os.getpid(), os.uname().nodename, RunStatus.QUEUED,
                ),
            ).rowcount
            if written != 1:  # the id is taken by a run that is not our own queued placeholder
                raise sqlite3.IntegrityError(f"UNIQUE constraint failed: runs.id (run {run_id} exists)")

    def claim(self, run_id: str) -> None:
        """This process now drives the run (resume)."""
        with self._tx() as db:
            db.execute(
                "UPDATE runs SET status=?, message='', pid=?, host=?, updated=? WHERE id=?",
                (RunStatus.RUNNING, os.getpid(), os.uname().nodename, now(), run_id),
            )

    def update_run(self, run_id: str, **fields: Any) -> None:
        """Set some of a run's fields (status, message, iteration, iterations, baseline_id, best_id, config,
        seconds); ValueError for any other."""
        allowed = {"status", "message", "iteration", "iterations", "baseline_id", "best_id", "config", "seconds"}
        bad = set(fields) - allowed
        if bad:
            raise ValueError(f"cannot update run fields {bad}")
        if "config" in fields:
            fields["config"] = json.dumps(redact_data(fields["config"]))
        if "message" in fields:
            fields["message"] = redact(fields["message"])
        fields["updated"] = now()
        cols = ", ".join(f"{k}=?" for k in fields)
        with self._tx() as db:
            db.execute(f"UPDATE runs SET {cols} WHERE id=?", (*fields.values(), run_id))

    def set_status(self, run_id: str, status: RunStatus, message: str = "") -> None:
        """Set a run's status and message (the message replaces the previous one, "" clears it)."""
        self.update_run(run_id, status=status, message=message)

    def _record(self, row: sqlite3.Row) -> RunRecord:
        run_id = row["id"]
        status = RunStatus(row["status"])
        message = row["message"]
        if status.live and not _pid_alive(row["pid"], row["host"]):
            if status == RunStatus.QUEUED:
                # not yet the fact alone ("queued when the server stopped"): the language server shows this
                # message as it is, advice included, until it words its own (issue #17)
                message = f"queued when the server stopped; resume it to run: speedpatch resume {run_id}"
            status = RunStatus.INTERRUPTED
        baseline = self.get_candidate(run_id, row["baseline_id"]) if row["baseline_id"] else None
        best = self.get_candidate(run_id, row["best_id"]) if row["best_id"] else None
        db = self._conn()
        calls = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(prompt_tokens),0), COALESCE(SUM(completion_tokens),0)"
            " FROM llm_calls WHERE run_id=?",
            (run_id,),
        ).fetchone()
        correct = [s.value for s in EvalStatus if s.correct]
        evals = db.execute(
            f"SELECT COUNT(*), COALESCE(SUM(status IN ({','.join('?' * len(correct))})),0) FROM candidates"
            " WHERE run_id=? AND status IS NOT NULL",
            (*correct, run_id),
        ).fetchone()
        if status == RunStatus.INTERRUPTED and not message:
            message = "interrupted (its process is gone)"  # the facts; each client says how to resume
        return RunRecord(
            run_id=run_id,
            path=row["path"],
            kernel=row["kernel"],
            target=row["target"],
            backend=row["backend"],
            status=status,
            message=message,
            iteration=row["iteration"],
            iterations=row["iterations"],
            problem=Problem.from_dict(json.loads(row["problem"])),
            baseline=baseline,
            best=best,
            created=row["created"],
            updated=row["updated"],
            config=json.loads(row["config"]),
            seconds=row["seconds"],
            llm={"calls": calls[0], "prompt_tokens": calls[1], "completion_tokens": calls[2]},
            evaluations={"total": evals[0], "correct": evals[1]},
        )

    def get_run(self, run_id: str) -> RunRecord:
        """The run with this id, or the only one it is a prefix of; NotFoundError otherwise."""
        row = self._conn().execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            matches = self._conn().execute("SELECT * FROM runs WHERE id LIKE ?", (run_id + "%",)).fetchall()
            if len(matches) != 1:
                raise NotFoundError(f"no run {run_id!r} in {self.path} (see `speedpatch runs`)")
            row = matches[0]
        return self._record(row)

    def list_runs(self) -> list[RunRecord]:
        """Every run, newest first."""
        rows = self._conn().execute("SELECT * FROM runs ORDER BY created DESC, rowid DESC").fetchall()
        return [self._record(r) for r in rows]

    # plans, candidates, beams ------------------------------------------------------------------------
    def save_plan(self, run_id: str, plan_id: str, parent_id: str, iteration: int, model: str, text: str) -> None:
        """Record (or replace) one plan for one parent."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO plans VALUES (?,?,?,?,?,?)",
                (run_id, plan_id, parent_id, iteration, model, redact(text)),
            )

    def plans(self, run_id: str) -> list[dict[str, Any]]:
        """A run's plans as rows, in the order they were saved."""
        rows = self._conn().execute("SELECT * FROM plans WHERE run_id=? ORDER BY rowid", (run_id,)).fetchall()
        return [dict(r) for r in rows]

    def save_candidate(self, cand: Candidate) -> None:
        """Record (or replace) a candidate with its evaluation, if it has one yet."""
        ev = cand.evaluation
        secrets = known_secrets()
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO candidates VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    cand.run_id, cand.id, cand.parent_id, cand.iteration, redact(cand.plan, secrets),
                    redact(cand.source, secrets), cand.source_hash, cand.model, int(cand.fixed),
                    ev.status if ev else None, ev.value if ev else None, ev.unit if ev else None,
                    json.dumps(redact_data(ev.to_dict(), secrets)) if ev else None, now(),
                ),
            )

    def _candidate(self, row: sqlite3.Row) -> Candidate:
        ev = Evaluation.from_dict(json.loads(row["evaluation"])) if row["evaluation"] else None
        return Candidate(
            id=row["id"], run_id=row["run_id"], parent_id=row["parent_id"], iteration=row["iteration"],
            plan=row["plan"], source=row["source"], source_hash=row["source_hash"], model=row["model"],
            fixed=bool(row["fixed"]), evaluation=ev,
        )

    def get_candidate(self, run_id: str, candidate_id: str) -> Candidate:
        """One candidate of a run; NotFoundError when it has none by that id."""
        row = self._conn().execute(
            "SELECT * FROM candidates WHERE run_id=? AND id=?", (run_id, candidate_id)
        ).fetchone()
        if row is None:
            raise NotFoundError(f"run {run_id} has no candidate {candidate_id!r}")
        return self._candidate(row)

    def find_by_hash(self, run_id: str, source_hash: str) -> Candidate | None:
        """An evaluated candidate of the run with this source hash (its evaluation can be reused), if any."""
        row = self._conn().execute(
            "SELECT * FROM candidates WHERE run_id=? AND source_hash=? AND evaluation IS NOT NULL LIMIT 1",
            (run_id, source_hash),
        ).fetchone()
        return self._candidate(row) if row else None

    def candidates(self, run_id: str) -> list[Candidate]:
        """A run's candidates by iteration, in the order they were saved."""
        rows = self._conn().execute(
            "SELECT * FROM candidates WHERE run_id=? ORDER BY iteration, rowid", (run_id,)
        ).fetchall()
        return [self._candidate(r) for r in rows]

    def lineage(self, run_id: str, candidate_id: str) -> list[Candidate]:
        """The candidate and its ancestors, the baseline first."""
        chain: list[Candidate] = []
        current: str | None = candidate_id
        while current:
            cand = self.get_candidate(run_id, current)
            chain.append(cand)
            current = cand.parent_id
        return chain[::-1]

    def save_beam(self, run_id: str, iteration: int, members: list[str], best_id: str | None) -> None:
        """Record the beam an iteration kept and the run's best so far."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO beams VALUES (?,?,?,?)", (run_id, iteration, json.dumps(members), best_id)
            )

    def beams(self, run_id: str) -> dict[int, list[str]]:
        """Candidate ids of every iteration's beam, by iteration."""
        rows = self._conn().execute(
            "SELECT iteration, members FROM beams WHERE run_id=? ORDER BY iteration", (run_id,)
        ).fetchall()
        return {r["iteration"]: json.loads(r["members"]) for r in rows}

    # LLM calls: the record of tokens and the replay cache for resume -------------------------------
    def get_llm_call(self, run_id: str, key: str) -> dict[str, Any] | None:
        """The stored call under this key (a resumed run replays its reply), if any."""
        row = self._conn().execute(
            "SELECT * FROM llm_calls WHERE run_id=? AND key=?", (run_id, key)
        ).fetchone()
        return dict(row) if row else None

    def save_llm_call(
        self, run_id: str, key: str, phase: str, model: str, prompt: str, reply: str,
        prompt_tokens: int, completion_tokens: int, seconds: float,
    ) -> None:
        """Record one LLM call: prompt, reply and tokens (secrets scrubbed)."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO llm_calls VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, key, phase, model, redact(prompt), redact(reply), prompt_tokens, completion_tokens, seconds,
                 now()),
            )

    def llm_usage(self, run_id: str) -> list[dict[str, Any]]:
        """Calls, tokens and seconds of a run's LLM use per phase and model."""
        rows = self._conn().execute(
            "SELECT phase, model, COUNT(*) AS calls, SUM(prompt_tokens) AS prompt_tokens,"
            " SUM(completion_tokens) AS completion_tokens, SUM(seconds) AS seconds FROM llm_calls"
            " WHERE run_id=? GROUP BY phase, model ORDER BY phase, model",
            (run_id,),
        ).fetchall()
        return [dict(r) for r in rows]
