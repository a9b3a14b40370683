"""targets/hosts.py: where backends run commands, this machine (in the sandbox) or a host over ssh/scp.
Every test runs real processes; the remote host is this machine behind stand-in ssh and scp scripts
(tests/support/fakehost.py), which record what reached it."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from speedpatch.targets import hosts
from speedpatch.targets.hosts import LocalHost, SshHost
from support.fakehost import fake_scp, fake_ssh, script, ssh_calls


@pytest.fixture
def remote(tmp_path: Path) -> dict:
    """Settings for an SshHost whose ssh and scp are stand-ins; its remote_dir and the ssh log."""
    tools = tmp_path / "tools"
    tools.mkdir()
    log = tmp_path / "ssh.log"
    settings = {"host": "box", "ssh": fake_ssh(tools, log), "scp": fake_scp(tools),
                "remote_dir": str(tmp_path / "remote")}
    local = tmp_path / "local"
    local.mkdir()
    return {"settings": settings, "log": log, "remote_dir": tmp_path / "remote", "local": local}


def _folder(path: Path, files: dict[str, str]) -> Path:
    path.mkdir()
    for name, text in files.items():
        (path / name).write_text(text)
    return path


# ---- this machine --------------------------------------------------------------------------------------

def test_a_local_host_runs_commands_sandboxed_in_the_uploaded_folder(bwrap, scratch):
    build = _folder(scratch / "build", {"input.txt": "from the build folder\n"})
    host = LocalHost(scratch)
    assert host.upload(build, 10) is None
    done = host.run(["/bin/sh", "-c", "cat input.txt; pwd"], 10)
    assert done.returncode == 0 and done.sandboxed
    assert done.output.splitlines() == ["from the build folder", str(build.resolve())]


def test_a_local_host_the_user_took_out_of_the_sandbox_keeps_the_environment(bwrap, tmp_path, monkeypatch):
    monkeypatch.setenv("SPEEDPATCH_TEST_MARK", "kept")
    inside = LocalHost(tmp_path).shell("echo mark=$SPEEDPATCH_TEST_MARK", 10)
    outside = LocalHost(tmp_path, sandboxed=False).shell("echo mark=$SPEEDPATCH_TEST_MARK", 10)
    assert inside.sandboxed and inside.output.strip() == "mark="  # not on the sandbox's allowlist
    assert not outside.sandboxed and outside.output.strip() == "mark=kept"


def test_a_local_shell_command_is_the_shells_to_read(tmp_path):
    done = LocalHost(tmp_path).shell("printf '%s\\n' 'a b' | tr a-z A-Z", 10)
    assert done.output.strip() == "A B"


def test_a_local_result_channel_comes_back_apart_from_the_output(tmp_path):
    program = "import os; print('noise'); os.write(int(os.environ['SPEEDPATCH_RESULT_FD']), b'verdict')"
    done = LocalHost(tmp_path, result_channel=True).run([sys.executable, "-c", program], 30)
    assert done.result == "verdict" and done.output.strip() == "noise"


def test_a_local_fetch_reads_what_a_command_wrote_and_none_for_a_missing_file(tmp_path):
    host = LocalHost(tmp_path)
    host.shell("echo written > out.txt", 10)
    assert host.fetch("out.txt", 10) == "written\n" and host.fetch("missing.txt", 10) is None


# ---- a host over ssh -----------------------------------------------------------------------------------

def test_upload_copies_the_files_to_a_fresh_folder_where_commands_then_run(remote):
    build = _folder(remote["local"] / "build", {"a.txt": "A\n", "b.txt": "B\n"})
    host = SshHost(remote["settings"], remote["local"])
    assert host.upload(build, 10) is None
    done = host.run(["cat", "a.txt", "b.txt"], 10)
    assert done.returncode == 0 and done.output.splitlines() == ["A", "B"]
    (folder,) = remote["remote_dir"].iterdir()
    assert folder.name.startswith("sp-") and sorted(p.name for p in folder.iterdir()) == ["a.txt", "b.txt"]


def test_run_quotes_each_argument_for_the_remote_shell(remote):
    host = SshHost(remote["settings"], remote["local"])
    word = "it's $HOME; rm -rf x"
    done = host.run(["printf", "%s\\n", word], 10)
    assert done.output.strip() == word
    assert ssh_calls(remote["log"]) == [("box", shlex.join(["printf", "%s\\n", word]))]


def test_the_ssh_setting_is_a_command_line_with_options_of_its_own(remote):
    settings = dict(remote["settings"], ssh=f"env SPEEDPATCH_TEST_MARK=through {remote['settings']['ssh']}")
    done = SshHost(settings, remote["local"]).shell("echo $SPEEDPATCH_TEST_MARK", 10)
    assert done.output.strip() == "through" and ssh_calls(remote["log"]) == [("box", "echo $SPEEDPATCH_TEST_MARK")]


def test_shell_sends_the_command_line_as_written(remote):
    done = SshHost(remote["settings"], remote["local"]).shell("echo $((6 * 7))", 10)
    assert done.output.strip() == "42" and ssh_calls(remote["log"]) == [("box", "echo $((6 * 7))")]


def test_standard_input_reaches_the_remote_command(remote):
    done = SshHost(remote["settings"], remote["local"]).run(["tr", "a-z", "A-Z"], 10, stdin="secret nonce\n")
    assert done.output.strip() == "SECRET NONCE"


def test_fetch_copies_back_a_file_a_remote_command_wrote(remote):
    host = SshHost(remote["settings"], remote["local"])
    host.upload(_folder(remote["local"] / "build", {}), 10)
    host.run(["sh", "-c", "echo verdict > result.json"], 10)
    assert host.fetch("result.json", 10) == "verdict\n" and host.fetch("missing.json", 10) is None


def test_cleanup_removes_the_uploaded_folder_and_nothing_when_nothing_was_uploaded(remote):
    SshHost(remote["settings"], remote["local"]).cleanup()
    assert ssh_calls(remote["log"]) == []
    host = SshHost(remote["settings"], remote["local"])
    host.upload(_folder(remote["local"] / "build", {"a.txt": "A\n"}), 10)
    host.cleanup()
    assert list(remote["remote_dir"].iterdir()) == [] and ssh_calls(remote["log"])[-1][1].startswith("rm -rf ")


def test_a_failed_connection_is_lost_but_a_failing_command_is_not(remote):
    host = SshHost(remote["settings"], remote["local"])
    assert not host.lost(host.shell("exit 3", 10))
    down = dict(remote["settings"], ssh=script(remote["local"] / "down", "echo 'connection refused' >&2; exit 255\n"))
    refused = SshHost(down, remote["local"]).shell("true", 10)
    assert host.lost(refused) and "connection refused" in refused.output


def test_a_failed_upload_is_returned_and_leaves_nothing_to_clean_up(remote):
    down = dict(remote["settings"], ssh=script(remote["local"] / "down", "exit 255\n"))
    host = SshHost(down, remote["local"])
    failed = host.upload(_folder(remote["local"] / "build", {"a.txt": "A\n"}), 10)
    assert failed is not None and failed.returncode == 255 and host.dir is None


# ---- choosing and checking -----------------------------------------------------------------------------

def test_the_settings_host_chooses_ssh_and_names_where_commands_run(tmp_path):
    remote_host = hosts.host_for({"host": "gpu1"}, tmp_path)
    local_host = hosts.host_for({}, tmp_path, devices=["/dev/nvidia*"])
    assert isinstance(remote_host, SshHost) and remote_host.where == "host gpu1" == hosts.where({"host": "gpu1"})
    assert isinstance(local_host, LocalHost) and local_host.where == "this machine" == hosts.where({})
    assert local_host.devices == ("/dev/nvidia*",)


def test_a_missing_ssh_or_scp_command_is_named(remote):
    assert hosts.missing_ssh_tool(remote["settings"]) == ""
    missing = dict(remote["settings"], scp="/no/such/scp -q")
    assert hosts.missing_ssh_tool(missing) == "scp command not found: /no/such/scp -q"
