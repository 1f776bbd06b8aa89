"""The package layout: no import cycle among gflkit's modules, layers importing downward only, a short top
level, no module named like an export.

The import graph is read from the source with :mod:`ast`, so it holds every
import of a gflkit module wherever it is written: at module level, inside a
function, and under ``if TYPE_CHECKING:`` alike; relative or absolute. ``from
pkg import name`` is an edge to ``pkg.name`` when that is a module, else to
``pkg``; a package's ``__init__`` importing its own submodules is an edge too.
Importing ``a.b`` also runs ``a/__init__``, but that implicit edge is left out:
it is Python's, not the code's. The strings of ``gflkit/__init__.py``'s
``_LAZY`` table are not imports either: they name the module of each public
name, imported only when the name is first used.
"""
from __future__ import annotations

import ast
from pathlib import Path

import gflkit

PACKAGE = Path(gflkit.__file__).resolve().parent
TOP_LEVEL_LIMIT = 20
#: gflkit's layers, lowest first, by the top-level module or package: a module imports its own layer or lower ones.
LAYERS = [
    {"_compat", "errors", "interrupts", "names", "paths", "io", "seeding", "config", "progress", "devices",
     "sizes", "threads"},
    {"data", "episodes", "nn"},
    {"graphs", "models", "refine"},
    {"evaluation", "runs", "training"},
    {"prediction", "plotting", "experiments", "api", "__main__"},
]


def _modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, whether it is a package's ``__init__``)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _known(name: str, modules) -> str | None:
    """The module ``name`` is, or lies in (``gflkit.x.attr`` -> ``gflkit.x``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """Module -> the gflkit modules it imports."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets.add(source)
                targets.update(f"{source}.{alias.name}" for alias in node.names
                               if f"{source}.{alias.name}" in modules)
        graph[name] = {m for t in targets if t.split(".")[0] == "gflkit"
                       for m in [_known(t, modules)] if m and m != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as ``[a, b, ..., a]``, or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_reports_a_cycle_through_function_level_imports(tmp_path):
    graph = {"gflkit.a": {"gflkit.b"}, "gflkit.b": {"gflkit.c"}, "gflkit.c": {"gflkit.a"}, "gflkit.d": set()}
    assert find_cycle(graph) == ["gflkit.a", "gflkit.b", "gflkit.c", "gflkit.a"]
    assert find_cycle({"gflkit.a": {"gflkit.b"}, "gflkit.b": set()}) is None


def test_the_graph_holds_function_level_type_checking_and_package_imports():
    graph = import_graph()
    # Under `if TYPE_CHECKING:` in the training loop.
    assert "gflkit.training.ddp" in graph["gflkit.training.loop"]
    # A package's __init__ importing its own submodule.
    assert "gflkit.training.meta" in graph["gflkit.training"]
    # `from .training import distributed`: the submodule, not the package.
    assert "gflkit.training.distributed" in graph["gflkit.api"]
    # The lazy table of gflkit/__init__ is not an import.
    assert graph["gflkit"] == {"gflkit._compat"}


def _layer(module: str) -> int:
    top = module.split(".")[1]
    return next(i for i, layer in enumerate(LAYERS) if top in layer)


def test_layers_import_downward_only():
    graph = import_graph()
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() if a != "gflkit" for b in targets
                    if b != "gflkit" and _layer(b) > _layer(a))
    assert not upward, "imports of a higher layer: " + "; ".join(upward)


def test_every_top_level_module_has_a_layer():
    tops = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    tops |= {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert tops == set().union(*LAYERS)


def test_top_level_is_short():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= TOP_LEVEL_LIMIT, f"{len(top)} modules at the top of gflkit/: {', '.join(top)}"


def test_no_module_is_named_like_an_export():
    exported = set(gflkit.__all__)
    clashes = sorted(name for name in _modules() if name.rpartition(".")[2] in exported)
    assert not clashes, f"modules named like a name gflkit exports: {', '.join(clashes)}"


#: Lines a module of gflkit/ or cli/ may have: one job per file.
MAX_LINES = 500


def test_no_module_is_over_the_line_limit():
    root = PACKAGE.parent
    files = [path for folder in (PACKAGE, root / "cli") for path in sorted(folder.rglob("*.py"))]
    over = {str(path.relative_to(root)): n for path in files if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not over, f"split these modules by concept (at most {MAX_LINES} lines): {over}"
