"""Pull code out of LLM replies: the code is the LAST fenced block of the reply."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)
_OPENING = re.compile(r"^[ \t]*(`{3,}|~{3,})", re.M)


def last_code_block(reply: str) -> str | None:
    text = (reply or "").replace("\r\n", "\n")
    blocks = list(_FENCE.finditer(text))
    tail = text[blocks[-1].end():] if blocks else text
    if not blocks or _OPENING.search(tail):
        # no block, or a final block left open (reply cut by max_tokens): its code is incomplete, and an
        # earlier complete block is usually the quoted original - neither is the answer
        return None
    code = blocks[-1].group(3).strip("\n")
    return code if code.strip() else None
