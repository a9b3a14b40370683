"""What a Python source binds at module scope, from `ast`: the names the trust boundary needs for NKI
kernels, KernelBench solutions and the toy target.

A candidate's kernel region may define its kernel and new helpers; it may not bind a name the problem
file binds outside the region (INPUTS, reference, Model, its imports...). Module scope is wider than the
top-level statements: the bodies of module-level if/for/while/try/with run there too, and a `global X`
statement anywhere makes X a module name.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

from speedpatch.targets.nki.detect import _PARSE_LOCK as _NKI_PARSE_LOCK

# CPython 3.11's parser is not safe to run from several threads at once: share the NKI detector's lock,
# so that parses from here and from there never overlap.
_PARSE_LOCK = _NKI_PARSE_LOCK
_WORD = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Item:
    """One top-level statement: the names it binds at module scope and its source lines."""

    names: frozenset[str]
    text: str


def parse(text: str) -> ast.Module | SyntaxError:
    """The module, or the SyntaxError that says where it does not parse."""
    with _PARSE_LOCK:
        try:
            return ast.parse(text)
        except SyntaxError as exc:
            return exc
        except (ValueError, RecursionError, MemoryError, SystemError) as exc:
            return SyntaxError(str(exc) or type(exc).__name__)


def syntax_error(text: str) -> str:
    """'' when `text` parses as Python, else where and why not."""
    tree = parse(text)
    if not isinstance(tree, SyntaxError):
        return ""
    where = f"line {tree.lineno}: " if tree.lineno else ""
    return f"{where}{tree.msg or tree}"


def _targets(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}


def _binds(stmt: ast.stmt) -> set[str]:
    """Names one statement binds in the scope it runs in (nested function and class bodies excluded)."""
    names: set[str] = set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(stmt.name)
        for part in (*stmt.decorator_list, *getattr(stmt, "bases", []), *getattr(stmt, "keywords", [])):
            names |= _walrus(part)
        return names
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for alias in stmt.names:
            names.add(alias.asname or alias.name.split(".")[0])
        return names
    if isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            names |= _targets(target)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        names |= _targets(stmt.target)
    elif isinstance(stmt, ast.Delete):
        for target in stmt.targets:
            names |= _targets(target)
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        names |= _targets(stmt.target)
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        for item in stmt.items:
            if item.optional_vars is not None:
                names |= _targets(item.optional_vars)
    elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        for handler in getattr(stmt, "handlers", []):  # ast.TryStar has them too (Python 3.11+)
            if handler.name:
                names.add(handler.name)
    for field in ("body", "orelse", "finalbody"):
        for inner in getattr(stmt, field, []) or []:
            names |= _binds(inner)
    for handler in getattr(stmt, "handlers", []) or []:
        for inner in handler.body:
            names |= _binds(inner)
    for case in getattr(stmt, "cases", []) or []:
        for inner in case.body:
            names |= _binds(inner)
    for child in ast.iter_child_nodes(stmt):
        if isinstance(child, ast.expr):
            names |= _walrus(child)
    return names


def _walrus(node: ast.AST) -> set[str]:
    return {n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)}


def _globals(tree: ast.AST) -> set[str]:
    return {name for n in ast.walk(tree) if isinstance(n, ast.Global) for name in n.names}


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _mutated(tree: ast.Module) -> set[str]:
    """Names whose object the code changes in place (`torch.relu = f`, `INPUTS["a"] = x`, `del np.sum`),
    wherever it runs, unless the name is a local of the function doing it."""
    found: set[str] = set()

    def targets(node: ast.AST) -> list[ast.expr]:
        if isinstance(node, (ast.Assign, ast.Delete)):
            return list(node.targets)
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            return [node.target]
        return []

    def visit(node: ast.AST, local: frozenset[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                own = _arguments(child) | {n.id for n in ast.walk(child) if isinstance(n, ast.Name)
                                           and isinstance(n.ctx, ast.Store)}
                visit(child, local | own - _globals(child))
                continue
            for target in targets(child):
                for part in ast.walk(target):
                    if isinstance(part, (ast.Attribute, ast.Subscript)) and isinstance(part.ctx, (ast.Store, ast.Del)):
                        root = _root(part)
                        if root and root not in local:
                            found.add(root)
            visit(child, local)

    visit(tree, frozenset())
    return found


def touched_names(text: str) -> set[str] | None:
    """Every name `text` binds at module scope, declares `global` anywhere, or whose object it changes in
    place (an attribute or item of it); None when it does not parse."""
    tree = parse(text)
    if isinstance(tree, SyntaxError):
        return None
    names = _globals(tree) | _mutated(tree)
    for stmt in tree.body:
        names |= _binds(stmt)
    return names


def _arguments(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    args = node.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, *[a for a in (args.vararg, args.kwarg) if a]]
    return {a.arg for a in every}


def free_names(text: str) -> set[str]:
    """Names the code reads from module scope or builtins (a function's own parameters and locals
    excluded): a kernel region that binds one of them at module level changes what that code does, e.g. a
    `sum = ...` next to the kernel would also change a reference that calls sum(). Empty when it does not
    parse."""
    tree = parse(text)
    if isinstance(tree, SyntaxError):
        return set()
    found: set[str] = set()

    def visit(node: ast.AST, local: frozenset[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                own = _arguments(child) | {n.id for n in ast.walk(child) if isinstance(n, ast.Name)
                                           and isinstance(n.ctx, ast.Store)}
                visit(child, local | own - _globals(child))
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load) and child.id not in local:
                found.add(child.id)
            else:
                visit(child, local)

    visit(tree, frozenset())
    return found


def items(text: str) -> list[Item] | None:
    """The top-level statements of a source with their decorators, in order; None when it does not parse."""
    tree = parse(text)
    if isinstance(tree, SyntaxError):
        return None
    lines = text.splitlines(keepends=True)
    found = []
    for stmt in tree.body:
        first = min([stmt.lineno, *[d.lineno for d in getattr(stmt, "decorator_list", [])]])
        last = stmt.end_lineno or stmt.lineno
        names = _binds(stmt) | _globals(stmt)
        found.append(Item(frozenset(names), "".join(lines[first - 1 : last]).rstrip("\n") + "\n"))
    return found


def words(text: str) -> set[str]:
    return set(_WORD.findall(text))


def used_items(found: Iterable[Item], roots: set[str]) -> list[Item]:
    """The items that bind `roots` and, transitively, the names those items mention, in source order."""
    found = list(found)
    by_name: dict[str, list[int]] = {}
    for index, item in enumerate(found):
        for name in item.names:
            by_name.setdefault(name, []).append(index)
    wanted: set[str] = set()
    keep: set[int] = set()
    todo = list(roots)
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


def kernel_and_helpers(code: str, roots: set[str], problem_names: set[str] | frozenset[str]) -> str | None:
    """From a reply's code: the statements that define `roots` and the helpers they use, never a statement
    that binds a problem name (the trusted file has those); None when the code does not parse or defines
    none of `roots`."""
    found = items(code)
    if found is None or not any(item.names & roots for item in found):
        return None
    allowed = [item for item in found if item.names & roots or not item.names & problem_names]
    return "\n\n\n".join(item.text.rstrip("\n") for item in used_items(allowed, roots)) + "\n"
