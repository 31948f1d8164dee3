"""The layers of the Python package (issue 30, item 8): each module of
python/rngsnap imports only modules of its own layer or of a lower one,
and no import cycle exists anywhere in the package.

MODULES below is the one table: every module of the package and its layer
(LAYERS, bottom first).  A module missing from it fails the test, so a new
module has to be placed.  Within a layer any order is allowed as long as
there is no cycle.

The sources are read with ast, nothing is imported: imports at module level
and inside functions alike, relative and absolute.  `from X import name`
counts as an import of the module X.name when there is one, else of X (the
package whose __init__ defines name).  __import__("rngsnap..."),
importlib.import_module("rngsnap...") and sys.modules["rngsnap..."] (or
.get) with a literal name count too: a lazy import is still an import.
"""
import ast
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")
PACKAGE = os.path.join(SRC, "rngsnap")

LAYERS = ("core", "context", "api", "torch", "integrations")

MODULES = {
    # core: the C binding, the errors and the encodings.  No context, no
    # torch: what every layer above reads and writes with.
    "rngsnap._rngsnap": "core",  # the C extension (python/src), no .py
    "rngsnap._core": "core",
    "rngsnap._core.errors": "core",
    "rngsnap._core.encoding": "core",
    "rngsnap._core.genstate": "core",
    "rngsnap._core.fingerprint": "core",
    "rngsnap._core.ledger_digest": "core",
    "rngsnap._core.tensor_bytes": "core",
    "rngsnap._core.stack": "core",
    # context: what rngsnap.Context adds to the binding's context in
    # Python (generators it owns, the checks of each save and load).
    # Imports no torch: `import rngsnap` stops here.
    "rngsnap._context": "context",
    "rngsnap._context.config": "context",
    "rngsnap._context.comm": "context",
    "rngsnap._context.nodes": "context",
    "rngsnap._context.coords": "context",
    "rngsnap._context.order": "context",
    "rngsnap._context.reseed": "context",
    "rngsnap._context.mt_chain": "context",
    "rngsnap._context.generators": "context",
    "rngsnap._context.seeding": "context",
    "rngsnap._context.process_wide": "context",
    "rngsnap._context.untracked": "context",
    "rngsnap._context.tag": "context",
    "rngsnap._context.stateful": "context",
    "rngsnap._context.hooks": "context",
    "rngsnap._context.context": "context",
    # api: the public names of `import rngsnap`, and `python -m rngsnap`.
    "rngsnap": "api",
    "rngsnap.__main__": "api",
    # torch: rngsnap.torch (track, keyed seeding, the resumable sampler).
    "rngsnap.torch": "torch",
    "rngsnap.torch._devices": "torch",
    "rngsnap.torch._generators": "torch",
    "rngsnap.torch._seeding": "torch",
    "rngsnap.torch._tracker": "torch",
    "rngsnap.torch._keyed": "torch",
    "rngsnap.torch._sampler": "torch",
    "rngsnap.torch._dataset": "torch",
    # integrations: one module per framework (each imports its framework
    # when it is itself imported) and their shared helpers.
    "rngsnap.integrations": "integrations",
    "rngsnap.integrations._archive": "integrations",
    "rngsnap.integrations._restricted_pickle": "integrations",
    "rngsnap.integrations._adopt": "integrations",
    "rngsnap.integrations._keyed_loader": "integrations",
    "rngsnap.integrations._common": "integrations",
    "rngsnap.integrations._prepared_loader": "integrations",
    "rngsnap.integrations._trainer_loader": "integrations",
    "rngsnap.integrations.lightning": "integrations",
    "rngsnap.integrations.accelerate": "integrations",
    "rngsnap.integrations.transformers": "integrations",
    "rngsnap.integrations.dcp": "integrations",
}

# Modules that are no .py file of python/rngsnap.
BUILT = {"rngsnap._rngsnap"}


def package_files(root=PACKAGE):
    """{dotted module name: (path, is a package __init__)} of every .py
    file under root."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = os.path.relpath(folder, os.path.dirname(root))
        parts = rel.split(os.sep)
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            init = f == "__init__.py"
            name = ".".join(parts if init else parts + [f[:-3]])
            out[name] = (os.path.join(folder, f), init)
    return out


def _literal(node):
    return node.value if (isinstance(node, ast.Constant)
                          and isinstance(node.value, str)) else None


def _sys_modules(node):
    return (isinstance(node, ast.Attribute) and node.attr == "modules"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


def _dynamic(node):
    """The literal rngsnap module name a call or subscript imports or
    looks up (__import__, importlib.import_module, sys.modules), else
    None."""
    name = None
    if isinstance(node, ast.Call) and node.args:
        f = node.func
        if (isinstance(f, ast.Name) and f.id == "__import__") or (
                isinstance(f, ast.Attribute) and f.attr == "import_module") \
                or (isinstance(f, ast.Attribute) and f.attr == "get"
                    and _sys_modules(f.value)):
            name = _literal(node.args[0])
    elif isinstance(node, ast.Subscript) and _sys_modules(node.value):
        name = _literal(node.slice)
    if name and (name == "rngsnap" or name.startswith("rngsnap.")):
        return name
    return None


def imports(name, path, is_init, known):
    """[(line, imported module, the statement's text)] of the rngsnap
    modules that module name (at path) imports, anywhere in it."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    lines = src.splitlines()
    here = name.split(".") if is_init else name.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(src, path)):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names
                       if a.name == "rngsnap" or a.name.startswith("rngsnap.")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base != "rngsnap" and not base.startswith("rngsnap."):
                continue
            for a in node.names:
                sub = base + "." + a.name
                targets.append(sub if sub in known else base)
        else:
            dyn = _dynamic(node)
            targets = [dyn] if dyn else []
        for t in dict.fromkeys(targets):
            if t != name:
                out.append((node.lineno, t,
                            lines[node.lineno - 1].strip()))
    return sorted(out)


def graph(root=PACKAGE):
    """(files, edges): files as package_files() gives them; edges
    {module: [(line, imported, text)]}."""
    files = package_files(root)
    known = set(files) | BUILT
    return files, {n: imports(n, p, i, known) for n, (p, i) in files.items()}


def _where(files, name, line):
    """python/rngsnap/...py:line of module name."""
    path = files[name][0]
    tail = os.path.join("python", "rngsnap")
    return "%s:%d" % (path[path.rindex(tail):], line)


def upward(files, edges, table=MODULES):
    """One line per import of a module of a higher layer."""
    rank = {m: LAYERS.index(layer) for m, layer in table.items()}
    out = []
    for name, found in sorted(edges.items()):
        for line, target, text in found:
            if name in rank and target in rank and rank[target] > rank[name]:
                out.append("%s: %s (layer %s) imports %s (layer %s): %s" % (
                    _where(files, name, line), name, table[name], target,
                    table[target], text))
    return out


def cycle_groups(edges):
    """The groups of modules that import one another (strongly connected,
    two or more), each sorted; Tarjan's algorithm."""
    succ = {n: sorted({t for _, t, _ in found if t in edges})
            for n, found in edges.items()}
    index, low, stack, on, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return groups


def cycles(files, edges):
    """Per group of modules that import one another: the group, one cycle
    through it, then every import inside the group (each closes a cycle)
    with its place."""
    out = []
    for group in cycle_groups(edges):
        members = set(group)
        inside = [(a, ln, t, text) for a in group
                  for ln, t, text in edges[a] if t in members]
        path, v = [group[0]], group[0]
        while path.count(v) < 2:  # follow imports inside until one repeats
            v = next(t for a, _, t, _ in inside if a == v)
            path.append(v)
        path = path[path.index(v):]
        out.append("%d modules import one another (%s); e.g. %s" % (
            len(group), ", ".join(group), " -> ".join(path)))
        out += ["  %s: %s imports %s: %s" % (_where(files, a, ln), a, t, text)
                for a, ln, t, text in inside]
    return out


def counts(files, edges, table=MODULES):
    """(modules, imports between them, upward ones, modules in cycles),
    an import being a pair (importer, imported) however many statements
    make it."""
    pairs = {(n, t) for n, found in edges.items() for _, t, _ in found}
    rank = {m: LAYERS.index(layer) for m, layer in table.items()}
    up = {(n, t) for n, t in pairs
          if n in rank and t in rank and rank[t] > rank[n]}
    return (len(files), len(pairs), len(up),
            sum(map(len, cycle_groups(edges))))


@pytest.fixture(scope="module")
def package():
    return graph()


def test_every_module_is_placed(package):
    files, _ = package
    missing = sorted(set(files) - set(MODULES))
    assert not missing, (
        "module(s) with no layer: %s; add each to MODULES in %s with the "
        "layer it belongs to (%s, bottom first)" % (
            ", ".join(missing), os.path.relpath(__file__), ", ".join(LAYERS)))


def test_every_import_names_a_module(package):
    """An import of an rngsnap module that is no file of the package (a
    module moved away, a name misspelt) cannot be placed in a layer."""
    files, edges = package
    bad = ["%s: %s imports %s, which is no module of the package: %s" % (
        _where(files, name, line), name, target, text)
        for name, found in sorted(edges.items())
        for line, target, text in found if target not in set(files) | BUILT]
    assert not bad, "\n".join(bad)


def test_no_import_from_a_higher_layer(package):
    bad = upward(*package)
    assert not bad, "%d upward import(s):\n%s" % (len(bad), "\n".join(bad))


def test_no_import_cycle(package):
    bad = cycles(*package)
    assert not bad, "import cycle(s):\n%s" % "\n".join(bad)


def test_every_module_is_installed():
    """python/rngsnap/meson.build lists every .py file (install_sources:
    the meson install and the wheel hold what it lists)."""
    with open(os.path.join(PACKAGE, "meson.build"), encoding="utf-8") as f:
        build = f.read()
    listed = set()
    for folder, names in re.findall(r"'([\w/]*)'\s*:\s*\[([^\]]*)\]", build):
        for n in re.findall(r"'([\w.]+\.py)'", names):
            listed.add(os.path.join(folder, n) if folder else n)
    on_disk = {os.path.relpath(p, PACKAGE)
               for p, _ in package_files().values()}
    missing = sorted(on_disk - listed)
    assert not missing, (
        "not in python/rngsnap/meson.build's py_packages, so neither meson "
        "install nor the wheel would hold them: %s" % ", ".join(missing))


def test_import_rngsnap_imports_no_framework():
    """`import rngsnap` and `import rngsnap.integrations` import neither
    torch, NumPy nor any framework (each integration imports its own)."""
    code = ("import sys, rngsnap, rngsnap.integrations\n"
            "print(' '.join(m for m in ('torch', 'numpy', 'accelerate', "
            "'transformers', 'lightning', 'pytorch_lightning') "
            "if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "\n"


if __name__ == "__main__":
    # python3 test_layers.py [PACKAGE_DIR]: the counts and every finding.
    root = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else PACKAGE
    files, edges = graph(root)
    n, imp, up, cyc = counts(files, edges)
    print("%d modules, %d imports between them, %d upward, %d modules in "
          "cycles" % (n, imp, up, cyc))
    for line in sorted(set(files) - set(MODULES)):
        print("unplaced:", line)
    print("\n".join(upward(files, edges) + cycles(files, edges)))
