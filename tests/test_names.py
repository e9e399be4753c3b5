"""One name per thing: no public class or function is defined at module level in two modules of
pregen_jax (a re-export in a package's ``__init__`` is the same thing, and ``tiers.oracle``
mirrors ``tiers._sweep`` name for name on purpose: it is the sweep's plain-NumPy reference)."""
import ast
from collections import defaultdict

from tests.conftest import ROOT

PACKAGE = ROOT / "pregen_jax"
MIRRORS = {"pregen_jax/tiers/oracle.py"}  # the sweep's reference implementation, same names by design

# Names allowed in two modules: none (the clashes listed here during the rework are renamed).
KNOWN_POSTGEN: set[str] = set()


def defined_names(path) -> list[str]:
    """Public classes and functions defined at the module's top level (not imported)."""
    tree = ast.parse(path.read_text(), str(path))
    return [node.name for node in tree.body
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and not node.name.startswith("_")]


def definitions() -> dict[str, list[str]]:
    where = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if path.name == "__init__.py" and not defined_names(path):
            continue
        if relative in MIRRORS:
            continue
        for name in defined_names(path):
            where[name].append(relative)
    return where


def test_no_public_name_is_defined_in_two_modules():
    twice = {name: paths for name, paths in definitions().items() if len(paths) > 1 and name not in KNOWN_POSTGEN}
    assert not twice, "defined in more than one module: " + "; ".join(
        f"{name} ({', '.join(paths)})" for name, paths in sorted(twice.items()))


def test_known_postgen_clashes_are_still_clashes():
    """An entry of KNOWN_POSTGEN that no longer clashes is removed from the list (so it stays exact)."""
    where = definitions()
    gone = sorted(name for name in KNOWN_POSTGEN if len(where.get(name, [])) < 2)
    assert not gone, f"no longer defined twice, remove from KNOWN_POSTGEN: {gone}"
