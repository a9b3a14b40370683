"""Distributed evaluation on a real local Ray cluster (a head and a worker node, both offering the custom
resource gemmini_host), started inside a private network namespace so that everything binds 127.0.0.1
and nothing else is reachable. The scenarios run once per test session (tests/distributed/scenarios.py; a
cluster takes tens of seconds to start); each test judges one behaviour from their results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
# one cluster at a time on this machine; the module's first test also waits for the cluster and scenarios
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.timeout(1800)]


def _namespaces_work() -> str:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip (iproute2) not installed"
    probe = subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True, text=True)
    if probe.returncode != 0:
        probe = subprocess.run(["unshare", "-rn", "ip", "link", "set", "lo", "up"], capture_output=True, text=True)
        if probe.returncode != 0:
            return f"no private network namespace here ({probe.stderr.strip()})"
    return ""


def _ray_bin() -> str:
    found = Path(sys.executable).with_name("ray")
    return str(found) if found.exists() else (shutil.which("ray") or "")


# Session scope: xdist may run other modules' tests between this module's two (same worker, same group),
# and a module fixture would then be torn down and the cluster and scenarios run again (CI: 466 s + 206 s).
@pytest.fixture(scope="session")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    why = _namespaces_work()
    if why:
        pytest.skip(f"Ray tests need a private network namespace: {why}")
    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("SPEEDPATCH_REQUIRE_TOOLS"):
            pytest.fail("Ray is not installed: scripts/test.sh installs speedpatch[ray]")
        pytest.skip("Ray is not installed (pip install 'speedpatch[ray]')")
    out = tmp_path_factory.mktemp("ray") / "results.json"
    env = dict(os.environ, RAY_BIN=_ray_bin(), PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    unshare = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    proc = subprocess.run([*unshare, str(HERE / "cluster.sh"), sys.executable, str(HERE / "scenarios.py"), str(out)],
                          env=env, capture_output=True, text=True, timeout=1500)
    if not out.exists():
        pytest.fail(f"the Ray scenarios produced nothing (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    data = json.loads(out.read_text())
    data["_log"] = proc.stderr[-4000:]
    return data


def run_json(result: dict[str, Any]) -> dict[str, Any]:
    assert result["code"] in (0, 3), result["stderr"][-2000:]
    return json.loads(result["stdout"])


def by_hash(candidates: list[dict[str, Any]]) -> dict[str, tuple[str, float | None]]:
    return {c["hash"]: (c["status"], c["value"]) for c in candidates}


def test_a_search_on_ray_and_a_local_search_with_the_same_seed_are_the_same_run(results):
    local, on_ray = run_json(results["local"]), run_json(results["ray"])
    assert [c["id"] for c in results["ray_candidates"]] == [c["id"] for c in results["local_candidates"]]
    assert by_hash(results["ray_candidates"]) == by_hash(results["local_candidates"])
    assert on_ray["best"] == local["best"] and on_ray["speedup"] == local["speedup"]


def test_every_ray_evaluation_names_the_node_that_measured_it(results):
    nodes = {c["receipt"].get("node") for c in results["ray_candidates"] if c["status"] != "rejected"}
    assert None not in nodes and nodes
    local_nodes = {c["receipt"].get("node") for c in results["local_candidates"]}
    assert local_nodes == {None}


def test_a_resource_no_node_offers_is_refused_before_any_evaluation(results):
    res = results["no_resource"]
    assert res["code"] == 2
    assert "no node of the Ray cluster offers trainium=1" in res["stderr"] and "nodes seen" in res["stderr"]


def test_an_address_nobody_answers_on_fails_fast(results):
    res = results["nobody_answers"]
    assert res["code"] == 2 and "nobody answers there" in res["stderr"]
    assert res["seconds"] < 60


def test_the_executor_flag_selects_ray(results):
    data = json.loads(results["executor_flag"]["stdout"])
    assert data["correct"] and data["receipt"].get("node")


def test_a_worker_with_another_speedpatch_version_is_refused(results):
    from speedpatch import __version__

    message = results["version_mismatch"]
    assert "speedpatch 0.0.0-another here, but" in message and f"has {__version__}" in message
    assert "install the same version on every worker" in message


def test_a_node_killed_mid_run_loses_and_doubles_nothing(results):
    data = run_json(results["killed"])
    assert data["status"] == "finished", results["killed"]["stderr"][-2000:]
    assert len(results["killed_candidates"]) > results["killed_after"]  # the node died with work left
    ids = [c["id"] for c in results["killed_candidates"]]
    assert len(ids) == len(set(ids))
    assert by_hash(results["killed_candidates"]) == by_hash(results["killed_reference"])
    assert data["evaluations"]["total"] == len(results["killed_candidates"])


def test_a_cluster_that_goes_away_interrupts_the_run_and_resume_finishes_it_locally(results):
    gone = results["gone"]
    assert gone["code"] == 3, gone["stderr"][-2000:]
    assert "speedpatch resume" in json.loads(gone["stdout"])["message"]
    resumed = run_json(results["gone_resumed"])
    assert resumed["status"] == "finished"
    assert len(results["gone_candidates"]) > results["gone_after"]  # resume evaluated what was left


def test_backends_lists_how_many_cluster_nodes_can_run_each_backend(results):
    rows = {r["backend"]: r for r in json.loads(results["backends"]["stdout"])}
    assert rows["gemmini-native"]["ray_nodes"] == 2  # both nodes offer gemmini_host
    assert rows["cuda-local"]["ray_nodes"] == 0  # no GPU anywhere
