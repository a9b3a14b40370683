"""C source structure for the Gemmini target, from tree-sitter: top-level functions, their names, the
calls they make, and character offsets (tree-sitter works in bytes; speedpatch Kernels use characters).

Every function here must survive junk input: binary data, huge files and broken C give an empty or
partial answer, never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for annotations only: tree_sitter is imported at the first parse (_parser)
    from tree_sitter import Node, Parser, Tree

MAX_SOURCE_CHARS = 2_000_000  # bigger files are not kernel sources worth parsing

# Calls that make a function a Gemmini kernel: the public API (instruction macros, hardware loops,
# the tiled library functions: matmul, conv, residual addition, LayerNorm/softmax, global average and
# upstream's DMA pooling, tiled_pool_auto*).
GEMMINI_CALL = re.compile(
    r"^(gemmini_\w+|tiled_(?:matmul|conv|resadd|norm|global_average|pool)\w*|sp_tiled_\w+)$"
)
# The instruction names of upstream's API before it was renamed gemmini_* (include/systolic.h, then the
# first include/gemmini.h: matmul_mvin(dram, spad), matmul_fence() ...; bareMetalC/aligned.c still uses
# them). Only these names: matmul_cpu, matmul_kernel... are ordinary functions.
LEGACY_INSTRUCTION = re.compile(
    r"^matmul_(?:mvin|block_mvin|mvout|preload|preload_zeros|compute_preloaded|compute_accumulated|config_ex|"
    r"config_ld|config_st|flush|fence)$"
)
# The short instruction names many Gemmini codes use, as macros or wrapper functions over the gemmini_*
# ones (config_ld, mvin, preload, compute_preloaded, ...). A call to one of them makes a kernel too; a
# function with one of these names is an instruction wrapper, not a kernel.
SHORT_INSTRUCTION = re.compile(
    r"^(?:extended\d?_)?(?:config_ld|config_ex|config_st|config_norm|mvin[23]?|block_mvin|mvout|preload|"
    r"preload_zeros|compute_preloaded|compute_accumulated|loop_ws|loop_conv_ws)$"
)


@dataclass
class Function:
    name: str
    start: int  # character offsets of the whole definition
    end: int
    start_line: int
    end_line: int
    signature_line: int
    text: str
    calls: list[str] = field(default_factory=list)


@lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter_c
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_c.language()))


def looks_like_text(text: str) -> bool:
    return len(text) <= MAX_SOURCE_CHARS and "\x00" not in text


def _char_offsets(data: bytes, text: str) -> Callable[[int], int]:
    """A byte-offset -> character-offset function (identity for ASCII files)."""
    if len(data) == len(text):
        return lambda b: b

    def convert(b: int) -> int:
        return len(data[:b].decode("utf-8", "replace"))

    return convert


def _parse(text: str) -> tuple[Tree, Callable[[int], int]] | None:
    """(tree, byte->character offset function) of a C source, or None when it is not parseable text."""
    if not looks_like_text(text):
        return None
    try:
        data = text.encode("utf-8", "surrogatepass")
        tree = _parser().parse(data)
    except (ValueError, UnicodeError):
        return None
    return tree, _char_offsets(data, text)


def _text(node: Node) -> str:
    # a node's text is None only in a tree parsed without its source, never here
    return (node.text or b"").decode("utf-8", "replace")


def _declarator_name(node: Node | None) -> str | None:
    """The identifier a (possibly pointer/parenthesized) function declarator declares."""
    while node is not None:
        if node.type == "identifier":
            return _text(node)
        if node.type in ("function_declarator", "pointer_declarator", "parenthesized_declarator",
                         "attributed_declarator"):
            node = node.child_by_field_name("declarator") or (node.named_children[0] if node.named_children else None)
            continue
        return None
    return None


def _calls(node: Node) -> list[str]:
    names: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "call_expression":
            fn = n.child_by_field_name("function")
            if fn is not None and fn.type == "identifier":
                names.append(_text(fn))
        stack.extend(n.children)
    return names


_CONDITIONAL = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b")


def _first_branches(text: str) -> str:
    """text with every preprocessor conditional reduced to its first branch: the directive lines and the
    lines of #elif/#else branches become blanks of the same length (newlines kept), so character offsets
    into the result are offsets into text. Upstream programs put unbalanced braces in the branches of an
    #ifdef (`#ifndef ELEM_T_IS_FLOAT if (a) { #else ... if (b) { #endif`), which no parser can take as written;
    one branch of each conditional is valid C."""
    lines = text.split("\n")
    out: list[str] = []
    dead: list[bool] = []  # per open conditional: is the current branch past the first one
    continued = False  # the previous line was a directive ending in a backslash
    for line in lines:
        blank = " " * len(line)
        if continued:
            out.append(blank)
            continued = line.endswith("\\")
            continue
        m = _CONDITIONAL.match(line)
        if m:
            kind = m.group(1)
            if kind.startswith("if"):
                dead.append(False)
            elif kind == "endif":
                if dead:
                    dead.pop()
            elif dead:  # elif / else: the first branch is over
                dead[-1] = True
            out.append(blank)
            continued = line.endswith("\\")
            continue
        out.append(blank if any(dead) else line)
    return "\n".join(out)


def functions(text: str, first_branches: bool = False) -> list[Function]:
    """Top-level function definitions of a C file (also those inside #if/#ifdef blocks). With first_branches,
    a file the parser cannot take as written is read again with each #if reduced to its first branch
    (_first_branches). Only for finding a whole program's main(): the static checks must see every branch
    (a candidate could otherwise hide a call in an #else behind a deliberate parse error)."""
    found = _functions(text)
    parsed = _parse(text) if first_branches else None
    if parsed is not None and parsed[0].root_node.has_error:
        reduced = _first_branches(text)
        if len(reduced) == len(text):
            alternative = _functions(reduced, source=text)
            if len(alternative) > len(found):
                return alternative
    return found


def _functions(text: str, source: str | None = None) -> list[Function]:
    """functions() of text; with source (a same-length variant of text), each Function's text is source's."""
    source = text if source is None else source
    parsed = _parse(text)
    if parsed is None:
        return []
    tree, to_char = parsed
    found: list[Function] = []
    stack = list(reversed(tree.root_node.children))
    while stack:
        node = stack.pop()
        if node.type.startswith("preproc_if") or node.type in ("preproc_else", "preproc_elif", "linkage_specification",
                                                               "declaration_list"):
            stack.extend(reversed(node.children))
            continue
        if node.type != "function_definition":
            continue
        declarator = node.child_by_field_name("declarator")
        name = _declarator_name(declarator)
        if not name:
            continue
        start, end = to_char(node.start_byte), to_char(node.end_byte)
        sig_line = declarator.start_point[0] if declarator is not None else node.start_point[0]
        found.append(Function(
            name=name, start=start, end=end, start_line=node.start_point[0], end_line=node.end_point[0] + 1,
            signature_line=sig_line, text=source[start:end], calls=_calls(node),
        ))
    return found


def calls_gemmini(fn: Function) -> bool:
    return any(GEMMINI_CALL.match(c) or SHORT_INSTRUCTION.match(c) or LEGACY_INSTRUCTION.match(c) for c in fn.calls)


def is_instruction_wrapper(fn: Function) -> bool:
    """A function named like a short or legacy instruction (mvin, matmul_mvin...): part of the file's API
    layer."""
    return SHORT_INSTRUCTION.match(fn.name) is not None or LEGACY_INSTRUCTION.match(fn.name) is not None


def top_level_items(text: str) -> list[tuple[str, str, str]]:
    """(kind, name, text) of each top-level item: kind is 'function', 'define', 'include', 'other'."""
    parsed = _parse(text)
    if parsed is None:
        return []
    tree, to_char = parsed
    items: list[tuple[str, str, str]] = []
    for node in tree.root_node.children:
        snippet = text[to_char(node.start_byte):to_char(node.end_byte)]
        if node.type == "function_definition":
            items.append(("function", _declarator_name(node.child_by_field_name("declarator")) or "", snippet))
        elif node.type in ("preproc_def", "preproc_function_def"):
            name_node = node.child_by_field_name("name")
            items.append(("define", _text(name_node) if name_node else "", snippet))
        elif node.type == "preproc_include":
            items.append(("include", "", snippet))
        elif node.type == "comment":
            items.append(("comment", "", snippet))
        else:
            items.append(("other", "", snippet))
    return items


def _has_product(node: Node) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "binary_expression":
            op = n.child_by_field_name("operator")
            if op is not None and op.type == "*":
                return True
        stack.extend(n.children)
    return False


def host_mac_loop_depth(text: str) -> int:
    """The deepest loop nesting at which code does a multiply-accumulate (`x += a * b` or
    `x = x + a * b`): 2 or more is the shape of a matmul or convolution computed on the host."""
    parsed = _parse(text)
    if parsed is None:
        return 0
    tree, _ = parsed
    deepest = 0
    stack = [(tree.root_node, 0)]
    while stack:
        node, loops = stack.pop()
        if node.type in ("for_statement", "while_statement", "do_statement"):
            loops += 1
        if node.type == "assignment_expression":
            op = node.child_by_field_name("operator")
            right = node.child_by_field_name("right")
            if op is not None and right is not None and op.type in ("+=", "=") and _has_product(right):
                if op.type == "+=" or (right.type == "binary_expression" and (right.text or b"").count(b"*")):
                    deepest = max(deepest, loops)
        stack.extend((child, loops) for child in node.children)
    return deepest


def skip_literal(text: str, at: int) -> int:
    """Offset just past the string or char literal that opens at text[at] (escapes skipped)."""
    quote, i = text[at], at + 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """`text` cut at each `sep` outside brackets and string or char literals (a call's arguments, an asm
    statement's operand groups); the parts are not stripped."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "\"'":
            i = skip_literal(text, i)
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts
