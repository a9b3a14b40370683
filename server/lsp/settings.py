"""Editor settings -> speedpatch.config overrides.

The client sends a camelCase settings object (docs/lsp-protocol.md) in initializationOptions and in
workspace/didChangeConfiguration; missing keys fall back to speedpatch.toml. The API key only ever lives in
memory: it is passed to load_config as a runtime override and is excluded from anything we log or store.
"""

from __future__ import annotations

from typing import Any

# client key -> speedpatch.toml key, per section
_SECTIONS: dict[str, dict[str, str]] = {
    "llm": {"baseUrl": "base_url", "models": "models", "apiKey": "api_key"},
    "budget": {
        "maxLlmCalls": "max_llm_calls",
        "maxEvaluations": "max_evaluations",
        "maxSeconds": "max_seconds",
    },
    "search": {"iterations": "iterations", "beam": "beam", "plans": "plans", "codes": "codes"},
}

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
    for section, keys in _SECTIONS.items():
        given = settings.get(section)
        if not isinstance(given, dict):
            continue
        table = {
            toml_key: given[key] for key, toml_key in keys.items() if given.get(key) not in (None, "", [])
        }
        if table:
            out[section] = table
    backends = settings.get("backends")
    if isinstance(backends, dict):
        chosen = {t: b for t, b in backends.items() if isinstance(b, str) and b}
        if chosen:
            out["backends"] = chosen
    if isinstance(settings.get("offline"), bool):
        out["offline"] = settings["offline"]
    return out


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Deep merge of override dicts (extra wins)."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out
