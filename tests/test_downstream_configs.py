"""Every config in downstream_configs/ learns on tiny fixtures, with the biLM and with fastText
alone (`test_task_config_learns`), and every task config takes the biLM's size from ELMO_C_DIM."""

import itertools
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
from tests.helpers import TINY_ELMO_C_DIM, set_downstream_environment, train_recorded

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


# --- every task config learns at fixture size -----------------------------------------------------

EPOCHS = 4
# The demo's sentiment model (a BCN with a maxout output layer) moves off chance more slowly.
EPOCHS_OF = {"demo_sentiment": 12}
CONFIGS = FIXTURES_ROOT / "configs"
# Each trained config (the task configs at fixture size: tests/fixtures/configs/*_tiny.jsonnet
# import them and shrink their layers; STS-B and the demo's sentiment at their own size), its
# validation metric, and the overrides for each baseline (its variables: TASK_PATHS).
TRAINED = {
    "coref": (CONFIGS / "coref_elmo_c_tiny.jsonnet", "coref_f1", {}),
    # (Batches of 2: the fixture's 8 reviews would make one batch of the config's 32, one step an
    # epoch.)
    "demo_sentiment": (PROJECT_ROOT / "downstream_configs" / "demo_sentiment_elmo_c.jsonnet",
                       "accuracy", {"none": {"model.pre_encode_feedforward.input_dim": 16 + 16,
                                             "data_loader.batch_size": 2},
                                    "fasttext": {"model.pre_encode_feedforward.input_dim": 16,
                                                 "data_loader.batch_size": 2}}),
    "ner": (CONFIGS / "ner_elmo_c_tiny.jsonnet", "f1-measure-overall", {}),
    "pos": (PROJECT_ROOT / "downstream_configs" / "pos_elmo_c.jsonnet", "accuracy", {}),
    # At the paper's rate (4e-4) the tiny ESIM's loss stays within noise of its first epoch's
    # on some seeds, the config's among them once the biLM is built on `meta` (which draws no
    # random numbers); at 4e-3 it learns on the config's seed, 0 and 11 (seed 7 still does not).
    "snli": (CONFIGS / "snli_elmo_c_tiny.jsonnet", "accuracy",
             {baseline: {"trainer.optimizer.lr": 0.004} for baseline in ("none", "fasttext")}),
    "srl": (CONFIGS / "srl_elmo_c_tiny.jsonnet", "f1-measure-overall", {}),
    "sst5": (CONFIGS / "sst5_elmo_c_tiny.jsonnet", "accuracy", {}),
    # The baseline's input is the fastText .bin, 300-d in the config and 16-d in the fixture.
    "stsb": (PROJECT_ROOT / "downstream_configs" / "stsb_elmo_c.jsonnet", "accuracy",
             {"none": {"model.encoder.input_size": TINY_ELMO_C_DIM},
              "fasttext": {"model.encoder.input_size": TINY_ELMO_C_DIM}}),
}  # fmt: skip


def is_bilm(name: str) -> bool:
    """A parameter of the pretrained biLM inside a task model (not its scalar mixes)."""
    return "_elmo_c." in name and "scalar_mix" not in name


@pytest.mark.parametrize("baseline", ["none", "fasttext"])
@pytest.mark.parametrize("task", sorted(TRAINED))
def test_task_config_learns(task, baseline, monkeypatch, tmp_path, demo_data_dir, elmo_c_archive):
    """
    The task config trains `EPOCHS` epochs (`EPOCHS_OF`) on its fixture (the same file as its
    validation and test data), with the biLM ("none": no baseline) and with fastText alone, and
    what a broken config would not do happens (`tests.helpers.LearningRecord` records it):
    - the loss on the training data (in evaluation mode: no dropout) is lower after the last
      epoch than after the first (not than before training: at their learning rates, the ESIM
      configs are still about as far from the untrained model's loss as their first epoch's
      dropout noise took them);
    - every trainable parameter gets a non-zero gradient; nothing else gets one or changes;
    - with the biLM: its parameters are in the model, frozen, and its scalar mixes learn; with
      fastText alone, no biLM is in the model;
    - the validation data are evaluated each epoch, and the test data at the end where the config
      names them.
    """
    if task == "srl" and shutil.which("perl") is None:
        pytest.skip("the SRL scorer needs perl")
    config, metric, overrides = TRAINED[task]
    if task == "demo_sentiment":
        set_downstream_environment(monkeypatch, elmo_c_archive, baseline,
                                   ELMO_C_DATA_DIR=str(demo_data_dir))  # fmt: skip
    else:
        set_task_environment(monkeypatch, tmp_path, task, elmo_c_archive, TINY_ELMO_C_DIM, baseline)
    epochs = EPOCHS_OF.get(task, EPOCHS)
    overrides = {**overrides.get(baseline, {}), "trainer.num_epochs": epochs}
    # Every epoch runs (no early stop), and the best epoch's metrics are reported.
    overrides["trainer.patience"] = None
    metrics, record = train_recorded(config, tmp_path / "run", overrides)

    assert len(record["losses"]) == len(record["epoch_losses"]) == epochs
    assert record["epoch_losses"][-1] < record["epoch_losses"][0], record["epoch_losses"]
    trainable, got_gradient = set(record["trainable"]), set(record["got_gradient"])
    assert trainable and trainable - got_gradient == set(), "trainable, no gradient"
    assert got_gradient - trainable == set(), "a gradient reached a frozen parameter"
    assert set(record["changed"]) <= trainable, "a frozen parameter changed"
    bilm = [name for name in record["parameters"] if is_bilm(name)]
    if baseline == "none":
        assert bilm and not trainable & set(bilm), "the biLM is not in the model, or not frozen"
        assert any("scalar_mix" in name for name in got_gradient)
    else:
        assert bilm == [], "fastText alone, but the biLM is in the model"
    assert metrics["epoch"] == epochs - 1 and 0.0 <= metrics[f"best_validation_{metric}"] <= 1.0
    # A config with test data evaluates on it (`evaluate_on_test`); no other does.
    has_test_data = bool(Params.from_file(str(config)).get("test_data_path", None))
    assert (f"test_{metric}" in metrics) == has_test_data
    assert 0.0 <= metrics.get(f"test_{metric}", 0.0) <= 1.0


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
