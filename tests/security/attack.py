"""Drive a hostile "LLM" reply through the real `speedpatch optimize` path and check what must hold.

A scripted OpenAI-compatible endpoint (tests/support/fake_openai.py) answers every request — plan, code
and fix prompts alike — with the attack: a short plan sentence and the attacker's code in one fenced
block. The real CLI runs in a throwaway workspace with its own $HOME and a planted secret, so each test
can then assert the four promises of the trust boundary:

- `assert_not_faster`: the cheat is never reported as a speedup (the winner is the baseline, or the run
  reports no speedup above 1);
- `assert_contained`: nothing written outside the workspace's run store and scratch folders (not $HOME,
  not the user's kernel file, not the workspace), and no process left running;
- `assert_no_secret`: the planted API key appears nowhere: stdout, stderr, the run store, any file in the
  workspace or $HOME, or the prompts the endpoint received.

Usage (one behaviour per test):

    out = run_attack(tmp_path, "gemmini/matmul_128.c", ATTACK_CODE, marker="sleep 4242")
    out.assert_not_faster(); out.assert_contained(); out.assert_no_secret()
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
FENCE = {".c": "c", ".h": "c", ".cu": "cuda", ".py": "python"}


@dataclass
class AttackOutcome:
    proc: subprocess.CompletedProcess
    workspace: Path
    home: Path
    problem: Path
    original: str
    secret: str
    marker: str
    before_home: dict[str, bytes]
    before_workspace: dict[str, bytes]
    prompts: list[str] = field(default_factory=list)

    @property
    def data(self) -> dict[str, Any]:
        """The run as `--json` printed it (empty when the CLI printed nothing parseable)."""
        try:
            return json.loads(self.proc.stdout)
        except ValueError:
            return {}

    def candidates(self) -> list[dict[str, Any]]:
        """Every stored candidate with its evaluation status, value and message (from the run store)."""
        db = self.workspace / ".speedpatch" / "runs.sqlite3"
        if not db.is_file():
            return []
        with sqlite3.connect(db) as conn:
            conn.row_factory = sqlite3.Row
            rows = conn.execute("SELECT * FROM candidates").fetchall()
        found = []
        for row in rows:
            item = dict(row)
            if isinstance(item.get("evaluation"), str):
                try:
                    item["evaluation"] = json.loads(item["evaluation"])
                except ValueError:
                    pass
            found.append(item)
        return found

    def explain(self) -> str:
        lines = [f"exit {self.proc.returncode}", "stdout:", self.proc.stdout[-3000:], "stderr:", self.proc.stderr[-3000:]]
        for cand in self.candidates():
            ev = cand.get("evaluation") or {}
            if isinstance(ev, dict):
                lines.append(f"candidate {cand.get('id')}: {ev.get('status')} {ev.get('value')} {ev.get('message')}")
        return "\n".join(lines)

    # the promises -------------------------------------------------------------------------------
    def assert_not_faster(self) -> None:
        """The cheat is not the run's winner, and no speedup above 1 is reported."""
        data = self.data
        assert data, f"the CLI printed no JSON result\n{self.explain()}"
        best = data.get("best") or {}
        speed = data.get("speedup")
        assert best.get("candidate_id") in (None, "base") or speed is None or speed <= 1.0, (
            f"a cheat was reported {speed}x faster\n{self.explain()}"
        )

    def rejection_messages(self) -> list[str]:
        """Messages of the attacker's candidates that did not pass (what the user is told, and why)."""
        out = []
        for cand in self.candidates():
            ev = cand.get("evaluation") or {}
            if cand.get("id") != "base" and isinstance(ev, dict) and ev.get("status") != "ok":
                out.append(f"{ev.get('status')}: {ev.get('message')}")
        return out

    def assert_contained(self) -> None:
        """No write outside the run store, the user's file untouched, no process left behind."""
        assert self.problem.read_text() == self.original, "the user's kernel file was changed during the run"
        changed_home = _changes(self.before_home, _snapshot(self.home))
        assert not changed_home, f"the candidate wrote into $HOME: {changed_home}"
        after = {k: v for k, v in _snapshot(self.workspace).items() if not k.startswith(".speedpatch/")}
        changed = _changes(self.before_workspace, after)
        assert not changed, f"the candidate wrote into the workspace: {changed}"
        alive = _processes_matching(self.marker) if self.marker else []
        assert not alive, f"processes outlived the run: {alive}"

    def assert_no_secret(self) -> None:
        """The planted key is nowhere: output, store, workspace, $HOME, prompts sent to the endpoint."""
        needle = self.secret.encode()
        assert needle not in self.proc.stdout.encode(), "the secret is in stdout"
        assert needle not in self.proc.stderr.encode(), "the secret is in stderr"
        for folder in (self.workspace, self.home):
            for path in folder.rglob("*"):
                if path.is_file():
                    assert needle not in path.read_bytes(), f"the secret is stored in {path}"
        for prompt in self.prompts:
            assert self.secret not in prompt, "the secret was sent to the LLM endpoint"


def _snapshot(folder: Path) -> dict[str, bytes]:
    files = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                files[str(path.relative_to(folder))] = path.read_bytes()
            except OSError:
                files[str(path.relative_to(folder))] = b"<unreadable>"
    return files


def _changes(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def _processes_matching(marker: str) -> list[str]:
    """Live processes whose command line contains `marker` (zombies excluded)."""
    found = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(f"{entry.name}: {cmdline.strip()}")
    return found


def reply_for(code: str, suffix: str) -> str:
    """The attacker's reply: one plan sentence and the code in a fenced block."""
    return f"Plan: restructure the kernel for speed.\n\n```{FENCE.get(suffix, '')}\n{code.strip()}\n```\n"


def run_attack(
    tmp_path: Path,
    example: str,
    code: str,
    *,
    marker: str = "",
    kernel: str | None = None,
    backend: str | None = None,
    iterations: int = 1,
    extra_args: tuple[str, ...] = (),
    timeout: float = 600,
) -> AttackOutcome:
    """Run `speedpatch optimize --json` on a copy of examples/`example`, every LLM reply being `code`.

    `marker` names a string the attack's long-lived processes carry in their command line (e.g.
    "sleep 4242"); assert_contained checks none survives. `timeout` bounds the whole CLI run.
    """
    workspace = tmp_path / "ws"
    home = tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    (home / ".profile").write_text("# a user's file\n")
    source = EXAMPLES / example
    problem = workspace / source.name
    shutil.copy(source, problem)
    original = problem.read_text()
    secret = f"sk-canary-{uuid.uuid4().hex}"
    reply = reply_for(code, problem.suffix)
    before_home, before_workspace = _snapshot(home), _snapshot(workspace)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({
        "HOME": str(home),
        # the Gemmini model archive is cached by content hash: share the real cache, not a per-test one
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"),
        "SPEEDPATCH_API_KEY": secret,
        "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), env.get("PYTHONPATH", "")]),
    })
    with FakeOpenAI(lambda request: reply) as endpoint:
        argv = [
            sys.executable, "-m", "speedpatch.cli.main", "--workspace", str(workspace), "optimize", str(problem),
            "--json", "-T", str(iterations), "-B", "1", "-N", "1", "-K", "1", "--seed", "1",
            "--model", "attacker", "--base-url", endpoint.base_url, *extra_args,
        ]
        if kernel:
            argv += ["--kernel", kernel]
        if backend:
            argv += ["--backend", backend]
        proc = subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout)
        prompts = [json.dumps(r.get("messages", [])) for r in endpoint.requests]
    return AttackOutcome(proc, workspace, home, problem, original, secret, marker, before_home, before_workspace,
                         prompts)
