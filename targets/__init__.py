"""Target registry. Built-in targets are imported lazily; more can come from the `speedpatch.targets`
entry-point group or from modules named in SPEEDPATCH_TARGET_MODULES (comma-separated), each of which
calls `register`."""

from __future__ import annotations

import importlib
import os
import threading
from importlib.metadata import entry_points
from pathlib import PurePath

from speedpatch.targets.base import Backend, Target

BUILTIN = {
    "gemmini": "speedpatch.targets.gemmini.target:GemminiTarget",
    "nki": "speedpatch.targets.nki.target:NkiTarget",
    "cuda": "speedpatch.targets.cuda.target:CudaTarget",
}

_targets: dict[str, Target] = {}
_load_errors: dict[str, str] = {}
_loaded = False
_load_lock = threading.RLock()  # the first caller loads; callers on other threads wait for it


def register(target: Target) -> None:
    _targets[target.name] = target


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if _loaded:
            return
        _load_builtins()
        _loaded = True


def _load_builtins() -> None:
    for name, spec in BUILTIN.items():
        module, _, attr = spec.partition(":")
        try:
            register(getattr(importlib.import_module(module), attr)())
        except ImportError as exc:
            _load_errors[name] = str(exc)
    for ep in entry_points(group="speedpatch.targets"):
        register(ep.load()())
    for module in filter(None, os.environ.get("SPEEDPATCH_TARGET_MODULES", "").split(",")):
        importlib.import_module(module.strip())


def all_targets() -> list[Target]:
    _load_all()
    return list(_targets.values())


def get_target(name: str) -> Target:
    _load_all()
    if name not in _targets:
        known = ", ".join(sorted(_targets)) or "none"
        why = f" ({_load_errors[name]})" if name in _load_errors else ""
        raise KeyError(f"unknown target {name!r}{why}; known targets: {known}")
    return _targets[name]


def targets_for_path(path: str) -> list[Target]:
    suffix = PurePath(path).suffix.lower()
    return [t for t in all_targets() if suffix in t.extensions]


def all_backends() -> list[Backend]:
    return [b for t in all_targets() for b in t.backends()]


def get_backend(name: str) -> Backend:
    for b in all_backends():
        if b.name == name:
            return b
    known = ", ".join(b.name for b in all_backends())
    raise KeyError(f"unknown backend {name!r}; known backends: {known}")
