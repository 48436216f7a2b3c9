"""
A received config cannot exhaust the machine: it is not evaluated (a jsonnet program whose work
doubles per level is refused as soon as it is read, as JSON), it is capped in size and nesting,
and the sizes it declares are held to its weights before memory is allocated
(`allennlp_elmo_c.received.allocation_budget`).

The attacks, each refused:
- A 1 KB jsonnet program doubling its work per level as an archive's config.json: evaluated as
  jsonnet (as AllenNLP's own `load_archive`, behind `allennlp predict` / `evaluate`, does), it
  never finishes (and ignores SIGTERM); the plugin's other front doors read it as JSON first.
- A config.json of 5 MB, which an uncapped loader reads whole, and one nested thousands of levels
  deep, which raises a `RecursionError` (no refusal naming the file) in an unbounded parse.
- A 2 KB config.json declaring a huge `cell_size`, which would allocate what it declares (3.3 GiB
  in the issue) before its size is compared with the weights', through every front door; and
  likewise a task archive declaring a huge `embedding_dim`.
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from allennlp.models.archival import load_archive

from tests.helpers import user_environment
from tests.security.received_models import (
    LM_DEV,
    SENTIMENT,
    allennlp,
    craft_archive,
    craft_directory,
    front_doors,
    refusal,
    train_task_archive,
)

# Guards against a hang (a process killed after this long fails the test); the refusal itself
# takes the time Python needs to import the plugin.
GUARD_SECONDS = 240
# An allocation this large, while a received model is loaded, is what the budget must refuse.
TRIPWIRE_BYTES = 256 << 20


def _doubling_jsonnet(config: dict) -> str:
    """`config` as a jsonnet program whose evaluation takes 2^60 steps."""
    config["model"]["dropout"] = "@@WORK@@"
    program = json.dumps(config).replace('"@@WORK@@"', "f(60) * 0")
    return "local f(n) = if n == 0 then 0 else f(n - 1) + f(n - 1);\n" + program


def _archive_config(archive: Path) -> dict:
    import tarfile

    with tarfile.open(archive) as opened:
        return json.load(opened.extractfile("config.json"))  # type: ignore[arg-type]


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_jsonnet_bomb_is_refused_as_soon_as_it_is_read(command, elmo_c_archive, tmp_path):
    """`python -m allennlp_elmo_c predict|evaluate` on the archive: refused, well before the
    guard's timeout (which kills the process; an evaluation of the bomb would run until then)."""
    crafted = craft_archive(elmo_c_archive, tmp_path / "received" / "model.tar.gz",
                            text=_doubling_jsonnet(_archive_config(elmo_c_archive)))  # fmt: skip
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text(json.dumps({"sentence": "The council met"}) + "\n")
    data = [str(inputs), "--predictor", "elmo_c_next_word"] if command == "predict" else [str(LM_DEV)]
    try:
        result = subprocess.run(
            [sys.executable, "-m", "allennlp_elmo_c", command, str(crafted), *data],
            cwd=tmp_path, env=user_environment(), capture_output=True, text=True,
            timeout=GUARD_SECONDS,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"still evaluating the received config after {GUARD_SECONDS} s (killed)")
    assert result.returncode != 0
    assert "config.json is not plain JSON" in result.stderr, result.stderr[-2000:]


@pytest.mark.parametrize("door", ["PretrainedBiLM.from_archive", "describe", "package"])
def test_a_jsonnet_bomb_is_refused_in_process(door, elmo_c_archive, tmp_path, monkeypatch):
    """The front doors that read config.json as JSON: refused in process."""
    crafted = craft_archive(elmo_c_archive, tmp_path / "received" / "model.tar.gz",
                            text=_doubling_jsonnet(_archive_config(elmo_c_archive)))  # fmt: skip
    message = refusal(front_doors(crafted, tmp_path / "work", monkeypatch, directory=False)[door])
    assert "config.json is not plain JSON" in message, message


@pytest.mark.parametrize("kind", ["large", "deep"])
@pytest.mark.parametrize("door", ["PretrainedBiLM.from_archive", "allennlp evaluate", "describe"])
def test_a_large_or_deep_config_is_refused_before_it_is_parsed(kind, door, elmo_c_archive, tmp_path, monkeypatch):
    """A config.json of 5 MB (a long value in a training-only section), or nested 5000 levels
    deep: refused, naming the file and the cap."""
    config = _archive_config(elmo_c_archive)
    config["trainer"]["notes"] = "@@NOTES@@"
    notes = json.dumps("x" * (5 << 20)) if kind == "large" else "[" * 5000 + "]" * 5000
    text = json.dumps(config).replace('"@@NOTES@@"', notes)
    crafted = craft_archive(elmo_c_archive, tmp_path / "received" / "model.tar.gz", text=text)
    message = refusal(front_doors(crafted, tmp_path / "work", monkeypatch, directory=False)[door])
    expected = "larger than" if kind == "large" else "nested deeper than"
    assert "config.json" in message and expected in message, message


class Tripwire(TorchDispatchMode):
    """Refuses (an `AssertionError`, before it happens) any tensor creation of more than
    `TRIPWIRE_BYTES`, and records the largest one asked for: under the loader's own budget, a
    huge size never reaches it."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        names = [argument.name for argument in func._schema.arguments]
        size = dict(zip(names, args), **kwargs).get("size")
        if isinstance(size, (list, tuple)) and all(isinstance(n, int) for n in size):
            requested = math.prod(size) * 4
            self.largest = max(self.largest, requested)
            if requested > TRIPWIRE_BYTES:
                raise AssertionError(f"{func} asked for {requested:,} bytes")
        return func(*args, **kwargs)


HUGE_CELL = 1 << 24  # elmo_lstm's first weight alone: 4 x 2^24 x 8 floats = 2 GiB


HUGE_CELL_DOORS = ["PretrainedBiLM.from_archive", "allennlp evaluate", "ElmoCEmbedder", "spaCy component",
                   "package"]  # fmt: skip


@pytest.mark.parametrize(
    "form, door",
    [("directory", door) for door in HUGE_CELL_DOORS + ["AutoModel"]]
    + [("archive", door) for door in HUGE_CELL_DOORS],
)
def test_a_huge_cell_size_is_refused_before_it_is_allocated(form, door, model_directory, elmo_c_archive,
                                                            tmp_path, monkeypatch):  # fmt: skip
    def edit(config):
        config["model"]["contextualizer"]["cell_size"] = HUGE_CELL

    if form == "directory":
        model = craft_directory(model_directory[0], tmp_path / "received", lambda config: edit(config["bilm"]))
    else:
        model = craft_archive(elmo_c_archive, tmp_path / "received" / "model.tar.gz", edit)
    call = front_doors(model, tmp_path / "work", monkeypatch, form == "directory")[door]
    tripwire = Tripwire()
    with tripwire:
        message = refusal(call)
    assert tripwire.largest <= TRIPWIRE_BYTES, f"{tripwire.largest:,} bytes were asked for"
    assert f"model.contextualizer.cell_size = {HUGE_CELL}" in message, message
    assert "Refused before allocating" in message


@pytest.fixture(scope="module")
def task_archive(tmp_path_factory) -> Path:
    return train_task_archive(tmp_path_factory.mktemp("task"))


@pytest.mark.parametrize("door", ["allennlp evaluate", "load_archive"])
def test_a_huge_embedding_in_a_task_archive_is_refused_before_it_is_allocated(door, task_archive, tmp_path,
                                                                              monkeypatch):  # fmt: skip
    """Any task archive's model is built within the budget of its weights."""

    def edit(config):
        config["model"]["text_field_embedder"]["token_embedders"]["tokens"]["embedding_dim"] = 1 << 24
        config["model"]["seq2vec_encoder"]["embedding_dim"] = 1 << 24

    crafted = craft_archive(task_archive, tmp_path / "received" / "model.tar.gz", edit)
    doors = {
        "allennlp evaluate": lambda: allennlp(monkeypatch, "evaluate", str(crafted), str(SENTIMENT)),
        "load_archive": lambda: load_archive(str(crafted)),
    }
    tripwire = Tripwire()
    with tripwire:
        message = refusal(doors[door])
    assert tripwire.largest <= TRIPWIRE_BYTES, f"{tripwire.largest:,} bytes were asked for"
    assert "embedding_dim = 16777216" in message and "Refused before allocating" in message, message


def test_the_budget_leaves_room_for_real_models(model_directory, elmo_c_archive):
    """The legitimate models load within their budget (and allocate nothing near the tripwire)."""
    from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM

    for model in (model_directory[0], elmo_c_archive):
        tripwire = Tripwire()
        with tripwire:
            bilm = PretrainedBiLM.from_archive(str(model))
        assert bilm.has_weights and torch.isfinite(next(bilm.model.parameters())).all()
