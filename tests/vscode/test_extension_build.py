"""The extension type-checks, its unit tests pass, and it packages into an installable .vsix."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from vscode_tools import EXTENSION, build_vsix, npm, require_build_tools

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("vscode")]  # each runs npm (a few seconds)


def test_typescript_type_checks() -> None:
    require_build_tools()
    done = npm("run", "check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_unit_tests_pass() -> None:
    require_build_tools()
    done = npm("test")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ℹ fail 0" in done.stdout
    assert "ℹ pass 0" not in done.stdout, "the unit test run found no tests"


@pytest.fixture(scope="module")
def vsix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_build_tools()
    return build_vsix(tmp_path_factory.mktemp("vsix"))


def test_vsix_holds_the_bundle_manifest_and_wheel_only(vsix: Path) -> None:
    names = zipfile.ZipFile(vsix).namelist()
    assert "extension/dist/extension.js" in names
    assert "extension/package.json" in names
    # vscode-languageclient is bundled by esbuild; sources, tests and node_modules stay out of the package.
    assert not [
        n for n in names if n.startswith(("extension/node_modules/", "extension/src/", "extension/test/"))
    ]
    manifest = json.loads(zipfile.ZipFile(vsix).read("extension/package.json"))
    assert (manifest["publisher"], manifest["name"]) == ("speedpatch", "speedpatch")


def test_vsix_carries_the_python_wheel_for_the_first_use_install(vsix: Path, tmp_path: Path) -> None:
    package = zipfile.ZipFile(vsix)
    wheels = [n for n in package.namelist() if n.startswith("extension/python/") and n.endswith(".whl")]
    assert len(wheels) == 1, wheels
    (tmp_path / "speedpatch.whl").write_bytes(package.read(wheels[0]))
    inside = zipfile.ZipFile(tmp_path / "speedpatch.whl").namelist()
    # what `python -m speedpatch.lsp` needs, plus a target's data files
    assert {
        "speedpatch/lsp/__main__.py",
        "speedpatch/lsp/server.py",
        "speedpatch/targets/__init__.py",
    } <= set(inside)
    assert any(n.startswith("speedpatch/menus/") and n.endswith(".toml") for n in inside)


def test_manifest_never_registers_the_servers_command_ids() -> None:
    # vscode-languageclient registers "speedpatch.optimize" etc. from the server's executeCommandProvider;
    # a second registration by the extension would fail at activation.
    manifest = json.loads((EXTENSION / "package.json").read_text())
    commands = [c["command"] for c in manifest["contributes"]["commands"]]
    assert commands and all(c.startswith("speedpatch.client.") for c in commands)


def test_every_setting_has_a_description_and_a_default() -> None:
    properties = json.loads((EXTENSION / "package.json").read_text())["contributes"]["configuration"][
        "properties"
    ]
    assert {"speedpatch.llm.baseUrl", "speedpatch.llm.models", "speedpatch.offline"} <= set(properties)
    for name, spec in properties.items():
        assert spec.get("description"), name
        assert "default" in spec, name
    assert not [n for n in properties if "apikey" in n.lower()], "the API key must not be a setting"
