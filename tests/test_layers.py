"""Dependencies run one way (DESIGN.md "Layout"): a module of gemmc imports only its own layer and the layers below,
read from the source with `ast`: module-level imports, imports inside functions and `if TYPE_CHECKING:` blocks
alike (a lazy or type-only import of a later layer is still a dependency on it). Within the families layer a family
package imports only itself and the shared modules (`base`, `streaming`); only the registry names the families.
No two packages, and no two modules, import each other, directly or around a loop.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent / "gemmc"

# Lowest first. A module belongs to the layer of the longest name listed here that is its own or a package above it;
# the package `gemmc` itself (gemmc/__init__.py: the public names) is the top layer, its other modules are not.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("gemmc.version", "gemmc.span", "gemmc.errors", "gemmc.stats")),
    ("ir", ("gemmc.ir",)),
    ("grammar", ("gemmc.grammar",)),
    ("model", ("gemmc.model",)),
    ("families", ("gemmc.families",)),
    ("passes", ("gemmc.passes",)),
    ("codegen", ("gemmc.codegen",)),
    # Concurrent groups plan over planned kernels (the pipeline again for share plans and the fused kernel) and decide
    # which of those differ by their rendered code, then render a group's C++: above codegen, below the runtime.
    ("concurrent", ("gemmc.concurrent",)),
    ("runtime", ("gemmc.runtime",)),
    ("api", ("gemmc.api", "gemmc.api_kernel", "gemmc.api_group")),
    ("top", ("gemmc.cli", "gemmc.__main__", "gemmc.bench")),
)
TOP_PACKAGE = "gemmc"
RANK = {name: rank for rank, (name, _) in enumerate(LAYERS)}
ORDER = " -> ".join(name for name, _ in LAYERS)
FAMILIES = "gemmc.families"
# A family that builds on another, one way, named here so that no other crossing slips in: the dynamic family's kernel
# includes the SIMT template's tile function, so its ladder is the SIMT catalogue and its plan a SimtPlan; the hopper
# family takes the f32 tensor-core precisions that the tensorcore family's rule (tensorcore/hopper_loop.py) hands it.
BUILDS_ON = {"gemmc.families.dynamic": "gemmc.families.simt", "gemmc.families.hopper": "gemmc.families.tensorcore"}
REGISTRY = "gemmc.families.registry"


class Import(NamedTuple):
    importer: str  # module name
    imported: str  # module name, resolved to a module of gemmc where the import names one
    line: int


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def imports(name: str, source: str, known: set[str], package: bool = False) -> list[Import]:
    """Every import of gemmc in `source` (module `name`), wherever it stands in the file. `from P import x` is an
    import of P.x where that is a module, else of P; relative imports are resolved against `name`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(name, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")[:len(name.split(".")) - node.level + (1 if package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.append(Import(name, target if target in known else base, node.lineno))
    return [i for i in found if i.imported == "gemmc" or i.imported.startswith("gemmc.")]


def layer(module: str) -> str | None:
    if module == TOP_PACKAGE:
        return LAYERS[-1][0]
    best, best_len = None, -1
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = name, len(prefix)
    return best


def family_package(module: str, packages: set[str]) -> str | None:
    """The family package a module belongs to (gemmc.families.simt for gemmc.families.simt.planner), or None."""
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) >= 3 and ".".join(parts[:3]) in packages else None


def violations(found: list[Import], packages: set[str]) -> list[str]:
    """Each import of a later layer, and each import across family packages, as a sentence naming both ends."""
    out = []
    for imp in found:
        low, high = layer(imp.importer), layer(imp.imported)
        if low is None or high is None:
            continue  # a module of no layer: test_every_module_has_a_layer names it
        where = f"{imp.importer} (line {imp.line}, layer {low}) imports {imp.imported} (layer {high})"
        if RANK[high] > RANK[low]:
            out.append(f"{where}, a later layer; dependencies run {ORDER}")
        elif low == high == "families" and imp.importer != REGISTRY:
            own, other = family_package(imp.importer, packages), family_package(imp.imported, packages)
            if imp.imported == REGISTRY:
                out.append(f"{where}: the registry imports every family, so no module of the families imports it")
            elif other is not None and own is None:
                out.append(f"{where}: code the families share never names a family ({other}); the registry does")
            elif other is not None and other != own and BUILDS_ON.get(own or "") != other:
                out.append(f"{where}: a family imports only itself and the shared modules of {FAMILIES}, never "
                           f"another family ({other})")
    return out


def unit(module: str, packages: set[str]) -> str:
    """What a module counts under for the cycle check: its family package, a shared module of the families by
    itself (the registry imports the families, which import `base`), else gemmc's top-level package or module."""
    if module.startswith(FAMILIES + "."):
        return family_package(module, packages) or module
    return ".".join(module.split(".")[:2])


def package_edges(found: list[Import], packages: set[str]) -> set[tuple[str, str]]:
    return {(unit(i.importer, packages), unit(i.imported, packages)) for i in found}


def module_edges(found: list[Import]) -> set[tuple[str, str]]:
    return {(i.importer, i.imported) for i in found}


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Cycles of a directed graph, at least one through every node that lies on one, each as the nodes along it with
    the first repeated at the end."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        if a != b:
            graph.setdefault(a, set()).add(b)
    out: list[list[str]] = []
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            out.append(path[path.index(node):] + [node])
            return
        if node in done:
            return
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, path + [node])
        done.add(node)

    for start in sorted(graph):
        visit(start, [])
    return out


def family_packages(root: Path = ROOT) -> set[str]:
    return {module_name(p, root) for p in (root / "families").glob("*/__init__.py")}


def all_imports(root: Path = ROOT) -> list[Import]:
    found_modules = modules(root)
    known = set(found_modules)
    return [imp for name, path in found_modules.items()
            for imp in imports(name, path.read_text(), known, package=path.name == "__init__.py")]


# --- the contract -------------------------------------------------------------------------------------------------

def test_every_module_has_a_layer():
    assert [m for m in modules() if layer(m) is None] == []


def test_no_module_imports_a_later_layer_or_another_family():
    found = violations(all_imports(), family_packages())
    assert not found, "\n".join(found)


def test_no_two_packages_import_each_other():
    found = cycles(package_edges(all_imports(), family_packages()))
    assert not found, "\n".join(" -> ".join(c) for c in found)


def test_no_two_modules_import_each_other():
    # Within a layer too: a loop of modules imports half-initialised modules, or only works because an import was
    # moved into a function.
    found = cycles(module_edges(all_imports()))
    assert not found, "\n".join(" -> ".join(c) for c in found)


# --- the checks themselves: each finds what it is for --------------------------------------------------------------

KNOWN = {"gemmc.api", "gemmc.runtime", "gemmc.runtime.launch", "gemmc.ir", "gemmc.ir.nodes", "gemmc.families",
         "gemmc.families.simt", "gemmc.families.simt.plan", "gemmc.families.tsm2r", "gemmc.families.base",
         "gemmc.families.registry", "gemmc.passes"}
PACKAGES = {"gemmc.families.simt", "gemmc.families.tsm2r"}

LAZY_AND_TYPE_ONLY = """
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from gemmc.api import CompiledKernel
def f():
    from ..passes import run_pipeline
"""


def test_a_module_outside_the_listed_layers_has_none():
    assert layer("gemmc.scheduler") is None and layer("gemmc") == "top" and layer("gemmc.ir.nodes") == "ir"


def test_lazy_type_only_and_relative_imports_of_a_later_layer_are_violations():
    found = imports("gemmc.runtime.launch", LAZY_AND_TYPE_ONLY, KNOWN)
    assert [(i.imported, i.line) for i in found] == [("gemmc.api", 4), ("gemmc.passes", 6)]
    (message, _) = sorted(violations(imports("gemmc.ir.nodes", LAZY_AND_TYPE_ONLY, KNOWN), PACKAGES))
    assert message.startswith("gemmc.ir.nodes (line 4, layer ir) imports gemmc.api (layer api), a later layer")
    assert violations(imports("gemmc.api", "import gemmc.runtime.launch", KNOWN), PACKAGES) == []


@pytest.mark.parametrize("source, expected", [
    ("from gemmc.families import tsm2r", "never another family (gemmc.families.tsm2r)"),
    ("from gemmc.families.registry import family", "the registry imports every family"),
    ("from gemmc.families import base\nfrom gemmc.families.simt import plan", None),
])
def test_a_family_imports_only_itself_and_the_shared_modules(source, expected):
    found = violations(imports("gemmc.families.simt.planner", source, KNOWN), PACKAGES)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0], found


@pytest.mark.parametrize("source, expected", [
    ("from gemmc.families.simt import plan", "never names a family (gemmc.families.simt)"),
    ("from gemmc.families import base", None),
])
def test_shared_family_code_names_no_family(source, expected):
    found = violations(imports("gemmc.families.streaming", source, KNOWN), PACKAGES)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0], found


def test_a_cycle_between_packages_or_modules_is_found():
    found = [Import("gemmc.ir.nodes", "gemmc.ir.types", 1), Import("gemmc.ir.types", "gemmc.errors", 1),
             Import("gemmc.errors", "gemmc.ir.nodes", 3), Import("gemmc.families.simt.plan", "gemmc.families.base", 1),
             Import("gemmc.families.registry", "gemmc.families.simt", 1)]
    assert cycles(package_edges(found, PACKAGES)) == [["gemmc.errors", "gemmc.ir", "gemmc.errors"]]
    assert cycles(module_edges(found)) == [["gemmc.errors", "gemmc.ir.nodes", "gemmc.ir.types", "gemmc.errors"]]
