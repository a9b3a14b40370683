"""Kernel detection per document text, cached, and safe on anything the editor sends us."""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from speedpatch.model import Kernel, source_hash

log = logging.getLogger(__name__)

# Parsing a multi-megabyte generated file on every keystroke would stall the server; kernels worth
# optimizing by hand live in files far smaller than this.
MAX_PARSE_CHARS = 1_000_000
_CACHE_SIZE = 64


@dataclass
class Detection:
    kernels: list[Kernel] = field(default_factory=list)
    findings: list[Any] = field(default_factory=list)  # targets' Finding(rule, message, line, column)
    note: str = ""  # why detection was skipped or failed, shown as a diagnostic; "" when fine
    syntax: str = ""  # where a kernel file does not parse ("line 15 does not parse as C: ..."); "" when it does
    syntax_line: int = 0  # 0-based line of that error
    hidden: list[str] = field(default_factory=list)  # kernels the last parse showed that this one lost


class Detector:
    """Runs every matching target's find_kernels on a text; results are cached by (uri, text hash), so
    code lens, inlay hint, code action and diagnostics requests for one document version parse it once."""

    def __init__(
        self,
        find: Callable[[str, str], list[Kernel]],
        findings: Callable[[str, str], list[Any]] | None = None,
        syntax: Callable[[str, str, list[Kernel]], str] | None = None,
    ):
        self._find = find
        self._findings = findings
        self._syntax = syntax
        self._cache: OrderedDict[tuple[str, str], Detection] = OrderedDict()
        # the kernels each document showed when it last parsed: a syntax error that makes a kernel vanish
        # is reported as such instead of the lens disappearing without a word
        self._last_kernels: dict[str, list[Kernel]] = {}
        self._lock = threading.Lock()

    def detect(self, uri: str, path: str, text: str) -> Detection:
        if len(text) > MAX_PARSE_CHARS:
            return Detection(
                note=f"speedpatch: file not scanned for kernels: {len(text):,} characters is over the "
                f"{MAX_PARSE_CHARS:,} limit"
            )
        key = (uri, source_hash(text))
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        found = self._scan(path, text, self._last_kernels.get(uri, []))
        with self._lock:
            if found.kernels and not found.syntax:
                self._last_kernels[uri] = found.kernels
            self._cache[key] = found
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return found

    def _scan(self, path: str, text: str, before: list[Kernel]) -> Detection:
        try:
            findings = list(self._findings(path, text)) if self._findings else []
            found = Detection(kernels=list(self._find(path, text)), findings=findings)
            # only a file that has (or had) kernels is checked: a broken unrelated .c or .py file is the
            # language's own extension's business, not ours
            judged = found.kernels or before
            if self._syntax is not None and judged:
                found.syntax = self._syntax(path, text, judged)
                if found.syntax:
                    found.syntax_line = _line_in(found.syntax, text)
                    names = {k.name for k in found.kernels}
                    found.hidden = [k.name for k in before if k.name not in names]
            return found
        except Exception as exc:  # a target bug must not take the editor session down
            log.warning("kernel detection failed for %s: %s", path, exc)
            return Detection(note=f"speedpatch: kernel detection failed: {type(exc).__name__}: {exc}")

    def forget(self, uri: str) -> None:
        with self._lock:
            self._last_kernels.pop(uri, None)
            for key in [k for k in self._cache if k[0] == uri]:
                del self._cache[key]


def _line_in(message: str, text: str) -> int:
    """The 0-based line a "line N ..." message names, kept inside the text."""
    match = re.search(r"\bline (\d+)", message)
    last = max(text.count("\n"), 0)
    return min(max(int(match.group(1)) - 1, 0), last) if match else 0


def kernel_named(kernels: list[Kernel], name: str) -> Kernel | None:
    return next((k for k in kernels if k.name == name), None)


def kernel_at_line(kernels: list[Kernel], start_line: int, end_line: int) -> list[Kernel]:
    """Kernels whose region (end_line exclusive) overlaps the given inclusive line range."""
    return [k for k in kernels if k.start_line <= end_line and start_line < max(k.end_line, k.start_line + 1)]
