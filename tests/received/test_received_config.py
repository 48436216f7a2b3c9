import copy
import inspect
import json
import re
from pathlib import Path

import _jsonnet
import pytest

from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader, TokenIndexer, Tokenizer
from allennlp.models import Model
from allennlp.modules import Seq2SeqEncoder, TextFieldEmbedder, TokenEmbedder

from allennlp_elmo_c.common.config_defaults import CONFIG_DEFAULTS
from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.received.received_config import (
    COMPONENTS,
    CONTINUOUS_LOSSES,
    DEFAULT_TYPES,
    check_bilm_config,
    check_directory_config,
    check_received_config,
    check_task_config,
    drop_training_only,
)
from allennlp_elmo_c.received.received_json import (
    MAX_DEPTH,
    parse_received_json,
    read_received_json,
)
from allennlp_elmo_c.modules.output_heads.losses import ContinuousLoss
from tests import PROJECT_ROOT

REGISTRIES = {
    "model": Model, "dataset_reader": DatasetReader, "tokenizer": Tokenizer,
    "token_indexer": TokenIndexer, "text_field_embedder": TextFieldEmbedder,
    "token_embedder": TokenEmbedder, "seq2seq_encoder": Seq2SeqEncoder, "output_head": OutputHead,
}  # fmt: skip
# The plugin's registered components that are never part of a biLM (they read a biLM, or an
# archive), so a received biLM may not name them.
NOT_IN_A_BILM = {("dataset_reader", "elmo_c_from_archive"), ("token_embedder", "elmo_c_token_embedder"),
                 ("token_indexer", "bpe_first_subword")}  # fmt: skip
# Parameters filled in when a component is built, never given in a config: the vocabulary, and
# what the model gives its output heads.
FILLED_IN = {"vocab", "kwargs"}
FILLED_IN_HEADS = {"input_dim", "target_dim", "text_field_embedder"}

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


def test_the_allowlist_names_registered_components_and_their_parameters():
    for place, types in COMPONENTS.items():
        registry = REGISTRIES[place]
        for kind, keys in types.items():
            cls, constructor = registry.resolve_class_name(kind)
            parameters = set(inspect.signature(getattr(cls, constructor) if constructor else cls).parameters)
            if "kwargs" in parameters:  # passed on to the parent class
                for parent in cls.__mro__[1:]:
                    if "__init__" in vars(parent):
                        parameters |= set(inspect.signature(parent).parameters)
            assert keys <= parameters, f"{place} {kind}: {sorted(keys - parameters)} are no parameters"
            filled_in = FILLED_IN | (FILLED_IN_HEADS if place == "output_head" else set())
            assert not keys & filled_in, f"{place} {kind}: {sorted(keys & filled_in)} are filled in"


def test_every_component_of_the_plugin_is_allowed_in_a_biLM_or_said_not_to_be():
    """A new component must be added to the allowlist (or to `NOT_IN_A_BILM`) to be loadable
    from a received biLM."""
    for place, registry in REGISTRIES.items():
        for kind in registry.list_available():
            cls, _ = registry.resolve_class_name(kind)
            if cls.__module__.startswith("allennlp_elmo_c"):
                assert kind in COMPONENTS[place] or (place, kind) in NOT_IN_A_BILM, (place, kind)


def test_the_allowed_losses_are_the_plugins_registered_ones():
    """A new `ContinuousLoss` of the plugin must be added to `CONTINUOUS_LOSSES` to be loadable
    from a received biLM."""
    plugin = {
        name for name in ContinuousLoss.list_available()
        if ContinuousLoss.by_name(name).__module__.startswith("allennlp_elmo_c")
    }
    assert CONTINUOUS_LOSSES == plugin
    for loss in sorted(CONTINUOUS_LOSSES):
        config = copy.deepcopy(BILM)
        config["model"]["output_head"]["loss"] = loss
        check_bilm_config(config, "crafted/config.json")


def test_a_component_without_type_is_the_default_of_its_place():
    for place, kind in DEFAULT_TYPES.items():
        assert REGISTRIES[place].default_implementation == kind
    config = copy.deepcopy(BILM)
    config["dataset_reader"]["tokenizer"] = {}
    message = refused(check_bilm_config, config)
    assert "dataset_reader.tokenizer: no type (AllenNLP's default is 'spacy')" in message


def test_training_only_sections_are_kept_as_a_record():
    check_bilm_config(copy.deepcopy(BILM), "crafted/config.json")


@pytest.mark.parametrize(
    "edit, path, why",
    [
        (lambda c: c["dataset_reader"]["token_indexers"].update(x={"type": "pretrained_transformer", "model_name": "m"}),
         "dataset_reader.token_indexers.x.type", "is not a token indexer a received biLM may build"),
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
         "model.contextualizer.cell_size", "a plain value"),
        (lambda c: c.update(evaluate={}), "evaluate", "is not a key"),
        (lambda c: c.update(vocabulary={"type": "from_pretrained_transformer"}), "vocabulary.type", "vocabulary type"),
        (lambda c: c.update(model="elmo_c"), "model", "is not a component"),
        (lambda c: c["model"]["output_head"].update(loss="my_loss"),
         "model.output_head.loss", "'my_loss' is not a loss a received biLM may use (cosine, "),
        (lambda c: c["model"]["output_head"].update(loss=["cosine"]),
         "model.output_head.loss", "is not a loss a received biLM may use"),
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
        (lambda c: c["dataset_reader"].update(tokenizer={"type": "spacy", "language": "/home/x/pipeline"}),
         "dataset_reader.tokenizer.language", "local path"),
        (lambda c: c["model"]["text_field_embedder"]["token_embedders"].update(x={"type": "embedding", "archive_file": "a"}),
         "model.text_field_embedder.token_embedders.x.archive_file", "nested archive"),
        (lambda c: c.update(model={"type": "from_archive", "archive_file": "a.tar.gz"}), "model.type", "nested archive"),
        (lambda c: c["model"]["text_field_embedder"]["token_embedders"]["elmo"].update(options_file="http://x/o.json"),
         "model.text_field_embedder.token_embedders.elmo.options_file", "is a URL"),
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
    config["model"]["encoder"] = {"type": "lstm", "inner": {key: value}}
    config["model"][key] = value
    check_received_config(config, "task/config.json")


def test_received_json_is_plain_capped_json(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"a": [1, 2]}')
    assert read_received_json(path, "x") == {"a": [1, 2]}
    for text, why in [
        ('local x = std.extVar("HOME"); {"a": x}', "is not plain JSON"),
        ('{"a": NaN}', "is not plain JSON"),
        ("[" * 5000 + "]" * 5000, f"nested deeper than {MAX_DEPTH} levels"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nested deeper than {MAX_DEPTH} levels"),
    ]:
        path.write_text(text)
        with pytest.raises(ConfigurationError, match=why):
            read_received_json(path, "x")
    parse_received_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "x")
    with pytest.raises(ConfigurationError, match="larger than 100 bytes"):
        parse_received_json(" " * 101, "x", max_bytes=100)
    with pytest.raises(ConfigurationError, match="unreadable"):
        read_received_json(tmp_path / "missing.json", "x")


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


# --- a task archive's components: an allowlist, and the keys that name what they load -----------


@pytest.mark.parametrize(
    "edit, path, why",
    [
        (lambda c: c.update(dataset_reader={"type": "vqav2", "image_dir": "/proc/self/root"}),
         "dataset_reader.type", "'vqav2' is not a component a received task model may build"),
        (lambda c: c["model"].update(encoder={"type": "compose", "encoders": []}),
         "model.encoder.type", "'compose' is not a component"),
        (lambda c: c["model"].update(encoder={"type": 3}), "model.encoder.type",
         "'3' is not a component"),
        (lambda c: c.update(dataset_reader={"type": "srl", "bert_model_name": str(Path.cwd())}),
         "dataset_reader.bert_model_name", "local path"),
        (lambda c: c.update(model={"type": "srl", "srl_eval_path": "/home/x/run.pl"}),
         "model.srl_eval_path", "a file or program outside the model"),
        (lambda c: c.update(model={"type": "bcn", "elmo": {"options_file": "/home/x/o.json"}}),
         "model.elmo", "a file or program outside the model"),
        (lambda c: c["dataset_reader"].update(tokenizer={"language": "./pipeline"}),
         "dataset_reader.tokenizer.language", "local path"),
        (lambda c: c.update(vocabulary={"type": "from_pretrained_transformer"}), "vocabulary.type",
         "not a vocabulary type"),
    ],
)  # fmt: skip
def test_a_task_config_builds_only_the_allowed_components(edit, path, why):
    """`TASK_COMPONENTS`: any other type is refused, and a key that names what a component loads
    keeps to its rule (a published model's name, or left out)."""
    assert_refusal_names(check_received_config, TASK, edit, path, why)


def test_the_names_a_task_component_loads_may_be_published_ones():
    config = copy.deepcopy(TASK)
    config["dataset_reader"] = {"type": "srl", "bert_model_name": "bert-base-uncased",
                                "token_indexers": {"t": {"type": "single_id"}}}  # fmt: skip
    config["model"]["encoder"] = {"type": "lstm", "input_size": 2, "hidden_size": 2}
    config["model"]["submodel"] = {"type": "bcn", "elmo": None}
    check_task_config(config, "task/config.json")


# Constructor parameters of the allowed task components whose names look like they load
# something but do not (or that `check_task_config` refuses for every component).
NOT_LOADING = {"vocab", "use_input_elmo", "use_integrator_output_elmo", "pretrained_file",
               "override_weights_file", "filed_name"}  # fmt: skip (a collator's field's name)


def test_every_task_component_is_registered_with_the_keys_it_loads_by():
    """Each name of `TASK_COMPONENTS` is registered, its listed keys are parameters of the
    class registered under it, and every parameter whose name looks like a path, a file or a
    model name is listed (or in `NOT_LOADING`)."""
    import allennlp_models.classification  # noqa: F401
    import allennlp_models.coref  # noqa: F401
    import allennlp_models.pair_classification  # noqa: F401
    import allennlp_models.structured_prediction  # noqa: F401
    import allennlp_models.tagging  # noqa: F401
    from allennlp.common.registrable import Registrable

    from allennlp_elmo_c.received.task_components import TASK_COMPONENTS

    looks_loading = re.compile(
        r"path|file|(?:^|_)dir(?:$|_|ector)|model_name|language|elmo|archive|vocab(?!_namespace)"
    )
    for kind, keys in TASK_COMPONENTS.items():
        classes = [
            entry for names in Registrable._registry.values()
            for name, entry in names.items() if name == kind
        ]  # fmt: skip
        assert classes, f"{kind} is not registered"
        parameters = set()
        for cls, constructor in classes:
            built_by = getattr(cls, constructor) if constructor else cls
            parameters |= set(inspect.signature(built_by).parameters)
        assert set(keys) <= parameters, kind
        unlisted = {p for p in parameters if looks_loading.search(p)} - set(keys) - NOT_LOADING
        assert not unlisted, f"{kind}: {sorted(unlisted)}"
