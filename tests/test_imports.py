"""Imports point one way: a graph of every import in the source, checked by rules.

The graph is built from the source with ``ast`` (imports inside functions
included, since an import hidden in a function is still a dependency; those
under ``if TYPE_CHECKING:`` left out, since they never run).  The
rules, not a list of modules, are checked, so modules added later are held
to them too:

- no cycle between modules, nor between packages (each directory a node);
- ``kernels`` never imports ``dense`` or ``sparse``; ``dense`` never imports ``sparse``;
- nothing outside ``kernels.codegen`` imports ``kernels.codegen`` or ``yaml``
  at run time (PyYAML is needed only to generate);
- ``import dense, sparse`` loads neither ``yaml`` nor ``kernels.codegen``;
- nor ``numba`` (0.24 s to import): only a compiled loop's first call does.
"""
import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kernels", "dense", "sparse")
#: (importer prefix, forbidden prefix): an upward import.
UPWARD = (("kernels", "dense"), ("kernels", "sparse"), ("dense", "sparse"))
GENERATOR = ("kernels.codegen", "yaml")


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(path):
    return path.name == "__init__.py"


def _sources():
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            yield _module_name(path), path


def _resolve(importer, is_pkg, node, modules):
    """The modules an import statement loads: ``from pkg import mod`` names ``pkg.mod``,
    ``from pkg import fn`` names ``pkg``."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    base = importer if is_pkg else importer.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    if node.level:
        base = f"{base}.{node.module}" if node.module else base
    else:
        base = node.module
    subs = {f"{base}.{a.name}" for a in node.names}
    found = subs & modules
    return found | ({base} if subs - modules else set())


def import_graph():
    """{module: set of modules it imports}, from the source (any package's names kept)."""
    paths = dict(_sources())
    graph = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        graph[name] = set()
        for node in _runtime_nodes(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[name] |= _resolve(name, _is_package(path), node, set(paths))
    return graph


def _runtime_nodes(tree):
    """Every node except the bodies of ``if TYPE_CHECKING:``: imports for type
    checkers only (the generated API's return types) never run."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING",
                                                                    "typing.TYPE_CHECKING"):
            todo.extend(node.orelse)
        else:
            todo.extend(ast.iter_child_nodes(node))


def _local(graph):
    """Edges between this repository's modules only."""
    return {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}


def _cycles(graph):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _package_of(module, graph_paths):
    return module if module in graph_paths else module.rpartition(".")[0]


def _under(name, prefix):
    return name == prefix or name.startswith(prefix + ".")


def test_no_cycle_between_modules():
    assert _cycles(_local(import_graph())) == []


def test_no_cycle_between_packages():
    packages = {name for name, path in _sources() if _is_package(path)}
    graph = {}
    for m, deps in _local(import_graph()).items():
        src = _package_of(m, packages)
        graph.setdefault(src, set()).update(
            p for p in (_package_of(d, packages) for d in deps) if p != src)
    assert _cycles(graph) == []


def test_no_upward_import():
    bad = sorted((m, d) for m, deps in import_graph().items() for d in deps
                 for low, high in UPWARD if _under(m, low) and _under(d, high))
    assert bad == []


def test_runtime_never_imports_the_generator():
    bad = sorted((m, d) for m, deps in import_graph().items() for d in deps
                 if not _under(m, "kernels.codegen")
                 and any(_under(d, g) for g in GENERATOR))
    assert bad == []


def test_rules_see_a_planted_cycle_and_upward_import():
    graph = {"kernels.a": {"kernels.b"}, "kernels.b": {"kernels.a", "dense.t"}, "dense.t": set()}
    assert _cycles(graph) == [["kernels.a", "kernels.b"]]
    assert [(m, d) for m, deps in graph.items() for d in deps
            for low, high in UPWARD if _under(m, low) and _under(d, high)] \
        == [("kernels.b", "dense.t")]


def test_import_dense_and_sparse_loads_no_generator():
    code = ("import sys, dense, sparse, numpy as np\n"
            "x = dense.to_tensor(np.ones((2, 3)))\n"
            "dense.reshape(x, [3, 2]); x.to_sparse_coo(2).to_dense()\n"
            "bad = [m for m in sys.modules if m in ('yaml', 'numba') or m.startswith(("
            "'yaml.', 'numba.', 'kernels.codegen'))]\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]"
