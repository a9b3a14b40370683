"""Target registry. Built-in targets are imported lazily, one at a time; more can come from the `speedpatch.targets`
entry-point group or from modules named in SPEEDPATCH_TARGET_MODULES (comma-separated), each of which
calls `register`."""

from __future__ import annotations

import importlib
import os
import threading
from importlib.metadata import entry_points
from pathlib import PurePath

from speedpatch.errors import NotFoundError
from speedpatch.targets.base import Target

# name -> (where the class lives, the file suffixes it handles): a command that needs one target imports
# only that one (NumPy and the NKI emulator cost half a second, a whole small Gemmini evaluation)
BUILTIN: dict[str, tuple[str, tuple[str, ...]]] = {
    "gemmini": ("speedpatch.targets.gemmini.target:GemminiTarget", (".c", ".h")),
    "nki": ("speedpatch.targets.nki.target:NkiTarget", (".py",)),
    "cuda": ("speedpatch.targets.cuda.target:CudaTarget", (".cu", ".cuh", ".py")),
}

_targets: dict[str, Target] = {}
_load_errors: dict[str, str] = {}
_plugins_loaded = False
_load_lock = threading.RLock()  # the first caller loads; callers on other threads wait for it


def register(target: Target) -> None:
    _targets[target.name] = target


def _load_builtin(name: str) -> None:
    with _load_lock:
        if name in _targets or name in _load_errors:
            return
        module, _, attr = BUILTIN[name][0].partition(":")
        try:
            register(getattr(importlib.import_module(module), attr)())
        except ImportError as exc:
            _load_errors[name] = str(exc)


def _load_plugins() -> None:
    """Targets from the `speedpatch.targets` entry-point group and SPEEDPATCH_TARGET_MODULES."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    with _load_lock:
        if _plugins_loaded:
            return
        # a plug-in that fails to load is reported (load_errors), never the end of every command
        for ep in entry_points(group="speedpatch.targets"):
            try:
                register(ep.load()())
            except Exception as exc:
                _load_errors[ep.name] = f"entry point {ep.value}: {type(exc).__name__}: {exc}"
        for module in filter(None, (m.strip() for m in os.environ.get("SPEEDPATCH_TARGET_MODULES", "").split(","))):
            try:
                importlib.import_module(module)
            except Exception as exc:
                _load_errors[module] = f"SPEEDPATCH_TARGET_MODULES {module}: {type(exc).__name__}: {exc}"
        _plugins_loaded = True


def all_targets() -> list[Target]:
    for name in BUILTIN:
        _load_builtin(name)
    _load_plugins()
    return list(_targets.values())


def load_errors() -> dict[str, str]:
    """Targets that could not be loaded here, each with why: a built-in's missing dependency, a plug-in's
    error (keyed by its entry point's or module's name)."""
    all_targets()
    return dict(_load_errors)


def get_target(name: str) -> Target:
    if name in BUILTIN:
        _load_builtin(name)
    else:
        _load_plugins()
    if name not in _targets:
        all_targets()
        known = ", ".join(sorted(_targets)) or "none"
        why = f" ({_load_errors[name]})" if name in _load_errors else ""
        raise NotFoundError(f"unknown target {name!r}{why}; known targets: {known}")
    return _targets[name]


def targets_for_path(path: str) -> list[Target]:
    suffix = PurePath(path).suffix.lower()
    for name, (_, suffixes) in BUILTIN.items():
        if suffix in suffixes:
            _load_builtin(name)
    _load_plugins()
    # built-ins first, in BUILTIN's order, whichever a process happened to load first
    builtin_rank = {name: rank for rank, name in enumerate(BUILTIN)}
    found = [t for t in _targets.values() if suffix in t.extensions]
    return sorted(found, key=lambda t: builtin_rank.get(t.name, len(builtin_rank)))
