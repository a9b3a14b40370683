"""`speedpatch optimize --reuse RUN|auto|off`: the schedule a run follows is chosen by problem and shown."""

from __future__ import annotations

import json
import subprocess

from support.toys import cli, cli_env, write_toy


def run(folder, *args):
    return subprocess.run(cli(*args), cwd=folder, env=cli_env(), capture_output=True, text=True, timeout=120)


def two_problems(folder):
    write_toy(folder)
    big = (folder / "sum.toy").read_text().replace("[5] * 16", "[5] * 64").replace("range(30)", "range(90)")
    (folder / "big.toy").write_text(big)


def test_json_names_the_donor_run_chosen_automatically(tmp_path):
    two_problems(tmp_path)
    donor = json.loads(run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1", "--json").stdout)
    proc = run(tmp_path, "optimize", "big.toy", "--offline", "-T", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["schedule"]["run_id"] == donor["run_id"]


def test_reuse_off_is_said_on_the_schedule_line(tmp_path):
    two_problems(tmp_path)
    run(tmp_path, "optimize", "sum.toy", "--offline", "-T", "1", "--json")
    proc = run(tmp_path, "optimize", "big.toy", "--offline", "-T", "1", "--reuse", "off")
    assert proc.returncode == 0, proc.stderr
    assert "schedule: none (reuse off)" in proc.stderr


def test_reuse_of_an_unknown_run_is_an_error_naming_it(tmp_path):
    two_problems(tmp_path)
    proc = run(tmp_path, "optimize", "big.toy", "--offline", "-T", "1", "--reuse", "feedbeef")
    assert proc.returncode != 0
    assert "--reuse feedbeef: no such run" in proc.stderr
