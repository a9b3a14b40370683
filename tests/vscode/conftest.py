import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # vscode_tools.py, next to this file

SETUP_WAIT = 20 * 60  # seconds: a cold install compiles code-server's native modules


@pytest.fixture(scope="session", autouse=True)
def tools_installed_in_background():
    """scripts/test.sh installs the editor tools while the other suites run; wait for that to finish."""
    status_file = os.environ.get("SPEEDPATCH_SETUP_STATUS")
    if not status_file:
        return
    status, log = Path(status_file), Path(status_file).with_suffix(".log")
    deadline = time.monotonic() + SETUP_WAIT
    while not status.exists() or not status.read_text().strip():
        if time.monotonic() > deadline:
            pytest.fail(f"the editor tools' setup did not finish in {SETUP_WAIT} s; see {log}")
        time.sleep(1)
    if status.read_text().strip() != "0":
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
        pytest.fail(f"scripts/setup/vscode-e2e.sh failed (exit {status.read_text().strip()}):\n{tail}")
