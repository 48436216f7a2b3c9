"""Every change to AllenNLP's own attributes is in `allennlp_elmo_c/patches/`: no other module of
the package assigns to (or `setattr`s, or deletes) an attribute of anything it imported from
AllenNLP or allennlp-models, and no module re-registers a name AllenNLP registers."""

import ast
import sys
from typing import Iterator, List, Set

from allennlp.common.registrable import Registrable

import allennlp_elmo_c  # noqa: F401  (every component registered)
from allennlp_elmo_c.patches import PATCHES
from allennlp_elmo_c.patches import load_archive as load_archive_patch
from tests import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "allennlp_elmo_c"
ALLENNLP = ("allennlp", "allennlp_models")


def _allennlp_names(tree: ast.AST) -> Set[str]:
    """The names a module binds to AllenNLP modules, classes and functions by its imports."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ALLENNLP:
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in ALLENNLP:
                names.update(alias.asname or alias.name for alias in node.names)
    return names


def _root(node: ast.AST) -> str:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def reach_ins(source: str, where: str) -> Iterator[str]:
    """`where:line` of each assignment, deletion or `setattr`/`delattr` on an attribute of an
    AllenNLP name in `source`."""
    tree = ast.parse(source)
    names = _allennlp_names(tree)
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id in ("setattr", "delattr") and _root(node.args[0]) in names:
                yield f"{where}:{node.lineno} {node.func.id}({ast.unparse(node.args[0])}, ...)"
        for target in targets:
            for item in ast.walk(target):
                if isinstance(item, ast.Attribute) and _root(item) in names:
                    yield f"{where}:{node.lineno} {ast.unparse(item)}"
                    break


def test_no_module_outside_patches_changes_an_allennlp_attribute():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PROJECT_ROOT)
        if relative.parts[1] == "patches":
            continue
        found.extend(reach_ins(path.read_text(encoding="utf-8"), str(relative)))
    assert not found, "change AllenNLP only in allennlp_elmo_c/patches/:\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_reach_in():
    source = (
        "import allennlp.models\n"
        "from allennlp.common import params as p\n"
        "from allennlp.training.checkpointer import Checkpointer\n"
        "allennlp.models.load_archive = None\n"
        "p.evaluate_file = None\n"
        "Checkpointer.__init__ = None\n"
        "setattr(Checkpointer, 'x', 1)\n"
        "del p._environment_variables\n"
        "mine = object(); mine.x = 1\n"
    )
    assert sorted(line.split(" ")[0] for line in reach_ins(source, "m")) == [
        "m:4",
        "m:5",
        "m:6",
        "m:7",
        "m:8",
    ]


def test_the_plugin_registers_no_name_that_allennlp_registers_for_the_same_class():
    """Re-registering an AllenNLP name (`Checkpointer`'s "default") would change what a config
    that does not name the plugin builds."""
    taken = []
    for base, names in Registrable._registry.items():
        for name, (subclass, _) in names.items():
            if subclass.__module__.startswith("allennlp_elmo_c") and base.__module__.startswith(
                "allennlp."
            ):
                default = base.default_implementation
                if name == default:
                    taken.append(f"{base.__name__}: {name!r}")
    assert not taken


def test_every_patch_module_says_why_and_applies_once():
    for patch in PATCHES:
        assert patch.__doc__ and len(patch.__doc__.split()) > 30, patch.__name__
        patch.apply()  # again: nothing changes
    modules = {path.stem for path in (PACKAGE / "patches").glob("*.py")} - {"__init__"}
    assert modules == {patch.__name__.rsplit(".", 1)[1] for patch in PATCHES}


def test_the_package_imports_its_patches_from_one_place():
    source = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    assert source.count(".apply()") == 1 and "patches.apply()" in source
    callers = [str(path.relative_to(PROJECT_ROOT)) for path in PACKAGE.rglob("*.py")
               if ".apply()" in path.read_text(encoding="utf-8")
               and path.relative_to(PACKAGE).parts[0] != "patches" and path.name != "__init__.py"]  # fmt: skip
    assert not callers


def _every_module(package: str):
    """Every module of `package` (a path under the project root), imported."""
    import importlib
    import pkgutil

    root = importlib.import_module(package)
    yield root
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        yield importlib.import_module(info.name)


def stale_allennlp_functions(modules) -> List[str]:
    """`module.name` for each AllenNLP function a module holds that its home module no longer has
    under that name (imported by name before a patch replaced it)."""
    import types

    stale = []
    for module in modules:
        for name, value in vars(module).items():
            if not isinstance(value, types.FunctionType) or "." in value.__qualname__:
                continue
            home = sys.modules.get(value.__module__)
            if home is None or value.__module__.split(".")[0] not in ALLENNLP:
                continue
            if getattr(home, value.__name__, value) is not value:
                stale.append(f"{module.__name__}.{name} (not {value.__module__}'s)")
    return stale


def test_no_module_holds_an_allennlp_function_that_its_home_module_replaced():
    modules = list(_every_module("allennlp_elmo_c")) + list(_every_module("experiments"))
    assert len(modules) > 100
    assert not stale_allennlp_functions(modules)


def test_the_check_finds_a_function_imported_before_its_patch():
    import types

    from allennlp.models import archival

    original = load_archive_patch.ORIGINALS["load_archive"]
    early = types.ModuleType("imported_before_the_plugin")
    early.load_archive = original
    assert archival.load_archive is not original
    assert stale_allennlp_functions([early]) == [
        "imported_before_the_plugin.load_archive (not allennlp.models.archival's)"
    ]
