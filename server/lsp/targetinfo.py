"""speedpatch/targets: which targets and backends this server has, so that editors list none themselves.

Each target says which files are its (languages, extensions) and each backend whether it can run a search
here, under the configuration of the folder asked about (the same check the lenses show).
"""

from __future__ import annotations

from typing import Any

from pygls.uris import to_fs_path
from speedpatch import targets
from speedpatch.config import Config
from speedpatch.targets.base import Target

from .arguments import TargetsArgs, parse
from .backends import BackendChooser
from .state import SpeedpatchServer

TARGETS = "speedpatch/targets"


def target_info(target: Target, chooser: BackendChooser, config: Config) -> dict[str, Any]:
    """One target as the client sees it (protocol.ts TargetInfo)."""
    backends = []
    for backend in target.backends():
        found = chooser.availability(target.name, backend.name, config)
        backends.append(
            {
                "name": backend.name,
                "description": backend.description,
                "measuredOn": backend.measured_on,
                "measuresSpeed": backend.measures_speed,
                "usable": found.usable,
                "reason": found.reason,
            }
        )
    return {
        "name": target.name,
        "title": target.title or target.name,
        "languages": list(target.language_ids),
        "extensions": list(target.extensions),
        "fenceLanguage": target.prompt_language(),
        "defaultBackend": target.default_backend,
        "backend": chooser.backend_for(target.name, config),
        "backends": backends,
    }


def get_targets(ls: SpeedpatchServer, raw: Any) -> dict[str, Any]:
    """{"uri"?} -> {"targets": [...], "notLoaded": {name: why}}; backends are checked under the
    configuration of the folder owning uri (the first folder without one)."""
    uri = parse(TargetsArgs, raw, TARGETS).uri
    path = (to_fs_path(uri) if uri else None) or ""
    folders = ls.state.folders
    folder = folders.owner(path) if path else folders.all()[0]
    return {
        "targets": [target_info(t, ls.state.backends, folder.config) for t in targets.all_targets()],
        "notLoaded": targets.load_errors(),
    }
