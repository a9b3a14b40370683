"""Character offsets and lines (what targets give us) -> LSP positions in the negotiated encoding."""

from __future__ import annotations

from lsprotocol import types


def _units(text: str, encoding: str) -> int:
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == types.PositionEncodingKind.Utf32:
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def position_at(text: str, offset: int, encoding: str = types.PositionEncodingKind.Utf16) -> types.Position:
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    return types.Position(line=line, character=_units(text[line_start:offset], encoding))


def line_end(text: str, line: int, encoding: str = types.PositionEncodingKind.Utf16) -> types.Position:
    """The position just after the last character of a 0-based line (before its newline)."""
    lines = text.split("\n")
    if not lines:
        return types.Position(line=0, character=0)
    line = max(0, min(line, len(lines) - 1))
    return types.Position(line=line, character=_units(lines[line].rstrip("\r"), encoding))


def line_start(text: str, line: int, encoding: str = types.PositionEncodingKind.Utf16) -> types.Position:
    """The position of the first non-blank character of a 0-based line (its end when it is blank)."""
    lines = text.split("\n")
    content = lines[max(0, min(line, len(lines) - 1))].rstrip("\r")
    return line_column(text, line, len(content) - len(content.lstrip()), encoding)


def line_column(
    text: str, line: int, column: int, encoding: str = types.PositionEncodingKind.Utf16
) -> types.Position:
    """A (0-based line, character column) pair -> a position in the negotiated encoding, clamped to the line."""
    lines = text.split("\n")
    line = max(0, min(line, len(lines) - 1))
    content = lines[line].rstrip("\r")
    return types.Position(line=line, character=_units(content[: max(0, column)], encoding))


def minimal_edit(old: str, new: str, encoding: str) -> types.TextEdit:
    """One TextEdit turning old into new, covering only the changed middle (keeps undo and cursor tidy)."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    # back up to a line start so the edit replaces whole lines (clearer in the editor's undo history)
    prefix = old.rfind("\n", 0, prefix) + 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    start = position_at(old, prefix, encoding)
    end = position_at(old, len(old) - suffix, encoding)
    return types.TextEdit(range=types.Range(start=start, end=end), new_text=new[prefix : len(new) - suffix])
