"""Lazy access to speedpatch.api.

speedpatch.api pulls in the whole engine and the LLM client stack (openai alone takes seconds to import
on a busy machine). The editor's first code lens only needs kernel detection, so the server starts without
it, loads it on a background thread right after initialization, and every caller goes through `api()`.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType
from typing import Any

from speedpatch import targets
from speedpatch.model import Kernel

_lock = threading.Lock()


def api() -> ModuleType:
    with _lock:  # one importer; the others wait for the finished module
        return importlib.import_module("speedpatch.api")


def warm_up() -> None:
    # The target registry loads lazily and is not safe to load from two threads at once (a second caller
    # can see it half-filled); load it here, on the caller's thread, before the engine import starts.
    targets.all_targets()
    threading.Thread(target=api, name="speedpatch-import", daemon=True).start()


def find_kernels(path: str, text: str) -> list[Kernel]:
    """Kernels of every target that handles this file type (what speedpatch.api.find_kernels does, without
    importing the engine). A target that raises is skipped, so the others still show their kernels."""
    found: list[Kernel] = []
    for target in targets.targets_for_path(path):
        try:
            found += target.find_kernels(text, path)
        except Exception:
            continue
    return found


def find_findings(path: str, text: str) -> list[Any]:
    """Problems targets see in a file without running it (Target.diagnostics: known cheats, harness
    violations), each with a 0-based line and column."""
    found: list[Any] = []
    for target in targets.targets_for_path(path):
        try:
            found += target.diagnostics(text, path)
        except Exception:
            continue
    return found


def find_syntax_error(path: str, text: str, kernels: list[Kernel]) -> str:
    """Where the file does not parse in the language of its kernels' targets ("" when it parses)."""
    for target in targets.targets_for_path(path):
        mine = [k for k in kernels if k.target == target.name]
        if not mine:
            continue
        try:
            found = target.syntax_error(text, mine[0])
        except Exception:
            continue
        if found:
            return found
    return ""
