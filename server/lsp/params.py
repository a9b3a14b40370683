"""Arguments of commands and custom requests, as plain dicts, checked.

pygls hands custom-request params over as namedtuples and command arguments as raw JSON values; both
become dicts here, and a missing or mistyped field is an Invalid Params error naming it.
"""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcInvalidParams


def plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def first_arg(args: tuple[Any, ...]) -> dict[str, Any]:
    """Commands take one object argument (docs/lsp-protocol.md)."""
    if not args:
        return {}
    value = plain(args[0])
    if not isinstance(value, dict):
        raise JsonRpcInvalidParams(f"expected one object argument, got {type(value).__name__}")
    return value


def text(obj: dict[str, Any], key: str, required: bool = True) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value:
        raise JsonRpcInvalidParams(f"missing or invalid string field {key!r}")
    return value
