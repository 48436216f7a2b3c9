"""Every config in downstream_configs/ trains for one epoch on tiny fixtures (the task configs in
their own test modules), and every task config takes the biLM's size from ELMO_C_DIM."""

import itertools
import json
import shutil

import pytest
import torch

# Register the task models and readers (the CLI would import all of allennlp_models).
import allennlp_models.classification  # noqa: F401
import allennlp_models.coref  # noqa: F401
import allennlp_models.pair_classification  # noqa: F401
import allennlp_models.structured_prediction  # noqa: F401
import allennlp_models.tagging  # noqa: F401
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.models import Model

from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.helpers import TINY_ELMO_C_DIM, set_downstream_environment, train_config

TINY = FIXTURES_ROOT / "fasttext" / "tiny.bin"


@pytest.fixture
def demo_data_dir(tmp_path):
    """The layout `build-demo-data` makes, with the tiny fixtures in it."""
    (tmp_path / "fasttext").mkdir()
    shutil.copy(TINY, tmp_path / "fasttext" / "news.100d.bin")
    (tmp_path / "sentiment").mkdir()
    for split in ("train", "dev", "test"):
        shutil.copy(
            FIXTURES_ROOT / "data" / "sentiment.jsonl", tmp_path / "sentiment" / f"{split}.jsonl"
        )
    return tmp_path


@pytest.mark.parametrize("baseline, input_dim", [("none", 16 + 16), ("fasttext", 16)])
def test_demo_sentiment(monkeypatch, tmp_path, demo_data_dir, elmo_c_archive, baseline, input_dim):
    set_downstream_environment(
        monkeypatch, elmo_c_archive, baseline, ELMO_C_DATA_DIR=str(demo_data_dir)
    )
    overrides = {"trainer.num_epochs": 1, "model.pre_encode_feedforward.input_dim": input_dim}
    config = PROJECT_ROOT / "downstream_configs" / "demo_sentiment_elmo_c.jsonnet"
    metrics = train_config(config, tmp_path / "run", overrides=json.dumps(overrides))
    assert 0.0 <= metrics["test_accuracy"] <= 1.0


DATA = FIXTURES_ROOT / "data"
GLOVE_300D = str(DATA / "glove_tiny.300d.txt")
# Each task config's data variables, on the fixtures ("POS_DATA_DIR" is filled in by the test).
TASK_PATHS = {
    "ner": {"NER_TRAIN_DATA_PATH": str(DATA / "conll2003.txt"),
            "NER_TEST_DATA_PATH": str(DATA / "conll2003.txt"),
            "GLOVE_50D": str(DATA / "glove_tiny.50d.txt")},
    "pos": {},
    "snli": {"SNLI_TRAIN": str(DATA / "snli.jsonl"), "SNLI_DEV": str(DATA / "snli.jsonl")},
    "srl": {"SRL_TRAIN_DATA_PATH": str(DATA / "conll2012"),
            "SRL_VALIDATION_DATA_PATH": str(DATA / "conll2012")},
    "sst5": {"SST_TRAIN": str(DATA / "sst5.txt"), "SST_DEV": str(DATA / "sst5.txt"),
             "SST_TEST": str(DATA / "sst5.txt"), "GLOVE_840B_300D": GLOVE_300D},
    "stsb": {"STSB_TRAIN": str(DATA / "stsb.tsv"), "STSB_DEV": str(DATA / "stsb.tsv"),
             "STSB_TEST": str(DATA / "stsb.tsv")},
    "coref": {"COREF_TRAIN_DATA_PATH": str(DATA / "coref.gold_conll"),
              "COREF_DEV_DATA_PATH": str(DATA / "coref.gold_conll"),
              "COREF_TEST_DATA_PATH": str(DATA / "coref.gold_conll"), "GLOVE_6B_300D": GLOVE_300D},
}  # fmt: skip


def set_task_environment(monkeypatch, tmp_path, task, archive, elmo_c_dim, baseline="none"):
    """The task's variables on the fixtures; ELMO_C_DIM unset (the default) when `elmo_c_dim`
    is None."""
    paths = dict(TASK_PATHS[task])
    if task == "pos":
        (tmp_path / "train.txt").write_text("The###DT council###NN met###VBD .###.\n")
        (tmp_path / "dev.txt").write_text("Storms###NNS closed###VBD schools###NNS\n")
        paths["POS_DATA_DIR"] = str(tmp_path)
    set_downstream_environment(monkeypatch, archive, baseline, **paths)
    if elmo_c_dim is None:
        monkeypatch.delenv("ELMO_C_DIM")
    else:
        monkeypatch.setenv("ELMO_C_DIM", str(elmo_c_dim))


def build_and_run_one_batch(task):
    """The task model of downstream_configs/<task>_elmo_c.jsonnet at full size (its vocabulary
    from the fixture training data), run on two training instances; returns its output."""
    params = Params.from_file(str(PROJECT_ROOT / "downstream_configs" / f"{task}_elmo_c.jsonnet"))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    instances = list(itertools.islice(reader.read(params.pop("train_data_path")), 500))
    vocab = Vocabulary.from_instances(instances)
    model = Model.from_params(vocab=vocab, params=params.pop("model")).eval()
    batch = Batch(instances[:2])
    batch.index_instances(vocab)
    with torch.no_grad():
        return model(**batch.as_tensor_dict())


@pytest.mark.parametrize("task", sorted(TASK_PATHS))
def test_task_config_builds_and_runs_with_elmo_c_dim(monkeypatch, tmp_path, elmo_c_archive, task):
    # The fixture biLM is 16-d: with ELMO_C_DIM=16 every layer after it fits, untouched.
    set_task_environment(monkeypatch, tmp_path, task, elmo_c_archive, TINY_ELMO_C_DIM)
    output = build_and_run_one_batch(task)
    assert torch.isfinite(output["loss"])


@pytest.mark.parametrize("task", sorted(TASK_PATHS))
def test_archive_of_another_size_is_a_configuration_error(
    monkeypatch, tmp_path, elmo_c_archive, task
):
    # ELMO_C_DIM unset: the paper's 1024, and the 16-d fixture archive does not fit. Without the
    # check, the coref model failed with a torch shape error in its first batch and the others
    # with AllenNLP's dimension check, naming neither the biLM's size nor the variable.
    set_task_environment(monkeypatch, tmp_path, task, elmo_c_archive, None)
    with pytest.raises(ConfigurationError) as error:
        build_and_run_one_batch(task)
    message = str(error.value)
    assert "outputs 16-d" in message and "expects 1024-d" in message
    assert "ELMO_C_DIM=16" in message


@pytest.mark.parametrize("task", sorted(TASK_PATHS))
def test_the_fasttext_row_is_sized_from_elmo_c_fasttext_dim(monkeypatch, tmp_path, elmo_c_archive, task):
    # The fixture fastText model is 16-d: with ELMO_C_FASTTEXT_DIM=16 (set_downstream_environment)
    # the fastText-only row builds and runs at full size.
    set_task_environment(monkeypatch, tmp_path, task, elmo_c_archive, None, baseline="fasttext")
    output = build_and_run_one_batch(task)
    assert torch.isfinite(output["loss"])


@pytest.mark.parametrize("task", sorted(TASK_PATHS))
def test_a_fasttext_bin_of_another_size_is_a_configuration_error(
    monkeypatch, tmp_path, elmo_c_archive, task
):
    # ELMO_C_FASTTEXT_DIM unset: 300, and the 16-d fixture .bin does not fit. Without the check
    # the fastText-only row stopped deep in torch (coref: `addmm: mat1 and mat2 shapes cannot be
    # multiplied`).
    set_task_environment(monkeypatch, tmp_path, task, elmo_c_archive, None, baseline="fasttext")
    monkeypatch.delenv("ELMO_C_FASTTEXT_DIM")
    with pytest.raises(ConfigurationError) as error:
        build_and_run_one_batch(task)
    message = str(error.value)
    assert "has dimension 16, but 300 was expected" in message
    assert "ELMO_C_FASTTEXT_DIM=16" in message


@pytest.mark.parametrize("value, input_size", [(None, 50 + 128 + 1024), ("256", 50 + 128 + 256)])
def test_elmo_c_dim_default_and_value(monkeypatch, tmp_path, elmo_c_archive, value, input_size):
    set_task_environment(monkeypatch, tmp_path, "ner", elmo_c_archive, value)
    model = Params.from_file(str(PROJECT_ROOT / "downstream_configs" / "ner_elmo_c.jsonnet"))[
        "model"
    ]
    assert model["encoder"]["input_size"] == input_size
    elmo_c = model["text_field_embedder"]["token_embedders"]["elmo"]
    assert elmo_c["expected_output_dim"] == input_size - 50 - 128


@pytest.mark.parametrize("config", sorted(p.name for p in (PROJECT_ROOT / "downstream_configs").glob("*.jsonnet")))
def test_every_downstream_config_carries_the_random_generator_state(config):
    """A task run resumed with --recover draws the same dropout masks as the uninterrupted one."""
    text = (PROJECT_ROOT / "downstream_configs" / config).read_text()
    callbacks = text[text.index("callbacks:") : text.index("]", text.index("callbacks:"))]
    assert "type: 'rng_state'" in callbacks
