"""The import graph of the repository's own packages, read statically (ast), for the layering tests."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("apitester", "tracker", "config")


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name of the importing file
    module: str  # dotted name imported (a module, or a name inside one: resolved by the graph)
    top: bool  # at module level (not inside a function or class body)
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py")
                  if "migrations" not in p.parts)


def imports_of(path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top_level = {id(node) for node in tree.body}
    # `if TYPE_CHECKING:` blocks and module-level try/if bodies still run at import time: count them as top.
    for node in tree.body:
        if isinstance(node, (ast.If, ast.Try)):
            top_level.update(id(child) for child in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
            found.extend(Import(name, t, id(node) in top_level, node.lineno) for t in targets)
        elif isinstance(node, ast.Import):
            found.extend(Import(name, alias.name, id(node) in top_level, node.lineno) for alias in node.names)
    return found


def graph() -> tuple[set[str], list[Import]]:
    """(our module names, every import of ours whose target is one of our modules)."""
    modules = {module_name(p) for p in source_files()}
    edges = []
    for path in source_files():
        for imp in imports_of(path):
            if imp.module in modules and imp.module != imp.importer:
                edges.append(imp)
    return modules, edges


def cycles(modules: set[str], edges: list[Import]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    succ: dict[str, set[str]] = {m: set() for m in modules}
    for edge in edges:
        succ[edge.importer].add(edge.module)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(modules):
        if v not in index:
            visit(v)
    return found
