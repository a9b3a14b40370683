"""Pull the kernel out of an LLM reply.

A reply may hold the whole file, the kernel alone, several fenced blocks (a sketch, the kernel, a usage
snippet), or code without fences. The code taken is the last complete fenced block that DEFINES the kernel
being optimized, by name, as the target's parser sees it; a reply without such a block is taken whole, or
without its leading and trailing prose paragraphs, when that parses and defines the kernel. Anything else
is unusable, and the reason says what was wrong so that one repair prompt can ask for it again.

In edits mode ([search] code_format = "edits") a reply may instead hold a ```json block with a list of
{"old": ..., "new": ...} replacements, applied in order to the parent's kernel region (`edited_kernel`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from speedpatch.model import Kernel
from speedpatch.targets.base import Target

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)
_OPENING = re.compile(r"^[ \t]*(`{3,}|~{3,})", re.M)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
EDGE_PARAGRAPHS = 3  # prose paragraphs tried away at each end of an unfenced reply


@dataclass(frozen=True)
class Block:
    language: str
    code: str


@dataclass(frozen=True)
class Extracted:
    code: str | None  # the code that defines the kernel; None when the reply is unusable
    error: str = ""  # why it is unusable, said so that the model can fix it


def code_blocks(reply: str) -> tuple[list[Block], bool]:
    """The complete, non-empty fenced blocks of a reply in order, and whether a final block was left open
    (a reply cut by max_tokens: that block's code is incomplete and is not among the blocks)."""
    text = (reply or "").replace("\r\n", "\n")
    matches = list(_FENCE.finditer(text))
    tail = text[matches[-1].end():] if matches else text
    blocks = [Block(m.group(2), m.group(3).strip("\n")) for m in matches if m.group(3).strip()]
    return blocks, _OPENING.search(tail) is not None


def _defines(target: Target, code: str, kernel: Kernel, names: set[str]) -> bool:
    try:
        return bool(target.defined_names(code, kernel) & names)
    except Exception:  # a parser failure on junk: this code does not define the kernel
        return False


def _unfenced(reply: str, target: Target, kernel: Kernel, names: set[str]) -> str | None:
    """The widest run of the reply's paragraphs, losing at most a few at each end, that parses and
    defines the kernel."""
    text = (reply or "").replace("\r\n", "\n").strip("\n")
    if not text.strip():
        return None
    starts = [0] + [m.end() for m in _PARAGRAPH_BREAK.finditer(text)]
    ends = [m.start() for m in _PARAGRAPH_BREAK.finditer(text)] + [len(text)]
    spans = [(a, b) for a in range(min(EDGE_PARAGRAPHS + 1, len(starts)))
             for b in range(max(a, len(ends) - 1 - EDGE_PARAGRAPHS), len(ends))]
    for a, b in sorted(spans, key=lambda ab: (ab[0] - ab[1], ab[0])):
        code = text[starts[a] : ends[b]]
        if _defines(target, code, kernel, names) and not target.syntax_error(code, kernel):
            return code
    return None


def kernel_code(reply: str, target: Target, kernel: Kernel, region: str) -> Extracted:
    """The code in `reply` that defines `kernel` (whose current region text is `region`)."""
    names = target.kernel_names(region, kernel)
    wanted = " or ".join(f"`{n}`" for n in sorted(names)) or f"`{kernel.name}`"
    blocks, cut = code_blocks(reply)
    if cut:  # the answer is the unfinished block; an earlier complete one is usually the quoted original
        return Extracted(None, "the reply was cut off inside a code block (the block was never closed); "
                               f"reply with the complete definition of {wanted} and keep it short")
    defining = [b for b in blocks if _defines(target, b.code, kernel, names)]
    if defining:
        return Extracted(defining[-1].code)
    unfenced = None if blocks else _unfenced(reply, target, kernel, names)
    if unfenced is not None:
        return Extracted(unfenced)
    broken = [err for b in blocks if (err := target.syntax_error(b.code, kernel))]
    if broken:
        return Extracted(None, f"the code block does not parse ({broken[-1]}), so it defines no {wanted}")
    if blocks:
        return Extracted(None, f"none of the reply's {len(blocks)} code block(s) defines {wanted}")
    return Extracted(None, f"the reply holds no fenced code block, and its text does not parse as code that "
                           f"defines {wanted}")


def edited_kernel(reply: str, target: Target, kernel: Kernel, region: str) -> Extracted | None:
    """The parent's kernel region (`region`) with the edits of the reply's last ```json block applied in
    order, each "old" text found exactly once; None when the reply has no such block (a whole rewrite,
    which kernel_code takes)."""
    edits = [b for b in code_blocks(reply)[0] if b.language.lower() == "json"]
    if not edits:
        return None
    try:
        data = json.loads(edits[-1].code)
    except json.JSONDecodeError as exc:
        return Extracted(None, f"the ```json edits block is not valid JSON ({exc.msg}, line {exc.lineno})")
    if not isinstance(data, list) or not data or not all(
        isinstance(e, dict) and isinstance(e.get("old"), str) and isinstance(e.get("new"), str) for e in data
    ):
        return Extracted(None, 'the ```json edits block must be a non-empty list of {"old": "...", "new": "..."} '
                               "objects")
    code = region
    for i, edit in enumerate(data, 1):
        old = edit["old"]
        found = code.count(old) if old else 0
        if found != 1:
            why = ("is empty" if not old else "is not in the current code (copy it exactly, whitespace included)"
                   if not found else f"occurs {found} times (quote more of its context so that it is unique)")
            return Extracted(None, f'the "old" text of edit {i} {why}')
        code = code.replace(old, edit["new"], 1)
    names = target.kernel_names(region, kernel)
    if not _defines(target, code, kernel, names):
        wanted = " or ".join(f"`{n}`" for n in sorted(names)) or f"`{kernel.name}`"
        error = target.syntax_error(code, kernel)
        what = f"does not parse ({error})" if error else f"no longer defines {wanted}"
        return Extracted(None, f"after the edits the kernel code {what}")
    return Extracted(code)
