"""The version is written once (speedpatch.__version__); the package metadata and the command agree."""

from __future__ import annotations

import importlib.metadata
import subprocess

import speedpatch
from support.toys import cli, cli_env


def test_the_command_the_metadata_and_the_module_say_the_same_version():
    shown = subprocess.run(cli("--version"), env=cli_env(), capture_output=True, text=True, timeout=60)
    assert shown.stdout.strip() == f"speedpatch {speedpatch.__version__}"
    assert importlib.metadata.version("speedpatch") == speedpatch.__version__
