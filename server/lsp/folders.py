"""Workspace folders: each one behaves as if it were opened alone.

A folder owns what used to be the whole workspace's: its speedpatch.toml (and the last error loading it),
its run store (<folder>/.speedpatch), the in-memory index of that store and the accept-on-save
re-verifications kept beside it. A document belongs to the deepest folder containing it; a file outside
every folder belongs to the first folder (what a single-folder server always did).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from speedpatch.config import CONFIG_FILE, Config, load_config
from speedpatch.errors import ConfigError
from speedpatch.store import Store

from .index import RunIndex, norm_path
from .verify import Verifications


class Folder:
    def __init__(self, root: Path, name: str, warn: Callable[[str], None]):
        self.root = root
        self.name = name or root.name
        self.uri = from_fs_path(str(root)) or str(root)
        self.config = Config()
        self.config_error = ""
        self.store = _open_store(root, warn)
        self.index = RunIndex(self.store, root)
        self.index.refresh(force=True)
        self.verifications = Verifications(self.store.root / "lsp-verifications.json")
        self.store_dir = norm_path(root / ".speedpatch")
        self.config_path = norm_path(root / CONFIG_FILE)

    def contains(self, path: str) -> bool:
        return path == str(self.root) or path.startswith(str(self.root).rstrip(os.sep) + os.sep)

    def make_config(self, overrides: dict[str, Any]) -> Config:
        return load_config(self.root, overrides)

    def reload_config(self, overrides: dict[str, Any]) -> str:
        """Load speedpatch.toml with the editor's overrides. On an error the last good configuration is
        kept (the folder's kernels still show) and the error is returned; "" when it loaded."""
        try:
            self.config = self.make_config(overrides)
            self.config_error = ""
        except ConfigError as exc:
            self.config_error = str(exc)
        return self.config_error


def _open_store(root: Path, warn: Callable[[str], None]) -> Store:
    try:
        return Store(root)
    except (OSError, sqlite3.Error) as exc:
        # a read-only or broken folder must not stop the editor features: keep runs for this session in
        # a scratch folder and say that they will not be kept
        scratch = Path(tempfile.mkdtemp(prefix="speedpatch-runs-"))
        warn(
            f"speedpatch: cannot use {root / '.speedpatch'} ({exc}); runs of this session are kept "
            f"in {scratch} and will not survive a restart"
        )
        return Store(scratch)


class Folders:
    """The open folders in the order the editor gave them (the first is the fallback owner)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the watcher and run threads look folders up too
        self._folders: dict[str, Folder] = {}

    def add(self, folder: Folder) -> None:
        with self._lock:
            self._folders[str(folder.root)] = folder

    def remove(self, root: str) -> Folder | None:
        with self._lock:
            return self._folders.pop(root, None)

    def get(self, root: str) -> Folder | None:
        with self._lock:
            return self._folders.get(root)

    def all(self) -> list[Folder]:
        with self._lock:
            return list(self._folders.values())

    @property
    def first(self) -> Folder | None:
        found = self.all()
        return found[0] if found else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._folders)

    def owner(self, path: str) -> Folder:
        """The deepest folder containing path; the first folder for a file outside all of them."""
        folders = self.all()
        inside = [f for f in folders if f.contains(path)]
        if inside:
            return max(inside, key=lambda f: len(str(f.root)))
        if not folders:
            raise LookupError("no workspace folder is open")
        return folders[0]


def initial_roots(params: types.InitializeParams) -> list[tuple[str, str]]:
    """(path, name) of the folders an editor opens with: its workspace folders, else its root."""
    if params.workspace_folders:
        found = [(to_fs_path(f.uri), f.name) for f in params.workspace_folders]
    elif params.root_uri:
        found = [(to_fs_path(params.root_uri), "")]
    else:
        found = [(params.root_path, "")]
    return [(path, name) for path, name in found if path]


def config_error_messages(folders: list[Folder], named: bool) -> list[str]:
    """What to tell the user about these folders' configuration errors. `named` (several folders are
    open) says which folder; an error in the editor settings is the same in every folder: said once."""
    where: dict[str, list[str]] = {}
    for folder in folders:
        if folder.config_error:
            where.setdefault(folder.config_error, []).append(folder.name)
    return [
        f"speedpatch: configuration error{' in ' + ', '.join(names) if named else ''}: {error}"
        for error, names in where.items()
    ]
