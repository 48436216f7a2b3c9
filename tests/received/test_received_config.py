import copy
import json
import re
from pathlib import Path

import _jsonnet
import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.config_defaults import CONFIG_DEFAULTS
from allennlp_elmo_c.received.received_config import (
    check_bilm_config,
    check_directory_config,
    check_received_config,
    check_task_config,
    drop_training_only,
)
from tests import PROJECT_ROOT

import allennlp_models.classification  # noqa: F401,E402 (registers the task components)
import allennlp_models.coref  # noqa: F401,E402
import allennlp_models.pair_classification  # noqa: F401,E402
import allennlp_models.structured_prediction  # noqa: F401,E402
import allennlp_models.tagging  # noqa: F401,E402

BILM = {
    "dataset_reader": {
        "type": "lm_corpus",
        "token_indexers": {"tokens": {"type": "fasttext_subwords", "model_path": "vectors.bin"}},
    },
    "model": {
        "type": "elmo_c",
        "text_field_embedder": {"token_embedders": {"tokens": {"type": "fasttext", "model_path": "vectors.bin"}}},
        "contextualizer": {"type": "elmo_lstm", "input_size": 16, "projection_size": 8, "cell_size": 12},
        "output_head": {"type": "continuous"},
        "nearest_neighbour_words": "/home/someone/words.txt",
    },
    "train_data_path": "https://example.org/corpus.txt",
    "vocabulary": {"type": "empty"},
    "trainer": {"optimizer": {"type": "adam"}, "callbacks": [{"type": "wandb", "wandb_kwargs": {}}]},
}


def _configs(pattern: str):
    """The repository's configs matching `pattern`, evaluated with placeholder variables (and
    the defaults the plugin gives every config, whichever file reads them)."""
    for path in sorted(PROJECT_ROOT.glob(pattern)):
        source = path.read_text()
        names = set(re.findall(r"extVar\(['\"]([A-Za-z_0-9]+)['\"]\)", source))
        for library in re.findall(r"import ['\"]([^'\"]+)['\"]", source):
            names |= set(re.findall(r"extVar\(['\"]([A-Za-z_0-9]+)['\"]\)", (path.parent / library).read_text()))
        names |= {"ELMO_C_FASTTEXT", "ELMO_C_TRAIN_DATA", "ELMO_C_VALIDATION_DATA", "ELMO_C_ARCHIVE", "ELMO_C_DIM"}
        variables = {**dict.fromkeys(names, "1"), **CONFIG_DEFAULTS, "ELMO_C_DIM": "16"}
        yield path.name, json.loads(_jsonnet.evaluate_file(str(path), ext_vars=variables))


def refused(check, config, *args, **kwargs) -> str:
    with pytest.raises(ConfigurationError) as error:
        check(config, "crafted/config.json", *args, **kwargs)
    return str(error.value)


def test_every_biLM_config_of_the_repository_is_allowed():
    """What `allennlp train` writes for each pretraining config (its config.json, and so its
    archive, model directory and task records) passes the biLM check."""
    checked = 0
    for name, config in list(_configs("training_config/*.jsonnet")) + list(_configs("tests/fixtures/configs/*.jsonnet")):
        if config["model"]["type"] == "elmo_c":
            check_bilm_config(config, name)
            checked += 1
    assert checked >= 20


def test_every_task_config_of_the_repository_is_allowed():
    configs = list(_configs("downstream_configs/*.jsonnet")) + list(_configs("tests/fixtures/configs/*.jsonnet"))
    tasks = [(name, config) for name, config in configs if config["model"]["type"] != "elmo_c"]
    for name, config in tasks:
        check_task_config(config, name)
    assert len(tasks) >= 10


def test_a_component_is_checked_against_its_registry_and_constructor():
    """No table: the type must be registered for the annotated base, the key a parameter of the
    constructor registered under it, the value of its annotated kind."""
    for edit, path, why in [
        (lambda c: c["model"]["contextualizer"].update(type="no_such_encoder"),
         "model.contextualizer.type", "is not a registered Seq2SeqEncoder"),
        (lambda c: c["model"]["contextualizer"].update(type="allennlp_elmo_c.nn.elmo_lstm.X"),
         "model.contextualizer.type", "is not a registered Seq2SeqEncoder"),
        (lambda c: c["model"]["contextualizer"].update(hidden_size=3),
         "model.contextualizer.hidden_size", "is not a parameter of ElmoLstm"),
        (lambda c: c["model"]["output_head"].update(loss=["cosine"]),
         "model.output_head.loss", "is not a string"),
        (lambda c: c["model"]["contextualizer"].update(cell_size=-5),
         "model.contextualizer.cell_size", "is not a size between 0"),
        (lambda c: c["model"]["contextualizer"].update(num_layers=65),
         "model.contextualizer.num_layers", "is not a size between 0 and 64"),
        (lambda c: c["dataset_reader"].update(tokenizer={"language": "en_core_web_sm"}),
         "dataset_reader.tokenizer.language", "names no Hugging Face or spaCy model"),
    ]:  # fmt: skip
        assert_refusal_names(check_bilm_config, BILM, edit, path, why)


def test_training_only_sections_are_kept_as_a_record():
    check_bilm_config(copy.deepcopy(BILM), "crafted/config.json")


@pytest.mark.parametrize(
    "edit, path, why",
    [
        (lambda c: c["dataset_reader"]["token_indexers"].update(x={"type": "pretrained_transformer", "model_name": "./m"}),
         "dataset_reader.token_indexers.x.model_name", "names no Hugging Face"),
        (lambda c: c["dataset_reader"]["token_indexers"]["tokens"].update(tokenizer_kwargs={}),
         "dataset_reader.token_indexers.tokens.tokenizer_kwargs", "`*_kwargs`"),
        (lambda c: c["trainer"].update(trust_remote_code=False),
         "trainer.trust_remote_code", "run code"),
        (lambda c: c["model"]["contextualizer"].update(backend="hf://models/x"),
         "model.contextualizer.backend", "is a URL"),
        (lambda c: c["model"]["text_field_embedder"]["token_embedders"]["tokens"].update(model_path="s3://bucket/x.bin"),
         "model.text_field_embedder.token_embedders.tokens.model_path", "is a URL"),
        (lambda c: c["model"]["text_field_embedder"]["token_embedders"]["tokens"].update(model_path="file:///etc/x.bin"),
         "model.text_field_embedder.token_embedders.tokens.model_path", "is a URL"),
        (lambda c: c["model"]["text_field_embedder"]["token_embedders"]["tokens"].update(model_path="a.zip!x.bin"),
         "model.text_field_embedder.token_embedders.tokens.model_path", "names an archive"),
        (lambda c: c["dataset_reader"]["token_indexers"]["tokens"].update(model_path="other/model.tar.gz"),
         "dataset_reader.token_indexers.tokens.model_path", "names an archive"),
        (lambda c: c.update(validation_dataset_reader={"type": "from_archive", "archive_file": "a"}),
         "validation_dataset_reader.type", "nested archive"),
        (lambda c: c["dataset_reader"]["token_indexers"]["tokens"].update(archive_file="a"),
         "dataset_reader.token_indexers.tokens.archive_file", "nested archive"),
        (lambda c: c["model"].update(contextualizer={"_pretrained": {"archive_file": "a", "module_path": "m"}}),
         "model.contextualizer._pretrained", "nested archive"),
        (lambda c: c["model"].update(initializer={"regexes": []}), "model.initializer", "initializer"),
        (lambda c: c["model"].update(regularizer={"regexes": []}), "model.regularizer", "training-only"),
        (lambda c: c["model"]["text_field_embedder"]["token_embedders"].update(
            words={"type": "embedding", "embedding_dim": 4, "pretrained_file": "/etc/glove.txt"}),
         "model.text_field_embedder.token_embedders.words.pretrained_file", "outside the model"),
        (lambda c: c["model"]["contextualizer"].update(cell_size={"type": "x"}),
         "model.contextualizer.cell_size", "is not a size"),
        (lambda c: c.update(evaluate={}), "evaluate", "is not a key"),
        (lambda c: c.update(vocabulary={"type": "os.system"}), "vocabulary.type", "is not a registered Vocabulary"),
        (lambda c: c.update(model="elmo_c"), "model", "is not a component"),
    ],
)  # fmt: skip
def test_each_refusal_names_the_key_and_why(edit, path, why):
    assert_refusal_names(check_bilm_config, BILM, edit, path, why)


def assert_refusal_names(check, base, edit, path, why) -> None:
    """`check` refuses a copy of `base` that `edit` changed, naming the key `path` and `why`."""
    config = copy.deepcopy(base)
    edit(config)
    message = refused(check, config)
    assert message.startswith(f"crafted/config.json: {path}: "), message
    assert why in message


def test_the_prefix_of_a_directory_config_and_its_nearest_neighbour_words():
    """In a model directory (written without the candidate list) it is refused; an archive's or
    record's is dropped before building."""
    message = refused(check_bilm_config, copy.deepcopy(BILM), prefix="bilm.", in_directory=True)
    assert "crafted/config.json: bilm.model.nearest_neighbour_words: names a word list outside" in message
    dropped = drop_training_only(copy.deepcopy(BILM))
    assert "nearest_neighbour_words" not in dropped["model"] and "nearest_neighbour_words" in BILM["model"]
    task = {"model": {"type": "crf_tagger", "nearest_neighbour_words": "x"}}
    assert drop_training_only(task) is task


def test_a_directory_config_may_not_ask_hugging_face_for_code():
    for config, key in [({"auto_map": {"AutoModel": "m.M"}}, "auto_map"),
                        ({"fasttext": {"trust_remote_code": True}}, "fasttext.trust_remote_code")]:  # fmt: skip
        assert f"crafted/config.json: {key}: " in refused(check_directory_config, config)
    check_directory_config({"model_type": "elmo_c", "transformers_version": "4.43.4", "bilm": {}}, "x")


TASK = {
    "dataset_reader": {"type": "conll2003", "token_indexers": {"elmo": {"type": "fasttext_subwords", "archive_file": "/m/bilm.tar.gz"}}},
    "model": {
        "type": "crf_tagger",
        "text_field_embedder": {"token_embedders": {
            "elmo": {"type": "elmo_c_token_embedder", "archive_file": "/models/bilm/model.tar.gz"},
            "glove": {"type": "embedding", "embedding_dim": 4, "pretrained_file": "https://example.org/glove.txt.gz"},
            "bert": {"type": "pretrained_transformer", "model_name": "bert-base-uncased"},
        }},
        "initializer": {"regexes": [[".*", {"type": "pretrained", "weights_file_path": "https://x/w.th"}]]},
        "regularizer": {"regexes": [[".*", {"type": "l2"}]]},
    },
    "train_data_path": "s3://bucket/train.txt",
}  # fmt: skip


def test_a_task_config_keeps_its_own_components():
    """Any model and component, the plugin's archive references, a published transformer, and
    what AllenNLP's loader removes (`pretrained_file`, `initializer`) are allowed."""
    check_task_config(copy.deepcopy(TASK), "task/config.json")
    check_received_config(copy.deepcopy(TASK), "task/config.json")


@pytest.mark.parametrize(
    "edit, path, why",
    [
        (lambda c: c["model"]["text_field_embedder"]["token_embedders"]["bert"].update(model_name=str(Path.cwd())),
         "model.text_field_embedder.token_embedders.bert.model_name", "local path"),
        (lambda c: c["model"]["text_field_embedder"]["token_embedders"]["bert"].update(model_name="./bert"),
         "model.text_field_embedder.token_embedders.bert.model_name", "local path"),
        (lambda c: c["model"]["text_field_embedder"]["token_embedders"]["bert"].update(transformer_kwargs={}),
         "model.text_field_embedder.token_embedders.bert.transformer_kwargs", "`*_kwargs`"),
        (lambda c: c["model"]["text_field_embedder"]["token_embedders"]["bert"].update(override_weights_file="w.th"),
         "model.text_field_embedder.token_embedders.bert.override_weights_file", "outside the model"),
        (lambda c: c.update(dataset_reader={"type": "text_classification_json", "tokenizer": {"type": "spacy", "language": "/home/x/pipeline"}}),
         "dataset_reader.tokenizer.language", "local path"),
        (lambda c: c["model"]["text_field_embedder"]["token_embedders"].update(x={"type": "embedding", "archive_file": "a"}),
         "model.text_field_embedder.token_embedders.x.archive_file", "nested archive"),
        (lambda c: c.update(model={"type": "from_archive", "archive_file": "a.tar.gz"}), "model.type", "nested archive"),
        (lambda c: c["model"]["text_field_embedder"]["token_embedders"]["elmo"].update(fasttext_path="http://x/o.bin"),
         "model.text_field_embedder.token_embedders.elmo.fasttext_path", "is a URL"),
        (lambda c: c["model"].update(label_namespace="other/labels.tar.gz"), "model.label_namespace", "names an archive"),
        (lambda c: c["vocabulary"].update(trust_remote_code=True) if "vocabulary" in c else c.update(
            vocabulary={"trust_remote_code": True}), "vocabulary.trust_remote_code", "run code"),
    ],
)  # fmt: skip
def test_each_refusal_of_a_task_config_names_the_key_and_why(edit, path, why):
    assert_refusal_names(check_received_config, TASK, edit, path, why)


@pytest.mark.parametrize(
    "key, value, why",
    [
        ("pretrained_file", "http://127.0.0.1:1/x", "outside the model"),
        ("initializer", {"regexes": [[".*", {"type": "pretrained", "weights_file_path": "/w.th"}]]}, "initializer"),
    ],
)  # fmt: skip
def test_keys_allennlp_removes_are_refused_in_a_list(key, value, why):
    """AllenNLP's loader does not remove `pretrained_file` / `initializer` inside a list (it
    would build them there); outside lists, at any depth, they are removed and not looked into."""
    config = copy.deepcopy(TASK)
    config["model"]["submodels"] = [{"type": "crf_tagger"}, {"type": "crf_tagger", key: value}]
    message = refused(check_received_config, config)
    assert message.startswith(f"crafted/config.json: model.submodels.1.{key}: "), message
    assert why in message and "only outside lists" in message
    config = copy.deepcopy(TASK)
    config["model"][key] = value
    check_received_config(config, "task/config.json")


# --- which configs are ELMo-C ones ----------------------------------------------------------


@pytest.mark.parametrize(
    "config, expected",
    [
        ({"model": {"type": "elmo_c"}}, True),
        ({"model": {"type": "crf_tagger", "text_field_embedder": {"token_embedders": {
            "elmo": {"type": "elmo_c_token_embedder"}}}}}, True),  # fmt: skip
        ({"dataset_reader": {"type": "elmo_c_from_archive"}}, True),  # the plugin's reader
        ({"model": {"type": "from_archive", "archive_file": "x.tar.gz"}}, False),  # AllenNLP's model
        ({"model": {"type": "basic_classifier", "text_field_embedder": {"token_embedders": {
            "tokens": {"type": "pretrained_transformer", "tokenizer_kwargs": {}}}}}}, False),  # fmt: skip
        ({"model": {"type": "basic_classifier"}, "trainer": {"checkpointer": {"type": "atomic"}}}, False),
        ({"model": {"type": "basic_classifier"}, "validation_dataset_reader": {"readers": [
            {"type": "lm_corpus"}]}}, True),  # fmt: skip
        ([{"model": {"type": "elmo_c"}}], False),
    ],
    ids=["bilm", "task", "plugin_reader", "allennlp_from_archive", "transformer", "trainer_only",
         "in_a_list", "not_an_object"],
)
def test_an_elmo_c_config_is_one_with_a_component_of_the_plugin(config, expected):
    from allennlp_elmo_c.received.received_config import is_elmo_c_config

    assert is_elmo_c_config(config) is expected


# --- a task archive's components: registered ones, and the keys that name what they load -------


@pytest.mark.parametrize(
    "edit, path, why",
    [
        (lambda c: c.update(dataset_reader={"type": "sequence_tagging", "cache_directory": "/x"}),
         "dataset_reader.cache_directory", "a file or program outside the model"),
        (lambda c: c["model"].update(encoder={"type": "no_such"}),
         "model.encoder.type", "'no_such' is not a registered Seq2SeqEncoder"),
        (lambda c: c["model"].update(encoder={"type": 3}), "model.encoder.type",
         "'3' is not a registered"),
        (lambda c: c.update(dataset_reader={"type": "srl", "bert_model_name": str(Path.cwd())}),
         "dataset_reader.bert_model_name", "local path"),
        (lambda c: c.update(model={"type": "srl", "srl_eval_path": "/home/x/run.pl"}),
         "model.srl_eval_path", "a file or program outside the model"),
        (lambda c: c.update(model={"type": "bcn", "elmo": {"options_file": "/home/x/o.json"}}),
         "model.elmo.options_file", "a file or program outside the model"),
        (lambda c: c.update(dataset_reader={"type": "text_classification_json", "tokenizer": {"language": "./pipeline"}}),
         "dataset_reader.tokenizer.language", "local path"),
        (lambda c: c.update(vocabulary={"type": "a.b"}), "vocabulary.type",
         "is not a registered Vocabulary"),
    ],
)  # fmt: skip
def test_a_task_config_builds_only_registered_components(edit, path, why):
    """Any other type is refused, and a key that names what a component loads keeps to its rule
    (a published model's name, or left out)."""
    assert_refusal_names(check_received_config, TASK, edit, path, why)


def test_the_names_a_task_component_loads_may_be_published_ones():
    config = copy.deepcopy(TASK)
    config["dataset_reader"] = {"type": "srl", "bert_model_name": "bert-base-uncased",
                                "token_indexers": {"t": {"type": "single_id"}}}  # fmt: skip
    config["model"]["encoder"] = {"type": "lstm", "input_size": 2, "hidden_size": 2}
    config["model"]["submodel"] = {"type": "bcn", "elmo": None}
    check_task_config(config, "task/config.json")


def test_every_registered_component_can_be_walked():
    """The walk reads every registered constructor's signature (no annotation it cannot read):
    a component with only its type is a refusal at most, never another error."""
    from allennlp.common.registrable import Registrable

    from allennlp_elmo_c.received.received_config import _Walk

    for base, names in list(Registrable._registry.items()):
        for name in names:
            try:
                _Walk("x", "", False).component({"type": name}, base, "c", frozenset())
            except ConfigurationError:
                pass
