"""The `speedpatch` command, run as a real process on toy workspaces."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from speedpatch.store import Store
from support.toys import cli, cli_env, toy_config, toy_problem, write_toy


def run(tmp_path, *args, **kw):
    return subprocess.run(cli(*args), cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=120, **kw)


def test_optimize_json_prints_exactly_one_object_with_the_results(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) >= {"run_id", "kernel", "target", "backend", "baseline", "best", "speedup", "evaluations", "llm"}
    assert data["kernel"] == "kernel_sum" and data["backend"] == "toy-count"
    assert data["baseline"] == {"value": 174.0, "unit": "lines"}
    assert data["best"]["value"] < 174 and data["best"]["candidate_id"]
    assert data["speedup"] > 1
    assert data["llm"] == {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}


def test_optimize_prints_a_table_and_the_diff_of_the_winner(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1")
    assert proc.returncode == 0, proc.stderr
    assert "speedup" in proc.stdout
    assert "+    return sum(xs)" in proc.stdout
    assert "--- a/sum.toy" in proc.stdout


def test_evaluate_json_reports_correctness_value_and_output(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "evaluate", "sum.toy", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["correct"] is True and data["value"] == 174.0 and data["unit"] == "lines"
    assert data["backend"] == "toy-count" and "TOY-RESULT" in data["output"]


def test_evaluate_of_an_incorrect_program_exits_non_zero(tmp_path):
    write_toy(tmp_path, reference="sum(xs) + 1")
    proc = run(tmp_path, "evaluate", "sum.toy", "--json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["correct"] is False


def test_unknown_kernel_lists_the_kernels_found(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "optimize", "sum.toy", "--kernel", "kernel_nope", "--offline")
    assert proc.returncode == 2
    assert "no kernel named 'kernel_nope'" in proc.stderr and "kernel_sum" in proc.stderr


def test_file_without_kernel_is_a_clear_error(tmp_path):
    (tmp_path / "empty.toy").write_text("x = 1\n")
    proc = run(tmp_path, "optimize", "empty.toy", "--offline")
    assert proc.returncode == 2
    assert "no kernel found" in proc.stderr


def test_missing_file_is_a_clear_error(tmp_path):
    proc = run(tmp_path, "evaluate", "nowhere.toy")
    assert proc.returncode == 2 and "no such file" in proc.stderr


def test_unknown_backend_names_the_known_ones(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "optimize", "sum.toy", "--backend", "warp-drive", "--offline")
    assert proc.returncode == 2
    assert "warp-drive" in proc.stderr and "toy-count" in proc.stderr


def test_invalid_config_value_names_the_key(tmp_path):
    write_toy(tmp_path)
    (tmp_path / "speedpatch.toml").write_text("[search]\nbeam = -3\n")
    proc = run(tmp_path, "optimize", "sum.toy", "--offline")
    assert proc.returncode == 2 and "search.beam" in proc.stderr


def test_runs_show_and_apply_write_the_winner_into_the_file(tmp_path):
    path = write_toy(tmp_path)
    run_id = json.loads(run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1", "--json").stdout)["run_id"]
    listing = json.loads(run(tmp_path, "runs", "--json").stdout)
    assert [r["run_id"] for r in listing] == [run_id]
    shown = run(tmp_path, "show", run_id, "--diff")
    assert shown.returncode == 0 and "lineage of the best" in shown.stdout and "+    return sum(xs)" in shown.stdout
    applied = run(tmp_path, "apply", run_id)
    assert applied.returncode == 0, applied.stderr
    assert "def kernel_sum(xs):\n    return sum(xs)\n" in path.read_text()
    assert "INPUTS" in path.read_text()


def test_apply_refuses_a_kernel_changed_since_the_run(tmp_path):
    path = write_toy(tmp_path)
    run_id = json.loads(run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1", "--json").stdout)["run_id"]
    edited = path.read_text().replace("total = 0", "total = 0  # edited by hand")
    path.write_text(edited)
    proc = run(tmp_path, "apply", run_id)
    assert proc.returncode == 2 and "stale" in proc.stderr
    assert path.read_text() == edited


def test_apply_keeps_edits_outside_the_kernel(tmp_path):
    path = write_toy(tmp_path)
    run_id = json.loads(run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1", "--json").stdout)["run_id"]
    path.write_text("# a comment added after the run\n" + path.read_text())
    assert run(tmp_path, "apply", run_id).returncode == 0
    text = path.read_text()
    assert text.startswith("# a comment added after the run\n") and "    return sum(xs)\n" in text


def test_ctrl_c_cancels_and_keeps_the_best_so_far(tmp_path):
    slow = "def kernel_sum(xs):\n    import time\n    time.sleep(30)\n    return sum(xs)\n"
    write_toy(tmp_path, moves={"Use the builtin sum.": "def kernel_sum(xs):\n    return sum(xs)\n", "Nap.": slow})
    (tmp_path / "speedpatch.toml").write_text("[search]\nworkers = 2\n")
    proc = subprocess.Popen(cli("optimize", "sum.toy", "--offline", "-T", "3", "--json"), cwd=tmp_path,
                            env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _has_winner(tmp_path):  # wait for the fast move
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    data = json.loads(stdout)
    assert data["status"] == "cancelled"
    assert data["speedup"] > 1


def test_resume_runs_a_search_that_was_queued_when_its_server_stopped(tmp_path):
    """The language server stores a search as queued when it is asked for; if the server dies before the
    search's turn, `speedpatch resume` runs it from the start (baseline first)."""
    config = toy_config(tmp_path, search={"iterations": 1}, offline=True)
    problem = toy_problem(tmp_path, config)
    queue = (
        "import json, sys\nfrom speedpatch.model import Problem\nfrom speedpatch.store import Store\n"
        "Store(sys.argv[1]).queue_run('queued1', Problem.from_dict(json.loads(sys.argv[2])), 1, json.loads(sys.argv[3]))"
    )
    subprocess.run([sys.executable, "-c", queue, str(tmp_path), json.dumps(problem.to_dict()),
                    json.dumps(config.to_dict())], env=cli_env(), check=True, timeout=60)
    assert Store(tmp_path).get_run("queued1").status == "interrupted"  # its process is gone
    proc = run(tmp_path, "resume", "queued1", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "finished" and data["speedup"] > 1
    assert data["baseline"] == {"value": 174.0, "unit": "lines"}


def _store_in_a_process_that_exits(tmp_path, statement: str) -> None:
    """Run one store statement (on `store` and `problem`) in a real process that then exits: any run it
    drives is left behind as its process is gone."""
    config = toy_config(tmp_path, search={"iterations": 1}, offline=True)
    script = ("import json, sys\nfrom speedpatch.model import Problem\nfrom speedpatch.store import Store\n"
              "store, problem = Store(sys.argv[1]), Problem.from_dict(json.loads(sys.argv[2]))\n" + statement)
    subprocess.run([sys.executable, "-c", script, str(tmp_path), json.dumps(toy_problem(tmp_path, config).to_dict())],
                   env=cli_env(), check=True, timeout=60)


def test_an_interrupted_run_says_how_to_continue_it(tmp_path):
    _store_in_a_process_that_exits(tmp_path, "store.create_run('dead1', problem, 1, {})")
    advice = "interrupted (its process is gone); continue it with: speedpatch resume dead1"
    assert json.loads(run(tmp_path, "show", "dead1", "--json").stdout)["message"] == advice
    assert json.loads(run(tmp_path, "runs", "--json").stdout)[0]["message"] == advice


def test_the_advice_an_older_store_wrote_into_the_message_is_not_repeated(tmp_path):
    _store_in_a_process_that_exits(tmp_path, "store.create_run('old1', problem, 1, {})\n"
                                   "store.set_status('old1', 'interrupted', 'LLM failed: down. The run is stored; "
                                   "continue it with: speedpatch resume old1')")
    message = json.loads(run(tmp_path, "show", "old1", "--json").stdout)["message"]
    assert message == "LLM failed: down. The run is stored; continue it with: speedpatch resume old1"


def _has_winner(workspace) -> bool:
    if not (workspace / ".speedpatch" / "runs.sqlite3").exists():
        return False
    store = Store(workspace)
    runs = store.list_runs()
    return bool(runs) and any(c.score < 174 for c in store.candidates(runs[0].run_id))


def test_backends_lists_each_backend_and_whether_it_is_usable(tmp_path):
    proc = run(tmp_path, "backends", "--json")
    assert proc.returncode == 0
    rows = {r["backend"]: r for r in json.loads(proc.stdout)}
    assert rows["toy-count"]["usable"] is True and rows["toy-count"]["reason"]
