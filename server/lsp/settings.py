"""Editor settings -> speedpatch.config overrides.

The client sends a camelCase settings object (docs/lsp-protocol.md) in initializationOptions and in
workspace/didChangeConfiguration; missing keys fall back to speedpatch.toml. Which keys there are, and the
speedpatch.toml key each overrides, is settings_schema.py's table. The API key only ever lives in
memory: it is passed to load_config as a runtime override and is excluded from anything we log or store.
"""

from __future__ import annotations

import re
from typing import Any

from .settings_schema import BACKENDS_KEY, SETTINGS

# The "quick" variant of Optimize: one small iteration, whatever the configured budget is.
QUICK_OVERRIDES: dict[str, Any] = {"search": {"iterations": 1, "beam": 1, "plans": 2, "codes": 1}}


def unwrap(settings: Any) -> dict[str, Any]:
    """didChangeConfiguration may carry the object directly or under the key "speedpatch"."""
    if not isinstance(settings, dict):
        return {}
    inner = settings.get("speedpatch")
    return inner if isinstance(inner, dict) else settings


def to_overrides(settings: dict[str, Any]) -> dict[str, Any]:
    """Map the client settings object onto the toml-shaped overrides load_config takes.

    Unknown keys are ignored (clients may send more than we use); None/"" mean "not set here", so that
    speedpatch.toml keeps its value. Bad values are left for load_config to reject with a ConfigError.
    """
    out: dict[str, Any] = {}
    for setting in SETTINGS:
        value = _lookup(settings, setting.key)
        if setting.toml and value not in (None, "", []):
            section, _, key = setting.toml.rpartition(".")
            (out.setdefault(section, {}) if section else out)[key] = value
    # one backend per target name, plugin targets included: a dict, not one declared setting per target
    backends = settings.get(BACKENDS_KEY)
    if isinstance(backends, dict):
        chosen = {t: b for t, b in backends.items() if isinstance(b, str) and b}
        if chosen:
            out[BACKENDS_KEY] = chosen
    return out


def name_setting(error: str, settings: dict[str, Any]) -> str:
    """A configuration error about a value the editor sent, saying which editor setting holds it: the user
    looks there, not in speedpatch.toml, whose key load_config names ("budget.max_seconds: must be >= 0")."""
    for setting in SETTINGS:
        if not setting.toml or _lookup(settings, setting.key) in (None, "", []):
            continue
        if re.search(rf"(^|\(){re.escape(setting.toml)}[):]", error):
            return f"{error} (the editor setting speedpatch.{setting.key})"
    return error


def _lookup(settings: dict[str, Any], key: str) -> Any:
    """settings["search"]["beam"] for "search.beam"; None when a level is missing or not an object."""
    value: Any = settings
    for part in key.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Deep merge of override dicts (extra wins)."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out
