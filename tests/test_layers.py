"""
The package's layers, from the bottom up: `nn`, `common`; `fasttext`; `received`; `archive`; `data`,
`training`; `modules`; `models`, `commands`, `predictors` (and `patches`, AllenNLP's patches);
`integrations`. A module imports only from its own layer or the layers below it, so there is no
circle; imports for type annotations alone (under `if TYPE_CHECKING:`) are exempt. The package's
`__init__` and `__main__` sit on top. `experiments/` (the repository's own demo, corpus builders and
measurements, not installed) sits above the whole package: it may import the plugin, never the
reverse. No module reaches into another's private names (`from x import _name`, `x._name`), in the
package or from the experiments.
"""
import ast
from pathlib import Path
from typing import Iterator, Optional, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "allennlp_elmo_c"
LAYERS = {
    "nn": 1, "common": 1,
    "fasttext": 2,
    "received": 3,
    "archive": 4,
    "data": 5, "training": 5,
    "modules": 6,
    "models": 7, "commands": 7, "predictors": 7, "patches": 7,
    "integrations": 8,
}  # fmt: skip
TOP, EXPERIMENTS = 10, 11


def layer_of(module: str) -> Optional[int]:
    """The layer of a dotted module name; None for modules outside this project."""
    parts = module.split(".")
    if parts[0] == "experiments":
        return EXPERIMENTS
    if parts[0] != "allennlp_elmo_c":
        return None
    if len(parts) == 1 or parts[1] in ("__init__", "__main__"):
        return TOP
    if parts[1] not in LAYERS:
        raise AssertionError(f"{module}: not in the layer table of tests/test_layers.py")
    return LAYERS[parts[1]]


def imports(source: str) -> Iterator[Tuple[int, str]]:
    """(line, module) of every absolute import in `source`, but those under `if TYPE_CHECKING:`."""
    tree = ast.parse(source)
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for statement in node.body for child in ast.walk(statement))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def violations(path: Path, source: str):
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    mine = layer_of(module)
    for line, imported in imports(source):
        theirs = layer_of(imported)
        if theirs is not None and theirs > mine:
            yield f"{path.relative_to(ROOT)}:{line} imports {imported}"


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def is_module(dotted: str) -> bool:
    """Whether `dotted` names a module or package of this project (a C extension too)."""
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file() or any(
        path.parent.glob(path.name + ".*.so")
    )


def plugin_modules(tree: ast.AST) -> dict:
    """The names `tree` binds to plugin modules (`import allennlp_elmo_c.x as m`, `from
    allennlp_elmo_c import x`): {name: dotted module}."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update((alias.asname, alias.name) for alias in node.names
                         if alias.name.startswith("allennlp_elmo_c.") and alias.asname)  # fmt: skip
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("allennlp_elmo_c"):
            for alias in node.names:
                if is_module(f"{node.module}.{alias.name}"):
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def private_names(path: Path, source: str) -> Iterator[str]:
    """Private names of another plugin module that `source` reaches: imported (`from
    allennlp_elmo_c.x import _name`) or read as an attribute of an imported module
    (`module._name`). A module's own private C extension (`from allennlp_elmo_c.nn import
    _lstmp_cpu` in `allennlp_elmo_c/nn/`) is its own."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    folder = module.rsplit(".", 1)[0]
    tree = ast.parse(source)
    bound = plugin_modules(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("allennlp_elmo_c"):
            for alias in node.names:
                own_extension = node.module == folder and is_module(f"{node.module}.{alias.name}")
                if is_private(alias.name) and node.module != module and not own_extension:
                    yield f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}.{alias.name}"
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            target = bound.get(node.value.id)
            if target and target != module and is_private(node.attr):
                yield f"{path.relative_to(ROOT)}:{node.lineno} reads {target}.{node.attr}"


def test_no_module_imports_from_a_layer_above_its_own():
    found = [
        violation
        for path in sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "experiments").rglob("*.py"))
        for violation in violations(path, path.read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join(found)


def test_no_module_reaches_into_another_modules_private_names():
    """The experiments use only the plugin's public names; the plugin's modules one another's."""
    found = [
        private
        for path in sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "experiments").rglob("*.py"))
        for private in private_names(path, path.read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "source, bad",
    [
        ("from allennlp_elmo_c.nn.lstmp import _cpu_kernels\n", True),
        ("from allennlp_elmo_c.nn import lstmp\nlstmp._cpu_kernels()\n", True),
        ("import allennlp_elmo_c.nn.lstmp as layer\nlayer._empty_after\n", True),
        ("from allennlp_elmo_c.nn import lstmp\nlstmp.pointwise_kernels\n", False),
        ("from allennlp_elmo_c.nn import _lstmp_cpu\n", False),  # its own folder's C extension
        ("from allennlp_elmo_c.fasttext import _subwords\n", True),  # another folder's
        ("import torch\ntorch._C\n", False),  # not the plugin's
    ],
)
def test_the_check_sees_a_reach_into_private_names(source, bad):
    lstmp_cpu = PACKAGE / "nn" / "lstmp_cpu.py"
    assert bool(list(private_names(lstmp_cpu, source))) is bad


@pytest.mark.parametrize(
    "source, bad",
    [
        ("from allennlp_elmo_c.models.elmo_c import ElmoCLanguageModel\n", True),
        ("def f():\n    import allennlp_elmo_c.modules.elmo_c\n", True),  # inside a function too
        ("from allennlp_elmo_c import ElmoC\n", True),  # the package's top
        ("if TYPE_CHECKING:\n    from allennlp_elmo_c.models.elmo_c import X\n", False),
        ("from allennlp_elmo_c.common.atomic import link_or_copy\nimport torch\n", False),
    ],
)
def test_the_check_sees_an_import_from_above(source, bad):
    archive = PACKAGE / "archive.py"  # layer 4
    assert bool(list(violations(archive, source))) is bad


def test_received_files_are_checked_above_the_fasttext_reader():
    """`received` reads fastText `.bin` files through `fasttext`, which never imports `received`."""
    fasttext_bin = PACKAGE / "fasttext" / "fasttext_bin.py"
    received_model = PACKAGE / "received" / "received_model.py"
    assert list(violations(fasttext_bin, "from allennlp_elmo_c.received.limits import quoted\n"))
    assert not list(violations(received_model, "from allennlp_elmo_c.fasttext import fasttext_bin\n"))
