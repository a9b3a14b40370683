"""Bad input to the CLI: exit status 2 and a message that says what was wrong and what to do; nothing
created, nothing lost."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from support.toys import cli, cli_env, write_toy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(cwd, *args):
    return subprocess.run(cli(*args), cwd=cwd, env=cli_env(), capture_output=True, text=True, timeout=120)


def test_resume_of_an_unknown_run_says_so_without_a_traceback(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "resume", "nope1234")
    assert proc.returncode == 2
    assert "no run 'nope1234'" in proc.stderr and "speedpatch runs" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_show_of_an_unknown_run_has_no_quoted_message(tmp_path):
    proc = run(tmp_path, "show", "nope1234")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: no run 'nope1234'")


def test_a_corrupt_run_store_is_named_and_left_in_place(tmp_path):
    store = tmp_path / ".speedpatch" / "runs.sqlite3"
    store.parent.mkdir()
    store.write_bytes(b"this is not a database" * 100)
    proc = run(tmp_path, "runs")
    assert proc.returncode == 2
    assert "run store" in proc.stderr and "Move it away" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert store.read_bytes().startswith(b"this is not a database")


def test_a_workspace_that_is_a_file_is_refused(tmp_path):
    path = write_toy(tmp_path)
    proc = run(tmp_path, "--workspace", str(path), "runs")
    assert proc.returncode == 2
    assert "is a file" in proc.stderr


def test_a_mistyped_workspace_is_refused_and_not_created(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "--workspace", str(tmp_path / "typo"), "runs")
    assert proc.returncode == 2
    assert "no such folder" in proc.stderr
    assert not (tmp_path / "typo").exists()


def test_a_folder_given_as_the_file_says_it_is_a_folder(tmp_path):
    (tmp_path / "kernels").mkdir()
    proc = run(tmp_path, "evaluate", "kernels")
    assert proc.returncode == 2
    assert "is a folder" in proc.stderr


def test_resume_of_a_finished_run_is_refused_instead_of_rerun(tmp_path):
    write_toy(tmp_path)
    done = run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1", "--json")
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.split('"run_id": "')[1].split('"')[0]
    proc = run(tmp_path, "resume", run_id)
    assert proc.returncode == 2
    assert "already finished" in proc.stderr and "nothing to resume" in proc.stderr


def test_runs_never_cuts_the_run_id_at_80_columns(tmp_path):
    write_toy(tmp_path)
    done = run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1", "--json")
    run_id = done.stdout.split('"run_id": "')[1].split('"')[0]
    env = dict(cli_env(), COLUMNS="80")
    proc = subprocess.run(cli("runs"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert run_id in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80


def test_runs_at_80_columns_keeps_headers_and_statuses_whole(tmp_path):
    write_toy(tmp_path)
    run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1", "--json")
    env = dict(cli_env(), COLUMNS="80")
    proc = subprocess.run(cli("runs"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    header = next(line for line in proc.stdout.splitlines() if "run" in line.split())
    assert header.split() == ["run", "status", "kernel", "backend", "speedup", "created"]
    assert "finished" in proc.stdout.split() and "kernel_sum" in proc.stdout.split()


def test_an_unknown_backend_in_the_config_names_the_key(tmp_path):
    write_toy(tmp_path)
    (tmp_path / "speedpatch.toml").write_text('[backends]\ntoy = "toy-foo"\n')
    proc = run(tmp_path, "evaluate", "sum.toy")
    assert proc.returncode == 2
    assert "backends.toy in speedpatch.toml: unknown backend 'toy-foo'" in proc.stderr


def test_a_bad_iteration_count_names_the_option(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "-1")
    assert proc.returncode == 2
    assert "--iterations/-T (search.iterations): must be at least 1, got -1" in proc.stderr


def test_a_search_without_an_llm_says_it_uses_the_offline_moves(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "optimize", "sum.toy", "-T", "1")
    assert proc.returncode == 0, proc.stderr
    assert "no LLM configured" in proc.stderr and "offline moves" in proc.stderr


def test_an_explicit_offline_search_is_not_warned_about(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1")
    assert "no LLM configured" not in proc.stderr


def test_warnings_are_part_of_the_json_result(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "optimize", "sum.toy", "-T", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert any("no LLM configured" in w for w in json.loads(proc.stdout)["warnings"])


def test_evaluate_on_a_compile_only_backend_says_compiled_not_run(tmp_path):
    source = tmp_path / "matmul.cu"
    source.write_text((EXAMPLES / "cuda" / "matmul.cu").read_text())
    proc = run(tmp_path, "evaluate", "matmul.cu", "--backend", "cuda-compile")
    if "not usable here" in proc.stderr:  # no nvcc on this machine
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "compiled, not run" in proc.stdout
    assert "correct (" not in proc.stdout


def test_bench_of_an_unknown_target_names_the_known_ones_without_a_traceback(tmp_path):
    proc = run(tmp_path, "bench", "hip", "--examples", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: unknown target 'hip'") and "known targets:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_model_without_an_api_key_or_an_endpoint_is_refused_before_anything_runs(tmp_path):
    write_toy(tmp_path)
    env = cli_env()
    env.pop("OPENAI_BASE_URL", None)
    proc = subprocess.run(cli("optimize", "sum.toy", "--model", "gpt-4.1", "-T", "1"), cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: no API key for the LLM: model gpt-4.1 goes to OpenAI's endpoint")
    assert "SPEEDPATCH_API_KEY" in proc.stderr and "--base-url" in proc.stderr and "--offline" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / ".speedpatch" / "runs.sqlite3").exists() or json.loads(
        run(tmp_path, "runs", "--json").stdout) == []


def test_a_model_on_a_local_endpoint_needs_no_api_key(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "optimize", "sum.toy", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "-T", "1",
               "--json")
    assert "needs an API key" not in proc.stderr


def test_applying_a_run_a_second_time_says_it_is_already_applied(tmp_path):
    path = write_toy(tmp_path)
    done = run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1", "--json")
    run_id = json.loads(done.stdout)["run_id"]
    assert run(tmp_path, "apply", run_id).returncode == 0
    applied = path.read_text()
    again = run(tmp_path, "apply", run_id)
    assert again.returncode == 0, again.stderr
    assert "already" in again.stdout and "nothing written" in again.stdout
    assert "stale" not in again.stderr
    assert path.read_text() == applied


def test_a_bad_value_in_speedpatch_toml_names_the_file_and_the_key(tmp_path):
    write_toy(tmp_path)
    (tmp_path / "speedpatch.toml").write_text('[search]\niterations = "3"\n')
    proc = run(tmp_path, "evaluate", "sum.toy")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: {tmp_path / 'speedpatch.toml'}: search.iterations: expected an integer")


def test_a_bad_value_in_a_parent_folders_speedpatch_toml_names_that_file(tmp_path):
    (tmp_path / "speedpatch.toml").write_text("offline = 1\n")
    (tmp_path / "kernels").mkdir()
    write_toy(tmp_path / "kernels")
    proc = run(tmp_path / "kernels", "evaluate", "sum.toy")
    assert proc.returncode == 2
    assert f"{tmp_path / 'speedpatch.toml'}: offline: expected true or false" in proc.stderr


def test_an_unknown_target_in_the_backends_table_is_refused(tmp_path):
    write_toy(tmp_path)
    (tmp_path / "speedpatch.toml").write_text('[backends]\ntoyy = "toy-count"\n')
    proc = run(tmp_path, "evaluate", "sum.toy")
    assert proc.returncode == 2
    assert "backends.toyy" in proc.stderr and "unknown target 'toyy'" in proc.stderr and "toy" in proc.stderr


def test_a_mistyped_backend_table_is_refused_with_the_name_it_resembles(tmp_path):
    write_toy(tmp_path)
    (tmp_path / "speedpatch.toml").write_text('[backend.toy-cuont]\nanything = 1\n')
    proc = run(tmp_path, "evaluate", "sum.toy")
    assert proc.returncode == 2
    assert "[backend.toy-cuont]" in proc.stderr and "[backend.toy-count]" in proc.stderr


def test_a_table_for_another_targets_backend_is_left_alone(tmp_path):
    write_toy(tmp_path)
    (tmp_path / "speedpatch.toml").write_text('[backend.cuda-ssh]\nhost = "gpu1"\n')
    proc = run(tmp_path, "evaluate", "sum.toy")
    assert proc.returncode == 0, proc.stderr


def test_an_unknown_key_in_a_backend_table_is_refused_with_the_key_it_resembles(tmp_path):
    (tmp_path / "mm.c").write_text((EXAMPLES / "gemmini" / "matmul_128.c").read_text())
    (tmp_path / "speedpatch.toml").write_text('[backend.gemmini-native]\ninclude_dirs = "/opt/rocc-tests"\n')
    proc = run(tmp_path, "evaluate", "mm.c")
    assert proc.returncode == 2, proc.stderr
    assert "[backend.gemmini-native]" in proc.stderr and "unknown key 'include_dirs'" in proc.stderr
    assert "did you mean 'include_dir'?" in proc.stderr


def test_a_file_without_a_kernel_says_what_a_kernel_of_its_target_looks_like(tmp_path):
    (tmp_path / "add.c").write_text("void add(int *a, int *b, int n) { for (int i = 0; i < n; i++) a[i] += b[i]; }\n")
    proc = run(tmp_path, "evaluate", "add.c")
    assert proc.returncode == 2
    assert "no kernel found" in proc.stderr and "gemmini: a C function that issues Gemmini work" in proc.stderr
    assert "examples/gemmini/" in proc.stderr


def test_a_misspelt_reuse_word_is_answered_with_the_word_it_resembles(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1", "--reuse", "atuo")
    assert proc.returncode == 2
    assert "no such run" in proc.stderr and "did you mean auto?" in proc.stderr
    none = run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1", "--reuse", "none")
    assert none.returncode == 2 and "did you mean off?" in none.stderr


def test_apply_to_a_file_that_is_gone_says_so_and_how_to_see_the_winner(tmp_path):
    path = write_toy(tmp_path)
    run_id = json.loads(run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1", "--json").stdout)["run_id"]
    path.unlink()
    proc = run(tmp_path, "apply", run_id)
    assert proc.returncode == 2
    assert "no longer there" in proc.stderr and f"speedpatch show {run_id} --diff" in proc.stderr
    assert not path.exists()


def test_bench_reports_each_example_with_a_readable_speedup_and_whole_headers(tmp_path):
    examples = tmp_path / "examples"
    examples.mkdir()
    write_toy(examples)
    env = dict(cli_env(), COLUMNS="80")
    proc = subprocess.run(cli("bench", "toy", "--examples", str(examples), "-T", "1"), cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^sum\.toy: finished \d+\.\d\dx$", proc.stderr, re.M), proc.stderr
    assert "(offline proposer, 1 iteration)" in proc.stdout
    header = next(line for line in proc.stdout.splitlines() if line.split()[:1] == ["example"])
    assert header.split() == ["example", "baseline", "best", "speedup", "util", "seconds", "evals/min", "status"]
    assert "finished" in proc.stdout.split()


def test_workspace_may_follow_the_command_as_people_type_it(tmp_path):
    write_toy(tmp_path)
    run_id = json.loads(run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1", "--json").stdout)["run_id"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    after = run(elsewhere, "runs", "--json", "--workspace", str(tmp_path))
    assert after.returncode == 0, after.stderr
    assert [r["run_id"] for r in json.loads(after.stdout)] == [run_id]
    before = run(elsewhere, "--workspace", str(tmp_path), "show", run_id, "--json")
    assert before.returncode == 0, before.stderr


def test_a_backend_that_cannot_run_the_file_does_not_call_the_program_incorrect(tmp_path):
    source = tmp_path / "relu.py"
    source.write_text((EXAMPLES / "cuda" / "kernelbench_relu.py").read_text())
    proc = run(tmp_path, "evaluate", "relu.py", "--backend", "cuda-compile")
    if "not usable here" in proc.stderr:  # no nvcc on this machine
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 1, proc.stderr + proc.stdout
    assert proc.stdout.startswith("not evaluated (infra_error): cuda-compile could not run it")
    assert "NOT correct" not in proc.stdout and "handles .cu problems only" in proc.stdout


def test_the_apply_hint_names_the_workspace_when_the_run_is_stored_elsewhere(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "speedpatch.toml").write_text("offline = true\n")
    write_toy(project)
    done = run(tmp_path, "optimize", "project/sum.toy", "-T", "1")
    assert done.returncode == 0, done.stderr
    hint = next(line for line in done.stdout.splitlines() if line.startswith("apply it with: "))
    assert hint.endswith(f"--workspace {project}")
    applied = run(tmp_path, *hint.removeprefix("apply it with: speedpatch ").split())
    assert applied.returncode == 0, applied.stderr


def test_the_apply_hint_is_short_where_the_run_is_stored_here(tmp_path):
    write_toy(tmp_path)
    done = run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1")
    assert done.returncode == 0, done.stderr
    hint = next(line for line in done.stdout.splitlines() if line.startswith("apply it with: "))
    assert hint.split() == ["apply", "it", "with:", "speedpatch", "apply", hint.split()[-1]]


def test_an_endpoint_without_a_model_is_refused_without_a_traceback(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "optimize", "sum.toy", "--base-url", "http://127.0.0.1:9/v1", "-T", "1")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: the LLM endpoint http://127.0.0.1:9/v1 has no model to ask")
    assert "--model NAME" in proc.stderr and "Traceback" not in proc.stderr


def test_a_workspace_where_runs_cannot_be_kept_says_so_without_a_traceback(tmp_path):
    write_toy(tmp_path)
    (tmp_path / ".speedpatch").write_text("not a folder")
    proc = run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1")
    assert proc.returncode == 2
    assert "cannot keep runs in" in proc.stderr and "it is a file, not a folder" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bench_names_a_missing_examples_folder_and_an_unknown_example(tmp_path):
    missing = run(tmp_path, "bench", "toy", "--examples", str(tmp_path / "nope"))
    assert missing.returncode == 2 and f"--examples {tmp_path / 'nope'}: no such folder" in missing.stderr
    write_toy(tmp_path)
    unknown = run(tmp_path, "bench", "toy", "--examples", str(tmp_path), "--only", "summ")
    assert unknown.returncode == 2
    assert "no example named summ; examples: sum.toy" in unknown.stderr


def test_evaluate_of_a_kernel_without_a_harness_says_it_cannot_be_run(tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void k(float *x) { x[0] = 1; }\n")
    proc = run(tmp_path, "evaluate", "k.cu")
    assert proc.returncode == 2
    assert "kernel k cannot be run: no speedpatch harness" in proc.stderr and "optimized" not in proc.stderr
    proc = run(tmp_path, "optimize", "k.cu", "--offline")
    assert proc.returncode == 2 and "kernel k cannot be optimized: no speedpatch harness" in proc.stderr


def test_a_plugin_that_fails_to_load_is_reported_and_the_others_still_work(tmp_path):
    write_toy(tmp_path)
    env = dict(cli_env(), SPEEDPATCH_TARGET_MODULES="toy_target,no_such_plugin_module")
    listing = subprocess.run(cli("backends"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0, listing.stderr
    assert "toy-count" in listing.stdout and "Traceback" not in listing.stderr
    assert "no_such_plugin_module could not be loaded" in " ".join(listing.stdout.split())
    evaluated = subprocess.run(cli("evaluate", "sum.toy"), cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=120)
    assert evaluated.returncode == 0, evaluated.stderr
    (tmp_path / "k.hip").write_text("__global__ void k() {}\n")
    unknown = subprocess.run(cli("evaluate", "k.hip"), cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120)
    assert unknown.returncode == 2 and "no_such_plugin_module could not be loaded" in unknown.stderr


def test_a_base_url_without_a_scheme_is_refused_before_the_search(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "optimize", "sum.toy", "--model", "m", "--base-url", "localhost:8000/v1", "-T", "1")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: llm.base_url (--base-url) 'localhost:8000/v1' is not an http:// or https:// URL")


def test_reading_runs_where_there_are_none_creates_no_run_store(tmp_path):
    listing = run(tmp_path, "runs")
    assert listing.returncode == 0 and "no runs yet" in listing.stdout
    assert json.loads(run(tmp_path, "runs", "--json").stdout) == []
    for command in (("show", "abc123"), ("apply", "abc123"), ("resume", "abc123")):
        proc = run(tmp_path, *command)
        assert proc.returncode == 2 and proc.stderr.startswith("error: no run 'abc123'"), proc.stderr
        assert "--workspace DIR" in proc.stderr
    assert not (tmp_path / ".speedpatch").exists()


def test_a_missing_file_says_where_it_was_looked_for(tmp_path):
    proc = run(tmp_path, "evaluate", "kernels/nope.c")
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: kernels/nope.c: no such file (looked in {tmp_path})"


def test_reverify_on_a_backend_without_an_independent_one_says_it_was_not_done(tmp_path):
    write_toy(tmp_path)
    proc = run(tmp_path, "evaluate", "sum.toy", "--reverify", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["receipt"]["reverified"] == (
        "not re-verified: toy-count has no independent backend to re-verify on")


def test_resuming_an_llm_run_without_its_api_key_says_how_to_resume_it(tmp_path):
    write_toy(tmp_path)
    (tmp_path / "speedpatch.toml").write_text("[llm]\nretries = 0\n")
    keyed = dict(cli_env(), SPEEDPATCH_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    started = subprocess.run(cli("optimize", "sum.toy", "--model", "m", "-T", "1", "--json"), cwd=tmp_path, env=keyed,
                             capture_output=True, text=True, timeout=120)
    run_id = json.loads(started.stdout)["run_id"]
    assert started.returncode == 3, started.stderr  # the endpoint is down: interrupted, resumable
    env = cli_env()
    env.pop("OPENAI_BASE_URL", None)
    proc = subprocess.run(cli("resume", run_id), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "this run asks model m at OpenAI's endpoint" in proc.stderr and "resume again" in proc.stderr
    assert "--offline" not in proc.stderr


def test_brackets_in_a_plan_and_the_winner_id_are_printed_as_written(tmp_path):
    plan = "Sum xs[i] with the builtin [/fast] instead of the loop."
    write_toy(tmp_path, moves={plan: "def kernel_sum(xs):\n    return sum(xs)\n"})
    proc = run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    text = " ".join(proc.stdout.split())
    assert plan in text
    winner = re.search(r"winner (\S+):", text).group(1)
    assert f"[{winner}]" in text  # the result table's best row names it


def test_an_unexpected_failure_shows_its_traceback_without_the_key(tmp_path, monkeypatch, capsys):
    from speedpatch.cli import main as cli_main

    key = "sk-test-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)

    def broken(args):
        raise RuntimeError(f"could not reach https://user:{key}@llm.example/v1")

    monkeypatch.setattr(cli_main, "cmd_runs", broken)
    assert cli_main.main(["--workspace", str(tmp_path), "runs"]) == 1
    err = capsys.readouterr().err
    assert "RuntimeError: could not reach https://user:" in err and "Traceback" in err
    assert key not in err and "failed unexpectedly" in err
