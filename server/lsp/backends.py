"""Which backend a kernel will run on, and whether it can run here (cached: checks may look for tools)."""

from __future__ import annotations

import threading

from speedpatch import targets
from speedpatch.config import Config
from speedpatch.targets.base import Availability


class BackendChooser:
    def __init__(self) -> None:
        self._cache: dict[tuple[str, str, str], Availability] = {}
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

    def availability(self, target: str, backend: str, config: Config) -> Availability:
        settings = config.backend_settings.get(backend, {})
        key = (target, backend, repr(sorted(settings.items())))
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit
        try:
            found = self._check(target, backend, settings)
        except KeyError as exc:
            found = Availability(False, str(exc).strip("'\""))
        except Exception as exc:  # a backend's own check failing is a reason, not a server crash
            found = Availability(False, f"backend check failed: {exc}")
        with self._lock:
            self._cache[key] = found
        return found

    @staticmethod
    def cannot_time(target: str, backend: str) -> bool:
        """Whether `backend` exists and only compiles/checks (so a timing backend must be set up)."""
        try:
            return not targets.get_target(target).backend(backend).measures_speed
        except Exception:
            return False

    @staticmethod
    def _check(target_name: str, name: str, settings: dict) -> Availability:
        # look the backend up through its own target: another target failing to load must not matter
        target = targets.get_target(target_name)
        backend = target.backend(name)
        found = backend.availability(settings)
        if found.usable and not backend.measures_speed:
            # the engine refuses to rank candidates it cannot time; say so before the user tries
            measuring = [b.name for b in target.backends() if b.measures_speed]
            return Availability(
                False,
                f"{name} only compiles/checks, it cannot time candidates; "
                f"measuring backends: {', '.join(measuring) or 'none for this target'}",
            )
        return found
