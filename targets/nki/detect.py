"""Finding NKI kernels in Python source with `ast`: functions decorated with nki.jit / baremetal /
benchmark / profile (or the legacy neuronxcc.nki ones), under whatever names the file imports them as.
A file that does not parse (the user is typing) falls back to a line scan for the same decorators."""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass

KERNEL_DECORATORS = {"jit", "baremetal", "benchmark", "profile", "trace"}
NKI_MODULES = ("nki", "neuronxcc.nki")
# torch_neuronx.nki_jit: the decorator of the older NKI documentation examples (`from torch_neuronx import
# nki_jit`, general/nki/examples/mm-nisa-spmd.py and others); nki.jit on the emulator
TORCH_DECORATORS = {"torch_neuronx.nki_jit"}
INPUT_NAMES = ("INPUTS", "make_inputs")


_PARSE_LOCK = threading.Lock()


def parse_python(text: str) -> ast.Module | None:
    """ast.parse, or None for source that does not parse. Serialized: CPython 3.11's parser keeps its
    recursion depth in shared state and raises SystemError when threads parse at the same time."""
    with _PARSE_LOCK:
        try:
            return ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
            return None


def syntax_error(text: str) -> str:
    """Where and why `text` does not parse, as Python says it ('' when it parses)."""
    with _PARSE_LOCK:
        try:
            ast.parse(text)
        except SyntaxError as exc:
            return f"line {exc.lineno}: {exc.msg}" if exc.lineno else exc.msg
        except (ValueError, RecursionError, MemoryError, SystemError) as exc:
            return f"{type(exc).__name__}: {exc}"
    return ""


@dataclass(frozen=True)
class Found:
    name: str
    start_line: int  # 1-based, first decorator line
    end_line: int  # 1-based, inclusive
    def_line: int  # 1-based


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> canonical dotted name, for imports of nki modules and their decorators."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    # a module-level name for an nki object (`nki_jit = nki.trace`, as the AWS documentation's nki.isa
    # example tests write it, then `@nki_jit`)
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, (ast.Attribute, ast.Name)):
            dotted = _dotted(stmt.value)
            head, _, rest = dotted.partition(".")
            if head in names:
                names[stmt.targets[0].id] = names[head] + (f".{rest}" if rest else "")
    return names


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    if isinstance(node, ast.Name):
        return node.id
    return ""


def is_kernel_decorator(dotted: str, aliases: dict[str, str]) -> bool:
    if not dotted:
        return False
    head, _, rest = dotted.partition(".")
    canonical = aliases.get(head, head) + (f".{rest}" if rest else "")
    module, _, attr = canonical.rpartition(".")
    return (attr in KERNEL_DECORATORS and module in NKI_MODULES) or canonical in TORCH_DECORATORS


def find_in_tree(tree: ast.Module) -> list[Found]:
    """Decorated kernels, without the ones another kernel of the file calls: public kernels decorate their
    helpers with @nki.jit too (the rotary tutorial's _nki_apply_rotary_embedding_core, called from its
    kernel), and a helper is not what the problem launches. All of them when every one is called by another."""
    aliases = _aliases(tree)
    found = []
    calls: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(is_kernel_decorator(_dotted(d), aliases) for d in node.decorator_list):
                start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                found.append(Found(node.name, start, node.end_lineno or node.lineno, node.lineno))
                calls[node.name] = {c.func.id for c in ast.walk(node)
                                    if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
    helpers = {f.name for f in found if any(f.name in called for name, called in calls.items() if name != f.name)}
    entries = [f for f in found if f.name not in helpers]
    return sorted(entries or found, key=lambda f: f.start_line)


def module_names(tree: ast.Module) -> set[str]:
    """Names bound at module level (to tell whether the file carries a harness)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


_DECORATOR_LINE = re.compile(r"^@\s*([A-Za-z_][\w.]*)")
_DEF_LINE = re.compile(r"^(?:async\s+)?def\s+([A-Za-z_]\w*)")
_IMPORT_LINE = re.compile(r"^\s*(?:import\s+([\w.]+)(?:\s+as\s+(\w+))?|from\s+([\w.]+)\s+import\s+(\w+)(?:\s+as\s+(\w+))?)")


def scan_lines(text: str) -> list[Found]:
    """Fallback for files that do not parse: top-level decorated defs, ended by the next top-level line."""
    lines = text.splitlines()
    aliases: dict[str, str] = {}
    for line in lines:
        m = _IMPORT_LINE.match(line)
        if m and m.group(1):
            aliases[m.group(2) or m.group(1).split(".")[0]] = m.group(1) if m.group(2) else m.group(1).split(".")[0]
        elif m and m.group(3):
            aliases[m.group(5) or m.group(4)] = f"{m.group(3)}.{m.group(4)}"
    found = []
    i = 0
    while i < len(lines):
        m = _DECORATOR_LINE.match(lines[i])
        if m and is_kernel_decorator(m.group(1), aliases):
            start = i
            j = i
            while j < len(lines) and not _DEF_LINE.match(lines[j]):
                j += 1
            if j == len(lines):
                break
            name = _DEF_LINE.match(lines[j]).group(1)  # type: ignore[union-attr]
            end = j
            k = j + 1
            while k < len(lines):
                stripped = lines[k].strip()
                if stripped and not lines[k][0].isspace() and not stripped.startswith("#") and not stripped.startswith(")"):
                    break
                if stripped:
                    end = k
                k += 1
            found.append(Found(name, start + 1, end + 1, j + 1))
            i = k
        else:
            i += 1
    return found


NKI_LOOPS = {"affine_range", "sequential_range", "static_range"}


def loop_returns_hoisted(text: str, kernel: str) -> str:
    """The source with each `return` that ends the body of an NKI loop (nl.affine_range / sequential_range /
    static_range) in kernel `kernel` moved after that loop, by dedenting its lines (line numbers unchanged).

    NKI traces a kernel: an NKI loop's body is traced once and the whole loop is compiled, so a return at the
    end of the body ends the trace, not the loop -- the documentation examples prof-kernel.py and
    layout-dynamic-loop.py (aws-neuron-sdk general/nki/examples) return from inside their affine_range loop
    and process every tile. The emulator runs a loop's iterations in Python, where that return would stop
    after the first. Other returns, and source that does not parse, are left as they are."""
    tree = parse_python(text)
    if tree is None:
        return text
    lines = text.splitlines(keepends=True)
    moves: list[tuple[int, int, int]] = []  # (first line, last line, columns to remove), 1-based lines
    for fn in ast.walk(tree):
        if not (isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == kernel):
            continue
        for loop in _own_nodes(fn):
            if not (isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call)
                    and _dotted(loop.iter.func).rpartition(".")[2] in NKI_LOOPS and loop.body):
                continue
            last = loop.body[-1]
            others = [n for stmt in loop.body[:-1] for n in ast.walk(stmt) if isinstance(n, ast.Return)]
            if isinstance(last, ast.Return) and not others and not loop.orelse and last.col_offset > loop.col_offset:
                end = last.end_lineno or last.lineno
                moves.append((last.lineno, end, last.col_offset - loop.col_offset))
    for first, end, cols in moves:
        for i in range(first - 1, end):
            line = lines[i]
            lead = len(line) - len(line.lstrip(" "))
            lines[i] = line[min(cols, lead):]
    return "".join(lines)


def _own_nodes(fn: ast.AST) -> list[ast.AST]:
    """The nodes of a function's body, without those of functions or classes defined inside it."""
    found: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found
