"""Which backend a kernel will run on, and whether it can run here (cached: checks may look for tools)."""

from __future__ import annotations

import threading

from speedpatch import targets
from speedpatch.config import Config
from speedpatch.targets.base import Availability


class BackendChooser:
    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], Availability] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()

    @staticmethod
    def backend_for(target: str, config: Config) -> str:
        chosen = config.backends.get(target)
        if chosen:
            return chosen
        try:
            return targets.get_target(target).default_backend
        except KeyError:
            return ""

    def availability(self, backend: str, config: Config) -> Availability:
        settings = config.backend_settings.get(backend, {})
        key = (backend, repr(sorted(settings.items())))
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit
        try:
            found = targets.get_backend(backend).availability(settings)
        except KeyError as exc:
            found = Availability(False, str(exc).strip("'\""))
        except Exception as exc:  # a backend's own check failing is a reason, not a server crash
            found = Availability(False, f"backend check failed: {exc}")
        with self._lock:
            self._cache[key] = found
        return found
