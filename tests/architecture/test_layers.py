"""The library's layers import in one direction only, and never in a circle.

Every import counts, including those inside functions. A function-local import of the
project's own modules is allowed only as documented lazy loading: the line carries a
`# lazy:` comment saying why (a heavy optional part, or tool start-up time).
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Bottom first. A module may import modules of its own layer or of layers below it.
# (docs/ARCHITECTURE.md shows the same table.)
LAYERS = [
    ("base", ["hlo.shapes", "hlo.opcodes", "hlo.diagnostics", "hlo.cache", "hlo.registry", "hlo.progress"]),
    ("text utilities", ["hlo.textutil"]),
    ("typed values", ["hlo.values", "hlo.literal", "hlo.mesh_groups", "hlo.attributes", "hlo.generic_attributes",
                      "hlo.sharding"]),
    ("IR", ["hlo.ir"]),
    ("shape rules", ["hlo.shape_inference"]),
    ("text", ["hlo.text"]),
    ("analysis", ["hlo.analysis"]),
    ("runtime support", ["hlo.runtime"]),
    ("interpreter", ["hlo.interpreter"]),
    ("passes", ["hlo.passes"]),
    ("backends and editors", ["hlo.codegen", "hlo.lsp"]),
    ("API and tools", ["hlo", "hlo.spmd_run", "hlo.tools", "hlo_cli"]),
]


def layer_of(module: str) -> int:
    best, best_len = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if best is None:
        raise AssertionError(f"{module} belongs to no layer: add it to LAYERS and docs/ARCHITECTURE.md")
    return best


def module_files():
    for folder, package in (("hlo", "hlo"), ("cli", "hlo_cli")):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [package, *rel.parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join(parts), path


MODULES = dict(module_files())


def _resolve(module: str, path: Path, node: ast.ImportFrom | ast.Import) -> list[str]:
    """Project modules an import statement loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] in ("hlo", "hlo_cli")]
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = package[: len(package) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if target.split(".")[0] not in ("hlo", "hlo_cli"):
        return []
    out = []
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        out.append(sub if sub in MODULES else target)
    return out


def imports_of(module: str, path: Path):
    """(imported module, line, is function-local, lazy comment) for each project import."""
    source = path.read_text()
    lines = source.split("\n")
    tree = ast.parse(source)
    local_nodes = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    local_nodes.add(id(node))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in _resolve(module, path, node):
                yield target, node.lineno, id(node) in local_nodes, "# lazy:" in lines[node.lineno - 1]


IMPORTS = {m: list(imports_of(m, p)) for m, p in MODULES.items()}


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down(module):
    mine = layer_of(module)
    upward = [f"line {line}: {target} ({LAYERS[layer_of(target)][0]})"
              for target, line, _, _ in IMPORTS[module] if layer_of(target) > mine]
    assert not upward, f"{module} ({LAYERS[mine][0]}) imports from a higher layer:\n  " + "\n  ".join(upward)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_function_local_imports_are_documented_lazy_loading(module):
    hidden = [f"line {line}: {target}" for target, line, local, lazy in IMPORTS[module] if local and not lazy]
    assert not hidden, (f"{module} imports project modules inside functions without a `# lazy:` reason:\n  "
                        + "\n  ".join(hidden))


def test_no_import_cycles():
    graph = {m: sorted({t for t, *_ in IMPORTS[m] if t in MODULES and t != m}) for m in MODULES}
    # A package's __init__ is loaded by importing any of its submodules: an edge from the
    # submodule's importer is already there; from the submodule to its package only when written.
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
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
                cycles.append(sorted(component))

    import sys
    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, "import cycles:\n  " + "\n  ".join(" <-> ".join(c) for c in cycles)
