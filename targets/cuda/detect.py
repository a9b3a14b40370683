"""Find `__global__` functions with tree-sitter-cuda (error-tolerant: junk still parses to a tree)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when first parsing: finding kernels must not cost a parser at import time
    import tree_sitter


@dataclass(frozen=True)
class GlobalFunction:
    name: str
    start: int  # character offsets of the whole definition (template header included)
    end: int
    signature_line: int  # 0-based line of the __global__ keyword


@functools.lru_cache(maxsize=1)
def _parser() -> tree_sitter.Parser:
    import tree_sitter
    import tree_sitter_cuda

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


def _declared_name(node: tree_sitter.Node | None) -> str | None:
    """Name in a function_declarator: plain, qualified (ns::f) or template (f<T>)."""
    while node is not None:
        if node.type in ("identifier", "field_identifier"):
            return (node.text or b"").decode("utf-8", "replace")
        if node.type == "qualified_identifier":
            node = node.child_by_field_name("name")
            continue
        if node.type == "template_function":
            node = node.child_by_field_name("name")
            continue
        node = node.child_by_field_name("declarator")
    return None


def global_functions(text: str) -> list[GlobalFunction]:
    """`__global__` function definitions in a CUDA source, in file order. Never raises."""
    try:
        data = text.encode("utf-8", "surrogatepass")
        tree = _parser().parse(data)
    except Exception:  # a broken grammar install must not take the editor down
        return []
    # tree-sitter reports byte offsets; kernels are described in character offsets.
    def char_at(byte: int) -> int:
        return len(data[:byte].decode("utf-8", "replace"))

    found: list[GlobalFunction] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            keyword = next((c for c in node.children if c.type == "__global__"), None)
            if keyword is not None:
                name = _declared_name(node.child_by_field_name("declarator"))
                outer = node.parent if node.parent is not None and node.parent.type == "template_declaration" else node
                if name:
                    found.append(GlobalFunction(name, char_at(outer.start_byte), char_at(outer.end_byte),
                                                keyword.start_point[0]))
            continue
        stack.extend(reversed(node.children))
    found.sort(key=lambda f: f.start)
    return found

