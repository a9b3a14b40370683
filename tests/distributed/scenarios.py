"""Ray scenarios, run once inside a private network namespace next to a real local cluster (cluster.sh).

Each scenario drives the real `speedpatch` CLI and records what a test needs to judge it; the results go
to one JSON file (argv[1]) that tests/distributed/test_ray.py reads, one behaviour per test.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ADDRESS = os.environ["SPEEDPATCH_RAY_ADDRESS"]
EXAMPLE = REPO / "examples" / "gemmini" / "matmul_128.c"


def workspace(root: Path, name: str, toml: str) -> Path:
    folder = root / name
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / EXAMPLE.name)
    (folder / "speedpatch.toml").write_text(toml)
    return folder


def ray_toml(resources: str = "{gemmini_host = 1}", address: str = ADDRESS) -> str:
    return f'[search]\nexecutor = "ray"\n[ray]\naddress = "{address}"\nconnect_timeout = 5\n' \
           f'[ray.resources]\n"gemmini-native" = {resources}\n'


def cli(folder: Path, *args: str, background: bool = False, timeout: float = 600) -> Any:
    argv = [sys.executable, "-m", "speedpatch.cli.main", "--workspace", str(folder), *args]
    if background:
        return subprocess.Popen(argv, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=timeout)
    return {"code": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr,
            "seconds": time.monotonic() - start}


def candidates(folder: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(folder / ".speedpatch" / "runs.sqlite3") as db:
        rows = db.execute("SELECT id, source_hash, status, value, evaluation FROM candidates ORDER BY id").fetchall()
    return [{"id": r[0], "hash": r[1], "status": r[2], "value": r[3],
             "receipt": json.loads(r[4]).get("receipt", {}) if r[4] else {}} for r in rows]


def wait_for_candidates(folder: Path, count: int, limit: float = 300) -> None:
    deadline = time.monotonic() + limit
    db = folder / ".speedpatch" / "runs.sqlite3"
    while time.monotonic() < deadline:
        if db.is_file():
            try:
                if len(candidates(folder)) >= count:
                    return
            except sqlite3.Error:
                pass
        time.sleep(0.2)
    raise TimeoutError(f"fewer than {count} candidates after {limit} s")


def raylet_pid(head: bool) -> int:
    """The PID of a node's raylet, found by the raylet socket Ray reports for that node."""
    import ray

    ray.init(address=ADDRESS, logging_level="ERROR", log_to_driver=False)
    try:
        nodes = [n for n in ray.nodes() if n["Alive"] and ("node:__internal_head__" in n["Resources"]) == head]
        socket_name = nodes[0]["RayletSocketName"]
    finally:
        ray.shutdown()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmd and cmd[0].endswith(b"raylet") and f"--raylet_socket_name={socket_name}".encode() in cmd:
                return int(entry.name)
    raise LookupError(f"no raylet with socket {socket_name}")


def main(out: Path) -> None:
    root = out.parent / "workspaces"
    root.mkdir()
    results: dict[str, Any] = {}

    def save() -> None:  # after every scenario, so that a failing one still leaves the others' results
        out.write_text(json.dumps(results))
    # a small search (2 moves per parent, beam 2): the same-run comparison needs any search, not a long one
    common = ("--offline", "-T", "2", "-B", "2", "-N", "2", "-K", "1", "--seed", "1", "--json")

    local = workspace(root, "local", "")
    results["local"] = cli(local, "optimize", EXAMPLE.name, *common)
    results["local_candidates"] = candidates(local)
    on_ray = workspace(root, "ray", ray_toml())
    results["ray"] = cli(on_ray, "optimize", EXAMPLE.name, *common)
    results["ray_candidates"] = candidates(on_ray)
    save()

    results["no_resource"] = cli(workspace(root, "nores", ray_toml("{trainium = 1}")), "evaluate", EXAMPLE.name)
    results["nobody_answers"] = cli(workspace(root, "noanswer", ray_toml(address="127.0.0.1:1")), "evaluate",
                                    EXAMPLE.name, timeout=120)
    results["executor_flag"] = cli(workspace(root, "flag", ray_toml().replace('executor = "ray"', "")),
                                   "evaluate", EXAMPLE.name, "--executor", "ray", "--json")

    import ray
    results["backends"] = cli(workspace(root, "backends", ray_toml()), "backends", "--json")
    from speedpatch.engine.executors import check_versions
    from speedpatch.errors import UserError
    ray.init(address=ADDRESS, logging_level="ERROR", log_to_driver=False)
    try:
        check_versions(ray, {"gemmini_host": 1.0}, "0.0.0-another")
        results["version_mismatch"] = ""
    except UserError as exc:
        results["version_mismatch"] = str(exc)
    finally:
        ray.shutdown()

    save()
    # a worker node dies mid-run: its tasks are retried on the head, nothing lost or counted twice. Seven
    # candidates; the raylet is found before the run, so that the kill follows the second at once.
    longer = ("--offline", "-T", "2", "-B", "2", "-N", "3", "-K", "1", "--seed", "1", "--json")
    killed = workspace(root, "killed", ray_toml())
    worker = raylet_pid(head=False)
    run = cli(killed, "optimize", EXAMPLE.name, *longer, background=True)
    wait_for_candidates(killed, 2)
    os.kill(worker, signal.SIGKILL)
    results["killed_after"] = len(candidates(killed))
    stdout, stderr = run.communicate(timeout=900)
    results["killed"] = {"code": run.returncode, "stdout": stdout, "stderr": stderr}
    results["killed_candidates"] = candidates(killed)
    reference = workspace(root, "killed-local", "")
    cli(reference, "optimize", EXAMPLE.name, *longer)
    results["killed_reference"] = candidates(reference)
    save()

    # the cluster goes away: the run stops as interrupted, and resumes locally
    gone = workspace(root, "gone", ray_toml())
    run = cli(gone, "optimize", EXAMPLE.name, *longer, background=True)
    wait_for_candidates(gone, 2)
    subprocess.run([os.environ.get("RAY_BIN", "ray"), "stop", "--force"], capture_output=True, timeout=120)
    results["gone_after"] = len(candidates(gone))
    stdout, stderr = run.communicate(timeout=600)
    results["gone"] = {"code": run.returncode, "stdout": stdout, "stderr": stderr}
    run_id = json.loads(stdout)["run_id"] if stdout.strip().startswith("{") else ""
    results["gone_resumed"] = cli(gone, "resume", run_id, "--executor", "local", "--json") if run_id else {}
    results["gone_candidates"] = candidates(gone)
    save()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
