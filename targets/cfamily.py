"""What a C or CUDA source defines at file scope, from tree-sitter: the names the trust boundary needs.

A candidate's kernel region may define its kernel and new helpers; it may not define, declare or undefine
a name the problem file (or the target's trusted headers) defines outside the region. This module lists
those names for either grammar (tree-sitter-c for Gemmini, tree-sitter-cuda for CUDA): the top-level items
of a file with the names each one binds, and the names a region touches anywhere (a `#define` or `#undef`
inside a function body still acts on the whole file; a block-scope `extern` declaration or function
prototype names a file-scope object). Junk input gives a partial answer, never an exception.
"""

from __future__ import annotations

import bisect
import functools
import importlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_CHARS = 2_000_000  # bigger sources are not kernels worth parsing
C, CUDA = "c", "cuda"

# Nodes whose children are file-scope items (conditional compilation, extern "C" { }, template <...>).
_TRANSPARENT = {
    "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef", "linkage_specification",
    "declaration_list", "template_declaration",
}
_TAGGED = {"struct_specifier", "union_specifier", "enum_specifier", "class_specifier"}
_WORD = re.compile(r"[A-Za-z_]\w*")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


@dataclass(frozen=True)
class Item:
    """One file-scope item of a source: what it is, the names it binds and its text."""

    kind: str  # function, define, undef, include, declaration, comment, other
    names: frozenset[str]
    text: str
    start: int = 0  # character offsets in the source
    end: int = 0


@functools.lru_cache(maxsize=2)
def _parser(grammar: str) -> Any:
    from tree_sitter import Language, Parser

    language = importlib.import_module("tree_sitter_cuda" if grammar == CUDA else "tree_sitter_c")
    return Parser(Language(language.language()))


def _parse(text: str, grammar: str) -> tuple[Any, Callable[[int], int]] | None:
    if len(text) > MAX_CHARS or "\x00" in text:
        return None
    try:
        data = text.encode("utf-8", "surrogatepass")
        tree = _parser(grammar).parse(data)
    except (ValueError, UnicodeError):
        return None
    if len(data) == len(text):
        return tree, lambda b: b
    return tree, lambda b: len(data[:b].decode("utf-8", "replace"))


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _declarator_name(node: Any) -> str | None:
    """The name a declarator declares: through pointers, arrays, parentheses, function declarators and
    initializers; for a qualified name (`spd::emit`) its outermost scope, which is what it reopens."""
    while node is not None:
        if node.type in ("identifier", "field_identifier", "type_identifier", "namespace_identifier"):
            return _text(node)
        if node.type == "qualified_identifier":
            scope = node.child_by_field_name("scope")
            node = scope if scope is not None else node.child_by_field_name("name")
            continue
        if node.type in ("template_function", "template_type"):
            node = node.child_by_field_name("name")
            continue
        inner = node.child_by_field_name("declarator")
        if inner is None:
            named = [c for c in node.named_children if c.type not in ("parameter_list", "attribute_specifier")]
            inner = named[0] if named and node.type in ("parenthesized_declarator", "attributed_declarator") else None
        node = inner
    return None


def _tag_names(type_node: Any) -> set[str]:
    """A struct/union/enum/class tag the type defines (with a body), and an enum's constants."""
    names: set[str] = set()
    if type_node is None or type_node.type not in _TAGGED:
        return names
    body = type_node.child_by_field_name("body")
    if body is None:
        return names  # a use of the tag, not a definition
    tag = type_node.child_by_field_name("name")
    if tag is not None:
        names.add(_text(tag))
    if type_node.type == "enum_specifier":
        for enumerator in body.named_children:
            if enumerator.type == "enumerator" and enumerator.child_by_field_name("name") is not None:
                names.add(_text(enumerator.child_by_field_name("name")))
    return names


def _item_names(node: Any) -> set[str]:
    """Names a file-scope node binds."""
    kind = node.type
    if kind in ("preproc_def", "preproc_function_def", "namespace_definition", "alias_declaration"):
        name = node.child_by_field_name("name")
        return {_text(name)} if name is not None and _text(name) else set()
    if kind == "preproc_call":
        directive = _text(node.child_by_field_name("directive")).replace(" ", "")
        if directive == "#undef":
            return set(_WORD.findall(_text(node.child_by_field_name("argument")))[:1])
        return set()
    if kind in _TAGGED:
        return _tag_names(node)
    if kind in ("function_definition", "declaration", "type_definition", "field_declaration"):
        names = _tag_names(node.child_by_field_name("type"))
        for declarator in node.children_by_field_name("declarator"):
            name = _declarator_name(declarator)
            if name:
                names.add(name)
        return names
    if kind in _TRANSPARENT:
        names = set()
        for child in node.named_children:
            names |= _item_names(child)
        return names
    return set()


def _kind(node: Any) -> str:
    if node.type == "function_definition":
        return "function"
    if node.type in ("preproc_def", "preproc_function_def"):
        return "define"
    if node.type == "preproc_call" and _text(node.child_by_field_name("directive")).replace(" ", "") == "#undef":
        return "undef"
    if node.type == "preproc_include":
        return "include"
    if node.type in ("declaration", "type_definition", "alias_declaration") or node.type in _TAGGED:
        return "declaration"
    if node.type == "comment":
        return "comment"
    if node.type == "template_declaration":
        inner = [c for c in node.named_children if c.type != "template_parameter_list"]
        return _kind(inner[-1]) if inner else "other"
    return "other"


def items(text: str, grammar: str = C) -> list[Item]:
    """The file-scope items of a source, in order (a `;` after a struct definition joins its item)."""
    parsed = _parse(text, grammar)
    if parsed is None:
        return []
    tree, to_char = parsed
    found: list[Item] = []
    for node in tree.root_node.children:
        if not node.is_named and found and _text(node) == ";":
            last = found[-1]
            end = to_char(node.end_byte)
            found[-1] = Item(last.kind, last.names, text[last.start : end], last.start, end)
            continue
        start, end = to_char(node.start_byte), to_char(node.end_byte)
        found.append(Item(_kind(node), frozenset(_item_names(node)), text[start:end], start, end))
    return found


def _is_extern(node: Any) -> bool:
    return any(c.type == "storage_class_specifier" and _text(c) == "extern" for c in node.children)


def _declares_function(node: Any) -> bool:
    return any(d.type == "function_declarator" for d in node.children_by_field_name("declarator"))


def touched_names(text: str, grammar: str = C) -> set[str]:
    """Every file-scope name `text` defines, declares or undefines, wherever the directive or declaration
    sits: top-level items, macros defined or undefined inside function bodies, and block-scope `extern`
    declarations and function prototypes (both name file-scope entities)."""
    parsed = _parse(text, grammar)
    if parsed is None:
        return set()
    tree, _ = parsed
    names: set[str] = set()
    for node in tree.root_node.children:
        names |= _item_names(node)
    stack = list(tree.root_node.children)
    while stack:
        node = stack.pop()
        if node.type in ("preproc_def", "preproc_function_def", "preproc_call"):
            names |= _item_names(node)
        elif node.type == "declaration" and node.parent is not None and node.parent.type not in (
            "translation_unit", *_TRANSPARENT,
        ) and (_is_extern(node) or _declares_function(node)):
            names |= {n for d in node.children_by_field_name("declarator") if (n := _declarator_name(d))}
        stack.extend(node.children)
    return names


_NOT_CODE = {"comment", "string_content", "string_literal", "raw_string_literal", "char_literal", "escape_sequence",
             "system_lib_string"}


def tokens(text: str, grammar: str = C) -> set[str]:
    """Every identifier or keyword the code spells, outside comments and string literals (macro bodies
    included): a macro a kernel region defines under one of these names would rewrite that code."""
    parsed = _parse(text, grammar)
    if parsed is None:
        return set()
    tree, _ = parsed
    found: set[str] = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in _NOT_CODE or node.type == "number_literal":
            continue
        if node.child_count == 0:  # a macro body is one token that may end in a comment
            found |= set(_WORD.findall(_COMMENT.sub(" ", _text(node)) if node.type == "preproc_arg" else _text(node)))
        stack.extend(node.children)
    return found


def called_names(text: str, grammar: str = C) -> set[str]:
    """Functions the code calls by name: defining one of them (printf, memcmp, exit...) in a kernel region
    would hand the trusted caller the candidate's version."""
    parsed = _parse(text, grammar)
    if parsed is None:
        return set()
    tree, _ = parsed
    found: set[str] = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "call_expression":
            name = _declarator_name(node.child_by_field_name("function"))
            if name:
                found.add(name)
        stack.extend(node.children)
    return found


def syntax_error(text: str, grammar: str = C) -> str:
    """'' when the source parses cleanly, else where it does not (tree-sitter recovers from errors, so
    this is how a reply's prose mixed into code is told apart from code)."""
    parsed = _parse(text, grammar)
    if parsed is None:
        return "not source text (binary or too large)"
    tree, _ = parsed
    if not tree.root_node.has_error:
        return ""
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            line = node.start_point[0] + 1
            snippet = text.splitlines()[line - 1].strip() if line - 1 < len(text.splitlines()) else ""
            return f"line {line} does not parse as {'CUDA C++' if grammar == CUDA else 'C'}: {snippet[:80]}"
        stack.extend(reversed(node.children))
    return "it does not parse"


def words(text: str) -> set[str]:
    """Identifiers a text mentions (for the helpers a kernel uses: a superset is harmless)."""
    return set(_WORD.findall(text))


def used_items(found: Iterable[Item], roots: set[str]) -> list[Item]:
    """The items that define `roots` and, transitively, the names those items mention, in file order."""
    found = list(found)
    wanted: set[str] = set()
    todo = list(roots)
    by_name: dict[str, list[int]] = {}
    for index, item in enumerate(found):
        for name in item.names:
            by_name.setdefault(name, []).append(index)
    keep: set[int] = set()
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        wanted.add(name)
        for index in by_name.get(name, []):
            if index not in keep:
                keep.add(index)
                todo.extend(words(found[index].text) - wanted)
    return [item for index, item in enumerate(found) if index in keep]


@functools.lru_cache(maxsize=8)
def header_names(folder: str, grammar: str = C) -> frozenset[str]:
    """File-scope names the trusted headers in `folder` (the harness kit a problem includes) define, and
    the functions they call."""
    names: set[str] = set()
    for path in sorted(Path(folder).iterdir()):
        if path.suffix in (".h", ".cuh", ".hpp"):
            text = path.read_text(encoding="utf-8", errors="replace")
            names |= touched_names(text, grammar) | called_names(text, grammar)
    return frozenset(names)


def without(text: str, dropped: Iterable[Item]) -> str:
    """`text` with the given items (and the line breaks right after them) cut out, the rest as written."""
    out, at = [], 0
    for item in sorted(dropped, key=lambda i: i.start):
        out.append(text[at : item.start])
        at = item.end
        while at < len(text) and text[at] in " \t":
            at += 1
        if at < len(text) and text[at] == "\n":
            at += 1
    out.append(text[at:])
    return "".join(out)


# How the preprocessor reads lines: a backslash joins the next line even with blanks before the line end
# (gcc warns, and joins), and CR, LF and CRLF all end a line.
_LINE_END = re.compile(r"\r\n?")
_SPLICE = re.compile(r"\\[ \t\f\v]*\n")
# A directive starts a line after blanks (form feed and vertical tab are blanks to gcc); `%:` is the digraph
# and `??=` the trigraph of `#` (off in gcc's GNU and C++17 modes: counting it costs nothing).
_DIRECTIVE = re.compile(r"^[ \t\f\v]*(?:#|%:|\?\?=)[ \t\f\v]*(\w+)(.*)$", re.MULTILINE)
_LITERAL = r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
# Tokens that decide where a comment starts: a comment, a literal (its encoding prefix is an identifier), an
# identifier (so that `u8'a'` is not read as a number), a pp-number (which in C++ takes `'` digit separators,
# `1'000`, where C would start a character literal) and, in C++, a raw string, which spans lines.
_C_TOKENS = re.compile(r"//[^\n]*|/\*.*?\*/|[A-Za-z_$]\w*|\.?\d(?:[eEpP][+-]|[\w.])*|" + _LITERAL, re.S)
_CPP_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|(?:u8|u|U|L)?R"([^()\\ \t\n]{0,16})\(.*?\)\1"|[A-Za-z_$]\w*'
                         r"|\.?\d(?:[eEpP][+-]|'?[\w.])*|" + _LITERAL, re.S)
FILE_DIRECTIVES = ("include", "include_next", "import", "embed")


_RAW_STRING = re.compile(r'(?:u8|u|U|L)?R"')


def code_text(text: str, cpp: bool = True, literals: bool = True) -> str:
    """`text` as the compiler reads its tokens: lines spliced, every comment as spaces and, without
    `literals`, the inside of every string and character literal too (its quotes stay). Names a rule looks
    for cannot hide in a comment that is really a string (`"/*"`), nor be split by a splice (`Py\\`)."""
    def blank(m: re.Match[str]) -> str:
        token = m.group(0)
        if token.startswith("/") or (not literals and (token[0] in "\"'" or _RAW_STRING.match(token))):
            inner = re.sub(r"[^\n]", " ", token)
            return inner if token.startswith("/") else token[0] + inner[1:-1] + token[-1]
        return token
    return (_CPP_TOKENS if cpp else _C_TOKENS).sub(blank, _SPLICE.sub("", _LINE_END.sub("\n", text)))


@dataclass(frozen=True)
class Directive:
    """A preprocessing directive: its name (a linemarker's is its line number), the rest of its line with
    comments as spaces, the line's number (from 1, after splices) and the directive as written there."""

    name: str
    operand: str
    number: int
    line: str


def _blank(match: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", match.group(0)) if match.group(0).startswith("/") else match.group(0)


def directives(text: str, cpp: bool = True) -> list[Directive]:
    """Every line of `text` that some reading of it makes a directive. The preprocessor's own reading is
    the one that knows where literals and comments are (C or C++, `cpp`); the text as written and the
    text with every comment-looking run blanked are read too, so that a lexing subtlety this reader gets
    wrong (a literal that hides a comment, or a comment that hides a line) can only add a directive: a
    check built on this refuses too much, never too little."""
    text = _SPLICE.sub("", _LINE_END.sub("\n", text))
    comment_free = (_CPP_TOKENS if cpp else _C_TOKENS).sub(_blank, text)
    readings = (comment_free, _COMMENT.sub(_blank, text), text)
    found: dict[int, Directive] = {}
    for reading in readings:
        starts = [0] + [m.end() for m in re.finditer("\n", reading)]
        for m in _DIRECTIVE.finditer(reading):
            number = bisect.bisect_right(starts, m.start())
            if number not in found:
                operand = _COMMENT.sub(_blank, m.group(2)).strip()
                written = " ".join(f"#{m.group(1)} {operand}".split())
                found[number] = Directive(m.group(1), operand, number, written)
    return [found[n] for n in sorted(found)]


_HEADER = re.compile(r'<([^<>\n]+)>|"([^"\n]+)"')


@dataclass(frozen=True)
class Include:
    """A directive that reads a file: `directive` (include, include_next, import, embed), the header's name
    and whether it is written in quotes; name '' when the operand is computed (a macro)."""

    directive: str
    name: str
    quoted: bool
    line: str


def file_reads(text: str, cpp: bool = True) -> list[Include]:
    """The directives of `text` that read a file, as `directives` finds them (a line that only looks like
    one counts too: refusing it costs nothing)."""
    found = []
    for d in directives(text, cpp):
        if d.name in FILE_DIRECTIVES:
            header = _HEADER.fullmatch(d.operand)
            name = (header.group(1) or header.group(2)).strip() if header else ""
            found.append(Include(d.name, name, bool(header and header.group(2)), d.line))
    return found


def unsafe_include(include: Include) -> str:
    """Why a header a candidate names would read a file outside the compiler's own headers ('' when it
    would not): another directive than #include, a computed name, an absolute path or one that climbs
    with `..`. The compiler quotes a file it cannot parse in its errors, and those go back to the LLM."""
    if include.directive != "include":
        return f"`#{include.directive}`"
    if not include.name:
        return "a computed header name"
    parts = include.name.replace("\\", "/").split("/")
    if include.name.startswith(("/", "~")) or "\\" in include.name or ".." in parts:
        return "a path outside the include folders"
    return ""
