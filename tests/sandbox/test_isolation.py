"""What a candidate process can and cannot do inside the sandbox (docs/threat-model.md, "Sandbox").

Every test runs a real program through run_process, as backends run candidates, with bubblewrap."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

from speedpatch import redact
from speedpatch.targets import sandbox


def test_a_candidate_writes_its_scratch_folder_and_nothing_else(bwrap, scratch, tmp_path, python, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    kernel = workspace / "kernel.c"
    kernel.write_text("original\n")
    sandbox.set_process_scope("test", scratch, read_only=[workspace])
    run = python(f"""
        import pathlib
        for target in ["{home}/.profile", "{kernel}", "{workspace}/new.c", "/usr/local/speedpatch-probe",
                       "{Path(sys.prefix)}/owned", "scratch-file"]:
            try:
                pathlib.Path(target).write_text("written by the candidate")
                print("WROTE", target)
            except OSError as exc:
                print("REFUSED", target, exc.strerror)
    """, scratch)
    wrote = [line.split()[1] for line in run.output.splitlines() if line.startswith("WROTE")]
    assert wrote == [f"{home}/.profile", "scratch-file"], run.output  # the $HOME it sees is an empty tmpfs
    assert not (home / ".profile").exists()
    assert kernel.read_text() == "original\n" and not (workspace / "new.c").exists()
    assert (scratch / "scratch-file").read_text() == "written by the candidate"
    assert run.sandboxed


def test_the_workspace_is_read_only_not_hidden(bwrap, scratch, tmp_path, python):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "params.h").write_text("#define DIM 16\n")
    sandbox.set_process_scope("test", scratch, read_only=[workspace])
    run = python(f"print(open('{workspace}/params.h').read())", scratch)
    assert "#define DIM 16" in run.output


def test_a_candidate_cannot_reach_a_listening_local_socket(bwrap, scratch, python):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        run = python(f"""
            import socket
            for host in ("127.0.0.1", "1.1.1.1"):
                try:
                    socket.create_connection((host, {port}), timeout=3)
                    print("CONNECTED", host)
                except OSError as exc:
                    print("NO", host, exc.strerror)
        """, scratch)
    finally:
        server.close()
    assert "CONNECTED" not in run.output, run.output
    assert "NO 127.0.0.1 Connection refused" in run.output
    assert "NO 1.1.1.1 Network is unreachable" in run.output


def test_daemons_and_double_forks_die_with_the_evaluation(bwrap, scratch, alive):
    marker = "54321.25"  # a sleep length no other process uses
    shell = (f"sleep {marker} & (sleep {marker} &) ; setsid sleep {marker} & nohup sleep {marker} >/dev/null 2>&1 &"
             " echo started")
    run = sandbox.run_process(["/bin/sh", "-c", shell], scratch, 30)
    assert "started" in run.output and run.returncode == 0
    time.sleep(0.2)
    assert alive(f"sleep {marker}") == []


def test_a_timed_out_candidate_is_killed_with_everything_it_started(bwrap, scratch, alive):
    marker = "54321.75"
    run = sandbox.run_process(["/bin/sh", "-c", f"setsid sleep {marker} & sleep {marker}"], scratch, 1.0)
    assert run.timed_out and run.returncode is None
    time.sleep(0.2)
    assert alive(f"sleep {marker}") == []


def test_no_secret_reaches_the_candidate_environment(bwrap, scratch, python, monkeypatch):
    planted = {
        "SPEEDPATCH_API_KEY": "sk-speedpatch-0123456789",
        "OPENAI_API_KEY": "sk-openai-0123456789",
        "AWS_SECRET_ACCESS_KEY": "aws-secret-0123456789",
        "GITHUB_TOKEN": "ghp_0123456789abcdef",
        "DB_PASSWORD": "hunter2hunter2",
        "MY_LLM_CREDENTIAL_VAR": "custom-0123456789",
    }
    for name, value in planted.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ENDPOINT_CONFIG", "cfg-0123456789abc")  # an ordinary name, registered as the key's
    redact.register_env_name("ENDPOINT_CONFIG")
    # the candidate gets the values reversed, so that finding one is reported without printing it
    needles = [v[::-1] for v in [*planted.values(), "cfg-0123456789abc"]]
    run = python(f"""
        import os, glob
        needles = [n[::-1] for n in {needles!r}]
        places = {{"environ": "\\n".join(os.environ.values())}}
        for path in glob.glob("/proc/*/environ"):
            try:
                places[path] = open(path, "rb").read().decode(errors="replace")
            except OSError:
                pass
        for needle in needles:
            print("FOUND" if any(needle in text for text in places.values()) else "ABSENT", needle[:6])
        print("NAMES", sorted(os.environ))
    """, scratch, env={**os.environ, "SPEEDPATCH_SEED": "7"})
    assert run.output.count("ABSENT") == len(needles), run.output
    assert "SPEEDPATCH_SEED" in run.output  # what the backend set itself passes
    for name in planted:
        assert f"'{name}'" not in run.output


def test_address_space_is_limited_so_a_6_gib_allocation_fails(bwrap, scratch, python):
    run = python("""
        try:
            block = bytearray(6 << 30)
            print("ALLOCATED", len(block))
        except MemoryError:
            print("MEMORY-ERROR")
    """, scratch)
    assert "MEMORY-ERROR" in run.output, run.output


def test_file_size_is_limited(bwrap, scratch):
    limits = sandbox.Limits(file_bytes=1_000_000)
    run = sandbox.run_process(["/bin/sh", "-c", "head -c 5000000 /dev/zero > big"], scratch, 30, limits=limits)
    assert run.returncode != 0
    assert (scratch / "big").stat().st_size == 1_000_000


def test_output_is_capped_without_touching_disk_and_its_last_line_survives(bwrap, scratch):
    shell = "head -c 60000000 /dev/zero | tr '\\0' 'x'; echo; echo 'RESULT correct=1 cycles=42'"
    run = sandbox.run_process(["/bin/sh", "-c", shell], scratch, 60)
    assert run.output_bytes > 60_000_000
    assert run.output.splitlines()[-1] == "RESULT correct=1 cycles=42"
    assert "bytes of output cut" in run.output
    assert sum(p.stat().st_size for p in scratch.rglob("*") if p.is_file()) == 0


def test_a_result_channel_cannot_be_filled_by_output(bwrap, scratch, python):
    run = python("""
        import os, sys
        for _ in range(200000):
            print("log line " * 4)
        with os.fdopen(int(os.environ["SPEEDPATCH_RESULT_FD"]), "w") as channel:
            channel.write("verdict correct=1 cycles=12")
    """, scratch, result_channel=True)
    assert run.result == "verdict correct=1 cycles=12"
    assert run.output_bytes > 4_000_000


def test_a_passed_descriptor_reaches_the_candidate(bwrap, scratch, python, tmp_path):
    verdict = os.open(tmp_path / "verdict", os.O_RDWR | os.O_CREAT)
    try:
        python(f"import os; os.pwrite({verdict}, b'from inside', 0)", scratch, pass_fds=(verdict,))
        assert os.pread(verdict, 64, 0) == b"from inside"
    finally:
        os.close(verdict)


def test_root_runs_the_candidate_as_nobody_without_host_secrets(bwrap, scratch, python):
    run = python("""
        import os
        print("UID", os.getuid())
        print("SHADOW", repr(open("/etc/shadow").read()[:20]) if os.path.exists("/etc/shadow") else "none")
    """, scratch)
    if os.geteuid() == 0:
        assert "UID 65534" in run.output
    assert "root:" not in run.output


def test_a_trusted_step_keeps_network_and_environment(bwrap, scratch, python, monkeypatch):
    monkeypatch.setenv("REMOTE_HOST_ALIAS", "gpu-box-7")
    run = python("import os; print(os.environ.get('REMOTE_HOST_ALIAS'))", scratch, trusted=True)
    assert "gpu-box-7" in run.output and not run.sandboxed


def test_tools_named_inside_a_shell_command_are_shown(bwrap, scratch, tmp_path):
    tool = tmp_path / "tools" / "fake-simulator.sh"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho simulated \"$1\"\n")
    tool.chmod(0o755)
    run = sandbox.run_process(["/bin/sh", "-c", f"{tool} 'prog.elf'"], scratch, 30)
    assert run.output.strip() == "simulated prog.elf", run.output


def test_cancelling_the_owner_kills_a_running_sandbox_and_its_children(bwrap, scratch, alive):
    import threading

    marker = "54321.125"
    done: list[sandbox.ProcResult] = []

    def evaluation() -> None:
        sandbox.set_process_scope("cancelled-pool", scratch)
        done.append(sandbox.run_process(["/bin/sh", "-c", f"setsid sleep {marker} & sleep {marker}"], scratch, 60))

    worker = threading.Thread(target=evaluation)
    worker.start()
    deadline = time.monotonic() + 20
    while not alive(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    sandbox.kill_processes("cancelled-pool")
    worker.join(timeout=20)
    assert done and time.monotonic() - started < 10
    time.sleep(0.2)
    assert alive(f"sleep {marker}") == []


def test_a_crash_reads_as_the_signal_it_died_of(bwrap, scratch):
    run = sandbox.run_process(["/bin/sh", "-c", "kill -SEGV $$"], scratch, 30)
    assert run.returncode == -11
