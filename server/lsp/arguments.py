"""The arguments of the commands and custom requests, as typed records (docs/lsp-protocol.md).

Each command or request takes one JSON object. Its record here declares the fields (snake_case here,
camelCase on the wire: run_id is "runId"), their types, and the defaults of the optional ones. `parse`
turns what pygls hands a handler (a command's arguments as a list of JSON values, a request's params as
namedtuples) into that record; a missing, null or mistyped field is an Invalid Params error that names the
field and the command, so the editor's log says which call was wrong and how.

Unknown fields are ignored: the protocol only ever grows by optional fields, and a client newer than its
server (or one sending a field this server does not need) must not be refused for it.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pygls.exceptions import JsonRpcInvalidParams

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")


@dataclass(frozen=True)
class OptimizeArgs:
    """speedpatch.optimize: the kernel to search (a quick search runs fewer iterations)."""

    uri: str
    kernel: str
    quick: bool = False


@dataclass(frozen=True)
class RunArgs:
    """speedpatch.resume, speedpatch.apply, speedpatch/runReport: one stored run."""

    run_id: str


@dataclass(frozen=True)
class CandidateArgs:
    """speedpatch.showDiff, speedpatch/candidate: a run's candidate, its best when candidate_id is ""."""

    run_id: str
    candidate_id: str = ""


@dataclass(frozen=True)
class CancelArgs:
    """speedpatch.cancel: a run by id, or the one running on a document's kernel."""

    run_id: str = ""
    uri: str = ""
    kernel: str = ""

    def __post_init__(self) -> None:
        if not self.run_id and not (self.uri and self.kernel):
            raise ValueError("give 'runId', or both 'uri' and 'kernel'")


@dataclass(frozen=True)
class DocumentArgs:
    """speedpatch.configureGpu: the document whose folder is configured."""

    uri: str


@dataclass(frozen=True)
class TargetsArgs:
    """speedpatch/targets: backends are checked under the configuration of the folder owning uri
    ("" for the first folder)."""

    uri: str = ""


@dataclass(frozen=True)
class NoArgs:
    """speedpatch.runs, speedpatch/runs: nothing to say (an empty object, or no argument at all)."""


def wire_name(field: str) -> str:
    """run_id -> runId: the protocol's field names are camelCase."""
    head, *rest = field.split("_")
    return head + "".join(part.capitalize() for part in rest)


def parse(cls: type[T], raw: Any, where: str) -> T:
    """The record cls from one JSON object (null or absent: an empty one); `where` names the command or
    request in the error."""
    value = _plain(raw)
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise JsonRpcInvalidParams(f"{where}: expected one object argument, got {_json_type(value)}")
    hints = typing.get_type_hints(cls)
    found: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        key = wire_name(field.name)
        item = value.get(key)
        required = field.default is dataclasses.MISSING
        if item is None:  # absent and null mean the same: JSON clients write either for "not given"
            if required:
                raise JsonRpcInvalidParams(f"{where}: missing field {key!r} ({_TYPE_NAMES[hints[field.name]]})")
            continue
        expected = hints[field.name]
        # bool is a subclass of int in Python; the exact type check keeps true from passing as a number
        if type(item) is not expected:
            raise JsonRpcInvalidParams(
                f"{where}: field {key!r} must be a {_TYPE_NAMES[expected]}, got {_json_type(item)} {_excerpt(item)}"
            )
        if required and item == "":
            raise JsonRpcInvalidParams(f"{where}: field {key!r} must not be empty")
        found[field.name] = item
    try:
        return cls(**found)
    except ValueError as exc:  # a rule across fields (__post_init__)
        raise JsonRpcInvalidParams(f"{where}: {exc}") from exc


def command_argument(cls: type[T], args: tuple[Any, ...], command: str) -> T:
    """A command's one object argument (none at all: every field at its default, or the missing one named)."""
    if len(args) > 1:
        raise JsonRpcInvalidParams(f"{command}: expected one object argument, got {len(args)} arguments")
    return parse(cls, args[0] if args else None, command)


def to_wire(record: DataclassInstance) -> dict[str, Any]:
    """The JSON object of a record (what lenses and code actions put in their commands' arguments);
    fields at their defaults are left out, as a client would."""
    out = {}
    for field in dataclasses.fields(record):
        value = getattr(record, field.name)
        if field.default is dataclasses.MISSING or value != field.default:
            out[wire_name(field.name)] = value
    return out


_TYPE_NAMES: dict[Any, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}


def _plain(value: Any) -> Any:
    """pygls's namedtuples (custom-request params) -> dicts and lists, recursively."""
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _excerpt(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
