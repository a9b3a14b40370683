"""Pull code out of LLM replies: the code is the LAST fenced block of the reply."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)


def last_code_block(reply: str) -> str | None:
    blocks = [m.group(3) for m in _FENCE.finditer(reply or "")]
    if not blocks:
        # an unterminated final fence (reply cut by max_tokens) is not trusted: the code is incomplete
        return None
    code = blocks[-1].strip("\n")
    return code if code.strip() else None
