"""
A received model is data, not a program: its config may only build registered components,
with their constructors' keys (`allennlp_elmo_c.received.received_config`), and is refused before
anything is built otherwise, through every front door.

The issue's attack: one extra `pretrained_transformer` indexer with `tokenizer_kwargs:
{trust_remote_code: true}` and a model name that the directory's `files` turn into a path inside
it. A loader building whatever a received config names would run the Python shipped in the
directory; `ElmoC`, `ElmoCEmbedder`, `PretrainedBiLM.from_archive`, `elmo-c-embed`, `allennlp
predict` / `evaluate`, the spaCy component and `spacy.load`, Hugging Face's `AutoModel` and
`AutoTokenizer`, and `package` refuse it. `describe` builds the model only when its config
freezes a parameter, which the crafted model here does not, so it would run no code for this
very model: it refuses it all the same. The same holds for a biLM archive (its config.json
naming the directory by path), a task archive, and the biLM record a task archive keeps.
"""

import json
from pathlib import Path

import pytest

from tests import FIXTURES_ROOT
from tests.security.received_models import (
    allennlp,
    bilm_node,
    craft_archive,
    craft_directory,
    front_doors,
    listener,
    redirect_hf_modules,
    refusal,
    task_archive_doors,
    train_task_archive,
    write_remote_code,
)

@pytest.fixture
def hf_modules(tmp_path, monkeypatch) -> Path:
    return redirect_hf_modules(tmp_path, monkeypatch)


DIRECTORY_DOORS = [
    "PretrainedBiLM.from_archive", "ElmoC", "ElmoCEmbedder", "elmo-c-embed", "allennlp predict",
    "allennlp evaluate", "spaCy component", "spacy.load", "Flair", "AutoModel", "AutoTokenizer",
    "package", "describe",
]  # fmt: skip
ARCHIVE_DOORS = [door for door in DIRECTORY_DOORS if door not in ("spacy.load", "AutoModel", "AutoTokenizer")]


def remote_code_indexer(model_name: str) -> dict:
    return {
        "type": "pretrained_transformer",
        "model_name": model_name,
        "tokenizer_kwargs": {"trust_remote_code": True},
    }


@pytest.mark.parametrize("door", DIRECTORY_DOORS)
def test_remote_code_in_a_model_directory_is_refused_at_every_front_door(
    door, model_directory, tmp_path, monkeypatch, hf_modules, capsys
):
    """The issue's attack: refused at every front door, `describe` included, and the received
    model's Python never runs."""
    marker = tmp_path / "marker"

    def edit(config):
        config["files"]["remote"] = "remote"
        config["bilm"]["dataset_reader"]["token_indexers"]["remote"] = remote_code_indexer("remote")

    crafted = tmp_path / "received"
    source, _ = model_directory
    craft_directory(source, crafted, lambda config: (write_remote_code(crafted / "remote", marker), edit(config)))
    doors = front_doors(crafted, tmp_path / "work", monkeypatch, directory=True)
    message = refusal(doors[door], capsys)
    assert not marker.exists(), "the received model's Python ran"
    assert not hf_modules.exists(), "Hugging Face copied the received model's Python"
    assert not (tmp_path / "work" / "packaged").exists() and not (tmp_path / "work" / "out.hdf5").exists()
    assert "bilm.dataset_reader.token_indexers.remote.tokenizer_kwargs.trust_remote_code" in message
    assert "config.json" in message


@pytest.mark.parametrize("door", ARCHIVE_DOORS)
def test_remote_code_in_a_bilm_archive_is_refused_at_every_front_door(
    door, elmo_c_archive, tmp_path, monkeypatch, hf_modules, capsys
):
    """A biLM archive whose config.json names a directory of Python by its path: refused at
    every front door, `describe` included, and the Python never runs."""
    marker = tmp_path / "marker"
    remote = write_remote_code(tmp_path / "remote", marker)

    def edit(config):
        config["dataset_reader"]["token_indexers"]["remote"] = remote_code_indexer(str(remote))

    crafted = craft_archive(elmo_c_archive, tmp_path / "received" / "model.tar.gz", edit)
    message = refusal(front_doors(crafted, tmp_path / "work", monkeypatch, directory=False)[door], capsys)
    assert not marker.exists(), "the received model's Python ran"
    assert not hf_modules.exists()
    assert "dataset_reader.token_indexers.remote.tokenizer_kwargs.trust_remote_code" in message


@pytest.fixture(scope="module")
def task_archive(tmp_path_factory) -> Path:
    return train_task_archive(tmp_path_factory.mktemp("task"))


@pytest.mark.parametrize("door", ["allennlp predict", "allennlp evaluate", "load_archive"])
def test_remote_code_in_a_task_archive_is_refused(
    door, task_archive, tmp_path, monkeypatch, hf_modules, capsys
):
    """An ELMo-C task archive (any AllenNLP model over a component of the plugin): its config
    cannot be held to the plugin's components, but it may not ask for remote code (`*_kwargs`,
    `trust_remote_code`) or load a local directory as a Hugging Face model: refused, and the
    Python never runs."""
    marker = tmp_path / "marker"
    remote = write_remote_code(tmp_path / "remote", marker)

    def edit(config):
        config["dataset_reader"]["token_indexers"] = {
            "tokens": {"type": "single_id"}, "remote": remote_code_indexer(str(remote))
        }

    crafted = craft_archive(task_archive, tmp_path / "received" / "model.tar.gz", edit)
    message = refusal(task_archive_doors(crafted, tmp_path, monkeypatch)[door], capsys)
    assert not marker.exists(), "the received model's Python ran"
    assert not hf_modules.exists()
    assert "dataset_reader.token_indexers.remote.tokenizer_kwargs.trust_remote_code" in message


def test_a_local_directory_as_a_transformer_in_a_task_archive_is_refused(task_archive, tmp_path):
    """Without `trust_remote_code`, a task archive may still not make Hugging Face load a local
    directory: refused, naming the key (loaded, it would end here in an error from transformers,
    no refusal)."""
    from allennlp.models.archival import load_archive

    remote = write_remote_code(tmp_path / "remote", tmp_path / "marker")

    def edit(config):
        config["dataset_reader"]["token_indexers"] = {
            "tokens": {"type": "single_id"},
            "remote": {"type": "pretrained_transformer", "model_name": str(remote)},
        }

    crafted = craft_archive(task_archive, tmp_path / "received" / "model.tar.gz", edit)
    message = refusal(lambda: load_archive(str(crafted)))
    assert "dataset_reader.token_indexers.remote.model_name" in message and "local path" in message


def test_remote_code_in_a_task_archives_bilm_record_is_refused(elmo_c_archive, tmp_path, hf_modules):
    """The record of its biLM a task archive keeps (in its vocabulary) goes through the biLM
    allowlist when the task archive is loaded without the biLM archive: refused, and the Python
    never runs."""
    from allennlp_elmo_c.archive import read_archive_config
    from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM

    marker = tmp_path / "marker"
    remote = write_remote_code(tmp_path / "remote", marker)
    config = read_archive_config(str(elmo_c_archive))
    config["dataset_reader"]["token_indexers"]["remote"] = remote_code_indexer(str(remote))
    record = json.dumps({"config": config, "vocabulary": {"non_padded_namespaces.txt": "*tags\n*labels\n"}})
    message = refusal(lambda: PretrainedBiLM.from_record(record, str(tmp_path / "gone.tar.gz")))
    assert not marker.exists() and not hf_modules.exists(), "the received model's Python ran"
    assert "biLM record" in message
    assert "dataset_reader.token_indexers.remote.tokenizer_kwargs.trust_remote_code" in message


# --- each class of refused config, in a model directory and in a biLM archive ------------------


def _url_options(base: str):
    """A char-CNN target whose ELMo options and weights are URLs (which AllenNLP's loader
    fetches)."""

    def edit(config):
        config["model"]["target_embedder"] = {"token_embedders": {"tokens": {
            "type": "elmo_char_cnn", "options_file": f"{base}/options.json", "weight_file": f"{base}/weights.hdf5",
        }}}  # fmt: skip

    return edit


CASES = {
    # case: (edit of the biLM config, given another biLM archive to nest, the key path the
    # refusal names); the comments say what a loader that does not check the config does
    "another type": (  # builds it (here: transformers' error without network, no refusal)
        lambda config, nested: config["dataset_reader"]["token_indexers"].update(
            extra={"type": "pretrained_transformer", "model_name": "bert-base-uncased"}
        ),
        "dataset_reader.token_indexers.extra.model_name",
    ),
    "a *_kwargs key": (  # AllenNLP's check of extra parameters refuses it, after the model is built
        lambda config, nested: config["dataset_reader"]["token_indexers"]["tokens"].update(tokenizer_kwargs={}),
        "dataset_reader.token_indexers.tokens.tokenizer_kwargs",
    ),
    "a nested archive reader": (  # reads the nested archive
        lambda config, nested: config.update(
            validation_dataset_reader={"type": "from_archive", "archive_file": str(nested)}
        ),
        "validation_dataset_reader.type",
    ),
    "a nested archive indexer": (  # reads the nested archive
        lambda config, nested: config["dataset_reader"]["token_indexers"].update(
            nested={"type": "fasttext_subwords", "archive_file": str(nested)}
        ),
        "dataset_reader.token_indexers.nested.archive_file",
    ),
    "an initializer": (  # applied by a model directory's loader (an archive's: AllenNLP removes it)
        lambda config, nested: config["model"].update(initializer={"regexes": [[".*projection.*", {
            "type": "pretrained", "weights_file_path": "/nonexistent/weights.th"}]]}),  # fmt: skip
        "model.initializer",
    ),
    "a regularizer": (  # builds it
        lambda config, nested: config["model"].update(regularizer={"regexes": [[".*", {"type": "l2"}]]}),
        "model.regularizer",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("form", ["directory", "archive"])
def test_each_refused_kind_of_config_names_its_key(
    case, form, model_directory, elmo_c_archive, tmp_path, monkeypatch
):
    """Each class of refusal, through `PretrainedBiLM.from_archive` and `allennlp evaluate`
    (AllenNLP's loader): refused with a message naming the key path and config.json, not built
    (and so not refused by the error of what it does, or after the model is built by a message
    that names no key path, as `CASES` says a loader that does not check the config does)."""
    from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM

    edit, key = CASES[case]
    if form == "directory":
        model = craft_directory(model_directory[0], tmp_path / "received",
                                lambda config: edit(bilm_node(config, True), elmo_c_archive))  # fmt: skip
        key = "bilm." + key
    else:
        model = craft_archive(elmo_c_archive, tmp_path / "received" / "model.tar.gz",
                              lambda config: edit(config, elmo_c_archive))  # fmt: skip
    for load in (
        lambda: PretrainedBiLM.from_archive(str(model)),
        lambda: allennlp(monkeypatch, "evaluate", str(model), str(FIXTURES_ROOT / "data" / "lm" / "dev.txt")),
    ):
        message = refusal(load)
        assert f"{key}:" in message and "config.json" in message, message


@pytest.mark.parametrize("form", ["directory", "archive"])
def test_a_url_in_a_received_config_is_never_fetched(form, model_directory, elmo_c_archive, tmp_path,
                                                     monkeypatch, capsys):  # fmt: skip
    """A received config naming URLs (here: a char-CNN's ELMo files) is refused before anything
    is fetched (AllenNLP's `cached_path` would fetch them), through every front door: the
    listener sees no request."""
    directory = form == "directory"
    with listener() as (base, requests):
        edit = _url_options(base)
        if directory:
            model = craft_directory(model_directory[0], tmp_path / "received", lambda c: edit(bilm_node(c, True)))
        else:
            model = craft_archive(elmo_c_archive, tmp_path / "received" / "model.tar.gz", edit)
        doors = front_doors(model, tmp_path / "work", monkeypatch, directory)
        for name, door in doors.items():
            message = refusal(door, capsys)
            assert requests == [], f"{name} fetched {requests}"
            assert "target_embedder.token_embedders.tokens." in message and "is a URL" in message, name
