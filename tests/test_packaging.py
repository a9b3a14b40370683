"""The wheel carries everything an installed speedpatch needs (menus, headers, model sources...)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def source_copy(dest: Path) -> Path:
    """The project's tracked files, copied: setuptools builds in the source tree's build/, where another
    build running at the same time (the extension's package bundles a wheel too) would collide."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        src = ROOT / name
        if src.is_file() and not name.startswith("client-vscode/"):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    tree = source_copy(tmp_path_factory.mktemp("source"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                           str(out), str(tree)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return next(out.glob("speedpatch-*.whl"))


@pytest.mark.slow
def test_wheel_contains_menus_headers_and_model_sources(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for target in ("gemmini", "nki", "cuda"):
        assert f"speedpatch/menus/{target}.toml" in names
        assert f"speedpatch/menus/{target}.api.txt" in names  # the plan prompt's API listing
    assert "speedpatch/targets/gemmini/include/gemmini.h" in names
    assert any(n.startswith("speedpatch/targets/gemmini/model/") and n.endswith(".c") for n in names)
    assert any(n.startswith("speedpatch/targets/cuda/include/") for n in names)
    assert any(n.startswith("speedpatch/targets/nki/emulator/pkgs/nki/") for n in names)
    assert "speedpatch/lsp/server.py" in names


@pytest.mark.slow
def test_installed_wheel_evaluates_an_example_on_its_own(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = "import speedpatch, sys; from speedpatch.cli.main import main; print(speedpatch.__file__); sys.exit(main())"
    proc = subprocess.run(
        [sys.executable, "-c", code, "evaluate", str(ROOT / "examples" / "gemmini" / "matmul_128.c"), "--json"],
        cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=300,
    )
    first, _, rest = proc.stdout.partition("\n")
    assert first.startswith(str(site)), proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stderr
    result = json.loads(rest)
    assert result["correct"] and result["unit"] == "cycles" and result["value"] > 0
