"""The extension in a real VS Code (code-server) driven by headless Chromium, asserted on the DOM.

One code-server serves the module's scenarios. Everything runs under .e2e/<run>/ (HOME, TMPDIR, XDG_*,
workspaces, logs); that folder is deleted when all scenarios pass and kept, with screenshots, the page text
and the driver's log per scenario, when one fails (or always with SPEEDPATCH_E2E_KEEP=1).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from speedpatch.store import Store
from vscode_session import VSCode
from vscode_tools import ROOT, build_vsix, require_vscode

# A loaded 2-core machine can take minutes for a scenario; the driver has its own, tighter step timeouts.
# one xdist worker runs every editor test: they build into client-vscode/ and drive one code-server each
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.xdist_group("vscode")]

DEMO = ROOT / "examples" / "gemmini"
DEMO_FILE = "matmul_128.c"
SEARCH_SECONDS = 360  # the offline search itself takes ~20 s here; start-up on a loaded machine much more


@pytest.fixture(scope="module")
def vscode() -> Iterator[VSCode]:
    browser = require_vscode()
    folder = ROOT / ".e2e" / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    session = VSCode(folder=folder, chromium=browser)
    session.prepare()
    session.install(build_vsix(folder))
    session.start()
    failures_before = _failures()
    try:
        yield session
    finally:
        session.stop()
        if _failures() == failures_before and not os.environ.get("SPEEDPATCH_E2E_KEEP"):
            shutil.rmtree(folder, ignore_errors=True)


_failed: list[str] = []


def _failures() -> int:
    return len(_failed)


def _run(vscode: VSCode, scenario: str, workspace: Path, file: str, timeout: float, **extra: str) -> None:
    done = vscode.drive(scenario, workspace, file, timeout, **extra)
    if done.returncode != 0:
        _failed.append(scenario)
        pytest.fail(
            f"scenario {scenario!r} failed; artifacts (screenshots, page text, logs) kept in {vscode.folder}\n"
            + done.stdout[-6000:]
            + done.stderr[-2000:]
        )


def editor_settings(**extra: object) -> dict[str, object]:
    return {
        "speedpatch.pythonPath": sys.executable,  # the interpreter running the tests has speedpatch installed
        "chat.disableAIFeatures": True,
        "workbench.startupEditor": "none",
        "editor.inlayHints.enabled": "on",
        "editor.codeLens": True,
        "files.autoSave": "off",
        **extra,
    }


def test_extension_activates_logs_and_keeps_the_api_key_secret(vscode: VSCode) -> None:
    """Activation on a C file starts the server and logs to the speedpatch Output channel; "Set API key"
    hands the key to the server (logged masked) without writing it to settings, workspace or logs."""
    source = DEMO / DEMO_FILE
    if not source.exists():
        pytest.skip(f"{source} is missing")
    workspace = vscode.workspace("ws-activate", [source], editor_settings())
    secret = f"sk-e2e-{time.time_ns()}"
    _run(vscode, "activate", workspace, DEMO_FILE, timeout=300, E2E_SECRET=secret)
    leaked = [str(p.relative_to(vscode.folder)) for p in vscode.files_containing(secret)]
    assert not leaked, f"the API key was written to {leaked}"


def test_optimize_then_diff_apply_save_and_reverify_the_gemmini_demo(vscode: VSCode) -> None:
    if not (DEMO / DEMO_FILE).exists():
        pytest.skip(f"{DEMO / DEMO_FILE} is missing")
    # 9 plans: the offline proposer's 9th move on matmul_128 is its first that beats the library call, which
    # keeps its operands in place as upstream's does
    settings = editor_settings(
        **{
            "speedpatch.offline": True,
            "speedpatch.search.iterations": 1,
            "speedpatch.search.beam": 1,
            "speedpatch.search.plans": 9,
            "speedpatch.search.codes": 1,
        }
    )
    sources = [p for p in DEMO.iterdir() if not p.name.startswith(".")]  # not a stale .speedpatch/ run store
    workspace = vscode.workspace("ws-optimize", sources, settings)
    _run(vscode, "optimize", workspace, DEMO_FILE, timeout=SEARCH_SECONDS)


def test_a_kernel_file_that_does_not_parse_says_where_and_why_optimize_cannot_run(vscode: VSCode) -> None:
    source = DEMO / DEMO_FILE
    if not source.exists():
        pytest.skip(f"{source} is missing")
    workspace = vscode.workspace("ws-parse", [source], editor_settings(**{"speedpatch.offline": True}))
    _run(vscode, "doesNotParse", workspace, DEMO_FILE, timeout=300)


def test_a_kernel_that_does_not_compile_is_reported_as_the_users_code_at_its_line(vscode: VSCode) -> None:
    """Optimize on a kernel with a compile error: the lens says it does not compile (not "no faster version
    found"), gcc's error is a squiggle on the user's line and the message names no scratch path."""
    if not (DEMO / DEMO_FILE).exists():
        pytest.skip(f"{DEMO / DEMO_FILE} is missing")
    settings = editor_settings(**{"speedpatch.offline": True, "speedpatch.search.iterations": 1})
    sources = [p for p in DEMO.iterdir() if not p.name.startswith(".")]
    workspace = vscode.workspace("ws-compile", sources, settings)
    _run(vscode, "baselineFails", workspace, DEMO_FILE, timeout=SEARCH_SECONDS)


def test_a_cuda_kernel_with_no_gpu_here_offers_to_configure_one(vscode: VSCode) -> None:
    """The CUDA lens names the __global__ kernel and its "Configure a GPU backend…" writes the cuda-ssh
    set-up into the folder's speedpatch.toml and opens it (screenshots no-gpu.png, configure-gpu.png)."""
    from speedpatch import targets

    source = ROOT / "examples" / "cuda" / "matmul.cu"
    if not source.exists():
        pytest.skip(f"{source} is missing")
    backend = targets.get_target("cuda").default_backend
    if backend != "cuda-compile":
        pytest.skip(f"the CUDA default backend here is {backend}, not the compile-only one (a GPU is set up)")
    workspace = vscode.workspace("ws-nogpu", [source], editor_settings())
    _run(vscode, "noGpu", workspace, source.name, timeout=300)
    config = (workspace / "speedpatch.toml").read_text()
    assert 'cuda = "cuda-ssh"' in config and "[backend.cuda-ssh]" in config


def test_a_crashed_server_is_restarted_with_a_visible_error(vscode: VSCode) -> None:
    source = DEMO / DEMO_FILE
    if not source.exists():
        pytest.skip(f"{source} is missing")
    # The interpreter is a wrapper that records each Python's pid, so the driver can kill the server.
    pids = vscode.folder / "server-pids"
    wrapper = vscode.folder / "python-wrapper.sh"
    wrapper.write_text(f'#!/bin/sh\necho $$ >> "{pids}"\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    settings = editor_settings(**{"speedpatch.pythonPath": str(wrapper)})
    workspace = vscode.workspace("ws-crash", [source], settings)
    _run(vscode, "crash", workspace, DEMO_FILE, timeout=300, E2E_PID_FILE=str(pids))


def test_an_interpreter_without_the_package_gets_the_install_prompt(vscode: VSCode) -> None:
    source = DEMO / DEMO_FILE
    if not source.exists():
        pytest.skip(f"{source} is missing")
    bare = vscode.folder / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=60)
    settings = editor_settings(**{"speedpatch.pythonPath": str(bare / "bin" / "python")})
    workspace = vscode.workspace("ws-missing", [source], settings)
    _run(vscode, "missing", workspace, DEMO_FILE, timeout=240)


def test_a_multi_root_workspace_runs_a_kernel_in_its_own_folder(vscode: VSCode) -> None:
    """A .code-workspace with two folders, each with its own speedpatch.toml: optimizing the kernel of the
    second folder uses that folder's configuration and run store, and the Runs view names the folder."""
    other = DEMO / "conv_14x14_256.c"
    for source in (DEMO / DEMO_FILE, other):
        if not source.exists():
            pytest.skip(f"{source} is missing")
    file = vscode.multi_root_workspace(
        "ws-multi",
        {
            "alpha": ([other], "offline = true\n\n[search]\niterations = 3\n"),
            # 9 plans: the offline proposer's first 8 moves on matmul_128 find none faster (the library call keeps
            # its operands in place as upstream's does); the 9th does
            "beta": ([DEMO / DEMO_FILE], "offline = true\n\n[search]\niterations = 1\nbeam = 1\nplans = 9\ncodes = 1\n"),
        },
        editor_settings(),  # no search settings: those would override both folders' speedpatch.toml
    )
    _run(vscode, "multiroot", file.parent, DEMO_FILE, timeout=SEARCH_SECONDS, E2E_WORKSPACE=str(file),
         E2E_RUN_FOLDER="beta")
    runs = Store(file.parent / "beta").list_runs()
    # one iteration: beta's speedpatch.toml, not alpha's (3)
    assert [(r.kernel, r.iterations, r.status) for r in runs] == [("matmul_kernel", 1, "finished")]
    assert Store(file.parent / "alpha").list_runs() == []
