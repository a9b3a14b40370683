"""A real VS Code (code-server) in a throw-away folder: HOME, TMPDIR and XDG_* point inside it, the
extension .vsix is installed into its own extensions dir, and the server runs in its own process group
so stopping it stops its children too."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from vscode_tools import CODE_SERVER, DRIVER, PLAYWRIGHT_CORE, node_env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class VSCode:
    folder: Path  # the per-run folder (kept on failure, under .e2e/)
    chromium: str
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def prepare(self) -> None:
        for name in (
            "home",
            "tmp",
            "xdg-config",
            "xdg-cache",
            "xdg-data",
            "xdg-state",
            "user-data",
            "extensions",
        ):
            (self.folder / name).mkdir(parents=True, exist_ok=True)
        self.env = node_env(
            HOME=str(self.folder / "home"),
            TMPDIR=str(self.folder / "tmp"),
            XDG_CONFIG_HOME=str(self.folder / "xdg-config"),
            XDG_CACHE_HOME=str(self.folder / "xdg-cache"),
            XDG_DATA_HOME=str(self.folder / "xdg-data"),
            XDG_STATE_HOME=str(self.folder / "xdg-state"),
        )
        user = self.folder / "user-data" / "User"
        user.mkdir(parents=True, exist_ok=True)
        (user / "settings.json").write_text(
            json.dumps(
                {
                    "workbench.startupEditor": "none",
                    "workbench.tips.enabled": False,
                    "chat.disableAIFeatures": True,
                    "update.mode": "none",
                    "telemetry.telemetryLevel": "off",
                    "extensions.ignoreRecommendations": True,
                    "git.openRepositoryInParentFolders": "never",
                    "workbench.secondarySideBar.defaultVisibility": "hidden",
                }
            )
        )

    def install(self, vsix: Path) -> None:
        done = subprocess.run(
            [
                str(CODE_SERVER),
                "--install-extension",
                str(vsix),
                "--force",
                "--extensions-dir",
                str(self.folder / "extensions"),
                "--user-data-dir",
                str(self.folder / "user-data"),
            ],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"installing the extension failed:\n{done.stdout}\n{done.stderr}"

    def start(self) -> None:
        self.port = free_port()
        log = open(self.folder / "code-server.log", "wb")
        # setsid: code-server and everything it spawns (extension host, language server) share one group.
        self.process = subprocess.Popen(
            [
                str(CODE_SERVER),
                "--auth",
                "none",
                "--bind-addr",
                f"127.0.0.1:{self.port}",
                "--disable-telemetry",
                "--disable-update-check",
                "--disable-workspace-trust",
                "--disable-getting-started-override",
                "--user-data-dir",
                str(self.folder / "user-data"),
                "--extensions-dir",
                str(self.folder / "extensions"),
            ],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"code-server exited with {self.process.returncode}; see {self.folder}/code-server.log"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(
            f"code-server did not answer /healthz within 60 s; see {self.folder}/code-server.log"
        )

    def stop(self) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        except ProcessLookupError:
            pass
        self.process = None

    def workspace(self, name: str, sources: list[Path], settings: dict[str, object]) -> Path:
        """A workspace folder with copies of `sources` (files or folders) and .vscode/settings.json."""
        ws = self.folder / name
        ws.mkdir()
        for source in sources:
            if source.is_dir():
                shutil.copytree(source, ws / source.name)
            else:
                shutil.copy2(source, ws / source.name)
        (ws / ".vscode").mkdir()
        (ws / ".vscode" / "settings.json").write_text(json.dumps(settings, indent=2))
        return ws

    def multi_root_workspace(
        self, name: str, folders: dict[str, tuple[list[Path], str]], settings: dict[str, object]
    ) -> Path:
        """A multi-root workspace: under <name>/, one folder per entry of `folders` (folder name ->
        (sources to copy, its speedpatch.toml)), and <name>/<name>.code-workspace listing them in that
        order with `settings` as its workspace settings (a multi-root workspace keeps them there)."""
        ws = self.folder / name
        for folder, (sources, toml) in folders.items():
            root = ws / folder
            root.mkdir(parents=True)
            for source in sources:
                shutil.copy2(source, root / source.name)
            (root / "speedpatch.toml").write_text(toml)
        file = ws / f"{name}.code-workspace"
        file.write_text(json.dumps({"folders": [{"path": f} for f in folders], "settings": settings}, indent=2))
        return file

    def drive(
        self, scenario: str, workspace: Path, file: str, timeout: float, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        artifacts = self.folder / f"artifacts-{scenario}"
        env = node_env(
            E2E_URL=self.url,
            E2E_FOLDER=str(workspace),
            E2E_FILE=file,
            E2E_SCENARIO=scenario,
            E2E_ARTIFACTS=str(artifacts),
            E2E_TIMEOUT_MS=str(int(timeout * 1000 * 0.8)),
            PLAYWRIGHT_CORE=str(PLAYWRIGHT_CORE),
            CHROMIUM=self.chromium,
            HOME=self.env["HOME"],
            TMPDIR=self.env["TMPDIR"],
            XDG_CONFIG_HOME=self.env["XDG_CONFIG_HOME"],
            XDG_CACHE_HOME=self.env["XDG_CACHE_HOME"],
            **extra,
        )
        done = subprocess.run(
            ["node", str(DRIVER)], env=env, capture_output=True, text=True, timeout=timeout + 60
        )
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / "driver.log").write_text(done.stdout + done.stderr)
        return done

    def files_containing(self, text: str) -> list[Path]:
        """Files under the run folder (settings, workspaces, logs, storage) whose bytes contain `text`."""
        needle = text.encode()
        return [p for p in self.folder.rglob("*") if p.is_file() and needle in p.read_bytes()]
