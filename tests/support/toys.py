"""Toy workspaces for engine and CLI tests (see tests/toy/toy_target.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import toy_target  # noqa: F401  (registers the toy target)
from speedpatch import api
from speedpatch.config import Config, load_config
from speedpatch.model import Problem

TESTS = Path(__file__).resolve().parents[1]


def write_toy(folder: Path, kernel: str | None = None, moves: dict[str, str] | None = None,
              reference: str = "sum(xs)") -> Path:
    """The standard toy problem, optionally with another kernel body, other moves or reference."""
    text = toy_target.EXAMPLE
    if moves is not None:
        text = text[: text.index("MOVES = {")] + f"MOVES = {moves!r}\n"
    if kernel is not None:
        start = text.index("def kernel_sum")
        end = text.index("\n\n\n", start) + 1
        text = text[:start] + kernel.rstrip("\n") + "\n" + text[end:]
    text = text.replace("return sum(xs)\n\n\ndef kernel_sum", f"return {reference}\n\n\ndef kernel_sum", 1)
    path = folder / "sum.toy"
    path.write_text(text)
    return path


def toy_problem(folder: Path, config: Config, **kw) -> Problem:
    path = write_toy(folder, **kw)
    return api.make_problem(str(path), path.read_text(), "kernel_sum", config)


def toy_config(folder: Path, **sections) -> Config:
    config = load_config(folder, sections or None)
    config.search.workers = config.search.workers or 2
    return config


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS / "toy"), str(TESTS), env.get("PYTHONPATH", "")])
    env["SPEEDPATCH_TARGET_MODULES"] = "toy_target"
    env.pop("SPEEDPATCH_API_KEY", None)
    env.pop("OPENAI_API_KEY", None)
    return env


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "speedpatch.cli.main", *args]
