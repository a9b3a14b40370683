"""The language server's modules form layers: no module imports, even only for type checking or lazily,
one that imports it back (a cycle hides which module owns what, and breaks when import order changes)."""

from __future__ import annotations

import ast
from pathlib import Path

LSP = Path(__file__).resolve().parents[2] / "server" / "lsp"


def _imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for file in LSP.glob("*.py"):
        deps: set[str] = set()
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                deps.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
        graph[file.stem] = deps
    return graph


def test_the_language_server_modules_import_each_other_without_cycles():
    graph = _imports()
    cycles = []

    def walk(start: str, node: str, path: list[str]) -> None:
        for dep in sorted(graph.get(node, ())):
            if dep == start:
                cycles.append(" -> ".join([*path, start]))
            elif dep in graph and dep not in path and dep > start:  # each cycle once, from its least module
                walk(start, dep, [*path, dep])

    for module in sorted(graph):
        walk(module, module, [module])
    assert len(graph) > 20 and not cycles, cycles
