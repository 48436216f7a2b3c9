"""
The package's layers, from the bottom up: `nn`, `common`; `archive`; `data`, `training`;
`modules`; `models`, `commands`, `predictors` (and `patches`, AllenNLP's patches);
`integrations`. A module imports only from its own layer or the layers below it, so there is no
circle; imports for type annotations alone (under `if TYPE_CHECKING:`) are exempt. The package's
`__init__` and `__main__` sit on top. `experiments/` (the repository's own demo, corpus builders
and measurements, not installed) sits above the whole package: it may import the plugin, never the
reverse, and it reaches only the plugin's public names (no `_private` one).
"""
import ast
from pathlib import Path
from typing import Iterator, Optional, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "allennlp_elmo_c"
LAYERS = {
    "nn": 1, "common": 1,
    "archive": 2,
    "data": 3, "training": 3,
    "modules": 4,
    "models": 5, "commands": 5, "predictors": 5, "patches": 5,
    "integrations": 6,
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


def private_names(path: Path, source: str) -> Iterator[str]:
    """`_name`s that `source` imports from the plugin (`from allennlp_elmo_c.x import _name`)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("allennlp_elmo_c"):
            for alias in node.names:
                if alias.name.startswith("_"):
                    yield f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}.{alias.name}"


def test_no_module_imports_from_a_layer_above_its_own():
    found = [
        violation
        for path in sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "experiments").rglob("*.py"))
        for violation in violations(path, path.read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join(found)


def test_the_experiments_use_only_the_plugins_public_names():
    found = [
        private
        for path in sorted((ROOT / "experiments").rglob("*.py"))
        for private in private_names(path, path.read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join(found)


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
    archive = PACKAGE / "archive.py"  # layer 2
    assert bool(list(violations(archive, source))) is bad
