"""`convert-config`: stock-shaped ELMo task configs (tests/fixtures/configs/stock/) converted to the
tiny ELMo-C archive (16-d representations); every family is then trained one epoch at fixture size
(`allennlp train`), so the rewritten sizes are proven by building and training the models."""

import json
import math
import sys
import tarfile

import pytest

import allennlp_models.classification  # noqa: F401  (registers bcn, sst_tokens)
import allennlp_models.pair_classification  # noqa: F401  (registers esim, snli)
import allennlp_models.rc  # noqa: F401  (registers bidaf, squad)
import allennlp_models.structured_prediction  # noqa: F401  (registers srl, biaffine_parser)
import allennlp_models.tagging  # noqa: F401  (registers crf_tagger, conll2003)
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.commands.convert_config import (
    DIM_KEYS,
    convert_config,
    convert_config_file,
    load_stock_config,
)
from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.helpers import TINY_ELMO_C_DIM, run_plugin_command, train_config

STOCK = FIXTURES_ROOT / "configs" / "stock"
DATA = FIXTURES_ROOT / "data"
CONLL_2012 = str(DATA / "conll2012")
# The external variables of the stock fixtures: fixture data where a model is trained.
EXT_VARS = {
    "NER_TRAIN_DATA_PATH": str(DATA / "conll2003.txt"),
    "NER_TEST_DATA_PATH": str(DATA / "conll2003.txt"),
    "GLOVE_50D": str(DATA / "glove_tiny.50d.txt"),
    "SST_TRAIN": str(DATA / "sst5.txt"),
    "SST_DEV": str(DATA / "sst5.txt"),
    "GLOVE_840B_300D": str(DATA / "glove_tiny.300d.txt"),
    "SNLI_TRAIN": str(DATA / "snli.jsonl"),
    "SNLI_DEV": str(DATA / "snli.jsonl"),
    "SRL_TRAIN_DATA_PATH": CONLL_2012,
    "SRL_VALIDATION_DATA_PATH": CONLL_2012,
    "PTB_DEPENDENCIES_TRAIN": "train.conllu",
    "PTB_DEPENDENCIES_VAL": "dev.conllu",
    "PTB_TRAIN_PATH": "train.trees",
    "PTB_DEV_PATH": "dev.trees",
    "QUAC_TRAIN": "quac_train.json",
    "QUAC_DEV": "quac_dev.json",
    "BIDIRECTIONAL_LM_ARCHIVE_PATH": "https://allennlp.s3.amazonaws.com/models/transformer-elmo-2019.01.10.tar.gz",
}
D = TINY_ELMO_C_DIM  # 16
# Each fixture: the reader(s) and embedder key of ELMo now, and the input sizes that must change
# (path: (stock, converted)); every other size key stays as it was.
EXPECTED = {
    "ner_elmo": (["dataset_reader"], "elmo", {"model.encoder.input_size": (1202, 50 + 128 + D)}),
    "bcn_elmo": (
        ["dataset_reader", "validation_dataset_reader"],
        "elmo_c",
        {"model.pre_encode_feedforward.input_dim": (1324, 300 + D)},
    ),
    "esim_elmo": (["dataset_reader"], "elmo", {"model.encoder.input_size": (1024, D)}),
    # the attend layer reads the embeddings, the compare layer them and their attended summary
    "decomposable_attention_elmo": (["dataset_reader"], "elmo", {
        "model.attend_feedforward.input_dim": (1024, D), "model.compare_feedforward.input_dim": (2048, 2 * D),
    }),
    # ELMo + a char-CNN (100) + num_context_answers 2 x marker_embedding_dim 10
    "dialog_qa_elmo": (["dataset_reader"], "elmo", {"model.phrase_layer.input_size": (1144, D + 100 + 20)}),
    "bidaf_elmo": (["dataset_reader"], "elmo", {"model.phrase_layer.input_size": (1224, 100 + D + 100)}),
    "srl_elmo": (["dataset_reader"], "elmo", {"model.encoder.input_size": (1124, D + 100)}),
    "dependency_parser_elmo": (["dataset_reader"], "elmo", {"model.encoder.input_size": (1224, 100 + D + 100)}),
    # the transformer ELMo (bidirectional_lm_token_embedder, assumed 1024) + pos_tag_embedding 50
    "constituency_parser_transformer_elmo": (["dataset_reader"], "elmo", {"model.encoder.input_size": (1074, D + 50)}),
}


@pytest.fixture
def at_project_root(monkeypatch):
    """The fixture archive records its fastText path relative to the project root."""
    monkeypatch.chdir(PROJECT_ROOT)
    monkeypatch.delenv("ELMO_C_FASTTEXT", raising=False)


def stock(name: str) -> dict:
    return load_stock_config(str(STOCK / f"{name}.jsonnet"), EXT_VARS)


def size_keys(node, path="model"):
    """{path: value} of every size key (DIM_KEYS) under `node`."""
    found = {}
    if isinstance(node, dict):
        for key, value in node.items():
            child = f"{path}.{key}"
            if key in DIM_KEYS and isinstance(value, int):
                found[child] = value
            else:
                found.update(size_keys(value, child))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.update(size_keys(value, f"{path}[{index}]"))
    return found


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_stock_configs_convert(elmo_c_archive, name):
    readers, key, resized = EXPECTED[name]
    original = stock(name)
    conversion = convert_config(original, str(elmo_c_archive))
    config = conversion.config
    text = json.dumps(config)
    assert "elmo_characters" not in text and "elmo_token_embedder" not in text
    assert "options_file" not in text and "weight_file" not in text
    for reader in readers:
        assert config[reader]["token_indexers"][key] == {
            "type": "fasttext_subwords",
            "archive_file": str(elmo_c_archive),
        }
    embedder = config["model"]["text_field_embedder"]["token_embedders"][key]
    assert embedder["type"] == "elmo_c_token_embedder"
    assert embedder["archive_file"] == str(elmo_c_archive)
    assert embedder["expected_output_dim"] == D
    assert embedder["do_layer_norm"] is False
    # The sizes: the listed ones changed (and are reported), every other one is as it was.
    before, after = size_keys(original["model"]), size_keys(config["model"])
    changed = {path: (before.get(path), after[path]) for path in after
               if before.get(path) != after[path] and ".text_field_embedder." not in path}  # fmt: skip
    assert changed == {path: sizes for path, sizes in resized.items()}
    reported = {c.path: (c.old, c.new) for c in conversion.changes if c.path.split(".")[-1] in DIM_KEYS}
    assert reported == resized
    # The checkpointer is the atomic one (reported), with the stock settings, the trainer the
    # plugin's with its run callback, the bundled .bin archived; the rest is untouched.
    trainer = original["trainer"]
    checkpointer = trainer.get("checkpointer", {})
    assert config["trainer"] == {**trainer, "checkpointer": {**checkpointer, "type": "atomic"},
                                 "type": "elmo_c", "callbacks": [
                                     *trainer.get("callbacks", []), {"type": "elmo_c_run"}]}  # fmt: skip
    assert config["include_in_archive"] == ["fasttext/*.bin"]
    assert [c.new for c in conversion.changes if c.path == "trainer.checkpointer.type"] == ["atomic"]
    for section in ("data_loader", "train_data_path", "validation_data_path"):
        assert config[section] == original[section]


def test_carried_and_dropped_settings(elmo_c_archive):
    config = stock("srl_elmo")
    config["model"]["text_field_embedder"]["token_embedders"]["elmo"].update(
        requires_grad=True, scalar_mix_parameters=[0.0, 1.0, 0.0], vocab_to_cache=["a"]
    )
    config["dataset_reader"]["token_indexers"]["elmo"]["token_min_padding_length"] = 3
    conversion = convert_config(config, str(elmo_c_archive))
    embedder = conversion.config["model"]["text_field_embedder"]["token_embedders"]["elmo"]
    assert embedder["dropout"] == 0.1 and embedder["requires_grad"] is True
    assert embedder["scalar_mix_parameters"] == [0.0, 1.0, 0.0]
    assert "vocab_to_cache" not in embedder
    assert conversion.config["dataset_reader"]["token_indexers"]["elmo"]["token_min_padding_length"] == 3
    note = next(c.note for c in conversion.changes if c.path.endswith("token_embedders.elmo"))
    assert "vocab_to_cache" in note and "options_file (replaced by archive_file)" in note


def test_bcn_elmo_moves_into_the_text_field_embedder(elmo_c_archive):
    model = convert_config(stock("bcn_elmo"), str(elmo_c_archive)).config["model"]
    assert "elmo" not in model and "use_input_elmo" not in model
    assert "use_integrator_output_elmo" not in model
    assert sorted(model["text_field_embedder"]["token_embedders"]) == ["elmo_c", "tokens"]
    assert model["integrator"]["input_size"] == 1800 and model["output_layer"]["input_dim"] == 2400


def test_size_from_a_local_options_file_and_projection_dim(elmo_c_archive):
    # tests/fixtures/elmo/options.json: a 2 x 16 = 32-d ELMo.
    config = stock("esim_elmo")
    elmo = config["model"]["text_field_embedder"]["token_embedders"]["elmo"]
    elmo["options_file"] = str(FIXTURES_ROOT / "elmo" / "options.json")
    config["model"]["encoder"]["input_size"] = 32
    converted = convert_config(config, str(elmo_c_archive)).config
    assert converted["model"]["encoder"]["input_size"] == D
    # With projection_dim both embedders output that size: nothing to resize.
    elmo["projection_dim"] = 100
    config["model"]["encoder"]["input_size"] = 100
    conversion = convert_config(config, str(elmo_c_archive))
    assert conversion.config["model"]["encoder"]["input_size"] == 100
    assert conversion.config["model"]["text_field_embedder"]["token_embedders"]["elmo"]["projection_dim"] == 100
    assert not [c for c in conversion.changes if c.path.endswith("input_size")]


def test_fasttext_path_goes_to_the_indexer_and_embedder(elmo_c_archive):
    bin_path = str(FIXTURES_ROOT / "fasttext" / "tiny.bin")
    config = convert_config(stock("esim_elmo"), str(elmo_c_archive), fasttext_path=bin_path).config
    assert config["dataset_reader"]["token_indexers"]["elmo"] == {"type": "fasttext_subwords", "model_path": bin_path}
    assert config["model"]["text_field_embedder"]["token_embedders"]["elmo"]["fasttext_path"] == bin_path


LM_EMBEDDER_PATH = "model.text_field_embedder.token_embedders.elmo"


def test_language_model_embedder_settings(elmo_c_archive):
    config = stock("constituency_parser_transformer_elmo")
    config["model"]["text_field_embedder"]["token_embedders"]["elmo"].update(requires_grad=True, vocab_namespace="x")
    conversion = convert_config(config, str(elmo_c_archive))
    embedder = conversion.config["model"]["text_field_embedder"]["token_embedders"]["elmo"]
    assert embedder["type"] == "elmo_c_token_embedder" and embedder["archive_file"] == str(elmo_c_archive)
    assert embedder["dropout"] == 0.2 and embedder["requires_grad"] is True
    for key in ("bos_eos_tokens", "remove_bos_eos", "vocab_namespace"):
        assert key not in embedder
    note = next(c.note for c in conversion.changes if c.path == LM_EMBEDDER_PATH)
    for key in ("archive_file", "bos_eos_tokens", "remove_bos_eos", "vocab_namespace"):
        assert f"{key} (" in note
    assert [n for n in conversion.notes if "assumed 1024" in n and "--stock-dim" in n]
    # The alias converts the same way.
    config["model"]["text_field_embedder"]["token_embedders"]["elmo"]["type"] = "language_model_token_embedder"
    alias = convert_config(config, str(elmo_c_archive))
    assert alias.config["model"] == conversion.config["model"]


def test_stock_dim_states_the_size(elmo_c_archive):
    config = stock("constituency_parser_transformer_elmo")
    config["model"]["encoder"]["input_size"] = 512 + 50
    conversion = convert_config(config, str(elmo_c_archive), stock_dim=512)
    assert conversion.config["model"]["encoder"]["input_size"] == D + 50
    assert not [n for n in conversion.notes if "assumed" in n]
    # For an elmo_token_embedder whose options file cannot be read nor its size told from its name.
    esim = stock("esim_elmo")
    esim["model"]["text_field_embedder"]["token_embedders"]["elmo"]["options_file"] = "https://example.org/options.json"
    esim["model"]["encoder"]["input_size"] = 256
    assert convert_config(esim, str(elmo_c_archive), stock_dim=256).config["model"]["encoder"]["input_size"] == D
    assert convert_config(esim, str(elmo_c_archive)).config["model"]["encoder"]["input_size"] == 256  # 1024 assumed
    with pytest.raises(ConfigurationError, match="--stock-dim must be positive"):
        convert_config(esim, str(elmo_c_archive), stock_dim=0)


def _lm_archive(path, contextualizer):
    config = path.parent / "config.json"
    config.write_text(json.dumps({"model": {"type": "language_model", "bidirectional": True,
                                            "contextualizer": contextualizer}}))  # fmt: skip
    with tarfile.open(path, "w:gz") as archive:
        archive.add(config, arcname="config.json")
    return str(path)


def test_size_from_a_local_language_model_archive(elmo_c_archive, tmp_path):
    config = stock("constituency_parser_transformer_elmo")
    embedder = config["model"]["text_field_embedder"]["token_embedders"]["elmo"]
    transformer = {"type": "bidirectional_language_model_transformer", "input_dim": 64, "hidden_dim": 256, "num_layers": 2}
    embedder["archive_file"] = _lm_archive(tmp_path / "transformer.tar.gz", transformer)
    config["model"]["encoder"]["input_size"] = 128 + 50
    conversion = convert_config(config, str(elmo_c_archive))
    assert conversion.config["model"]["encoder"]["input_size"] == D + 50 and not conversion.notes
    with pytest.raises(ConfigurationError, match="--stock-dim 1024, but the language model archive .* says 128"):
        convert_config(config, str(elmo_c_archive), stock_dim=1024)
    lstm = {"type": "lstm", "input_size": 32, "hidden_size": 40, "bidirectional": True}
    embedder["archive_file"] = _lm_archive(tmp_path / "lstm.tar.gz", lstm)
    config["model"]["encoder"]["input_size"] = 80 + 50
    assert convert_config(config, str(elmo_c_archive)).config["model"]["encoder"]["input_size"] == D + 50
    embedder["archive_file"] = _lm_archive(tmp_path / "other.tar.gz", {"type": "some_encoder", "size": 7})
    with pytest.raises(ConfigurationError, match="'some_encoder' contextualizer.*--stock-dim"):
        convert_config(config, str(elmo_c_archive))
    config["model"]["encoder"]["input_size"] = 7 + 50
    assert convert_config(config, str(elmo_c_archive), stock_dim=7).config["model"]["encoder"]["input_size"] == D + 50
    (tmp_path / "broken.tar.gz").write_bytes(b"not an archive")
    embedder["archive_file"] = str(tmp_path / "broken.tar.gz")
    with pytest.raises(ConfigurationError, match="cannot read the language model archive"):
        convert_config(config, str(elmo_c_archive))


# --- the converted models build and train --------------------------------------------------------

SMALL = {"trainer.num_epochs": 1, "trainer.cuda_device": -1}

CONLLU = """1	The	the	DET	DT	_	2	det	_	_
2	dog	dog	NOUN	NN	_	3	nsubj	_	_
3	barks	bark	VERB	VBZ	_	0	root	_	_

1	Cats	cat	NOUN	NNS	_	2	nsubj	_	_
2	sleep	sleep	VERB	VBP	_	0	root	_	_

"""
SQUAD = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{
    "context": "The dog barks at the cat in the garden.",
    "qas": [{"id": "q1", "question": "What does the dog bark at?",
             "answers": [{"text": "the cat", "answer_start": 17}]}],
}]}]}  # fmt: skip
PTB = """(S (NP (DT The) (NN dog)) (VP (VBZ barks) (PP (IN at) (NP (DT the) (NN cat)))) (. .))
(S (NP (NNS Cats)) (VP (VBP sleep)))
"""

# The families without a stock-sized training fixture: each shrinks the converted model (no GloVe
# download, small encoders) and writes its fixture-size data in `directory`, returning the path.


def _srl_data(config, directory):
    config["model"]["encoder"].update(hidden_size=8, num_layers=2)
    return CONLL_2012


def _parser_data(config, directory):
    del config["model"]["text_field_embedder"]["token_embedders"]["tokens"]["pretrained_file"]
    config["model"]["encoder"].update(hidden_size=8, num_layers=1)
    config["model"].update(arc_representation_dim=8, tag_representation_dim=8)
    (directory / "ud.conllu").write_text(CONLLU)
    return str(directory / "ud.conllu")


def _constituency_data(config, directory):
    model = config["model"]
    model["encoder"].update(hidden_size=8, num_layers=1, dropout=0.0)  # dropout needs 2+ layers
    model["span_extractor"]["input_dim"] = 16
    model["feedforward"].update(input_dim=16, hidden_dims=8)
    # EVALB is C source shipped uncompiled in allennlp/tools; its scorer would run `make` inside
    # the installed package. Without it the parser reports tag_accuracy (and the loss).
    model["evalb_directory_path"] = None
    config["trainer"]["validation_metric"] = "+tag_accuracy"
    (directory / "ptb.trees").write_text(PTB)
    return str(directory / "ptb.trees")


def _bidaf_data(config, directory):
    del config["model"]["text_field_embedder"]["token_embedders"]["tokens"]["pretrained_file"]
    config["dataset_reader"]["tokenizer"] = {"type": "spacy", "language": "blank:en"}
    (directory / "squad.json").write_text(json.dumps(SQUAD))
    return str(directory / "squad.json")


# name, data (None: the stock external variables already name fixture data), batch size, metric
TRAINED = [
    ("ner_elmo", None, {"data_loader.batch_size": 4}, "best_validation_f1-measure-overall"),
    ("bcn_elmo", None, {"data_loader.batch_sampler.batch_size": 4}, "best_validation_accuracy"),
    ("esim_elmo", None, {"data_loader.batch_sampler.batch_size": 2}, "best_validation_accuracy"),
    ("decomposable_attention_elmo", None, {"data_loader.batch_sampler.batch_size": 2}, "best_validation_accuracy"),
    ("srl_elmo", _srl_data, {"data_loader.batch_sampler.batch_size": 4}, "best_validation_f1-measure-overall"),
    ("dependency_parser_elmo", _parser_data, {"data_loader.batch_sampler.batch_size": 2}, "best_validation_LAS"),
    ("bidaf_elmo", _bidaf_data, {"data_loader.batch_sampler.batch_size": 2}, "best_validation_em"),
    ("constituency_parser_transformer_elmo", _constituency_data, {"data_loader.batch_sampler.batch_size": 2},
     "best_validation_tag_accuracy"),
]  # fmt: skip


@pytest.mark.parametrize("name, data, batch_size, metric", TRAINED, ids=[case[0] for case in TRAINED])
def test_converted_config_trains_one_epoch(
    elmo_c_archive, at_project_root, monkeypatch, tmp_path, name, data, batch_size, metric
):
    """Each family: the stock config converted (convert_config_file), then `allennlp train` for one
    epoch on fixture data. Where there is no training fixture of the stock shape, `data` shrinks
    the converted config and points it at a few instances written here."""
    monkeypatch.setenv("NLTK_DATA", str(tmp_path))  # nltk's corpus readers (ptb_trees) read only under it
    output = tmp_path / f"{name}.json"
    convert_config_file(str(STOCK / f"{name}.jsonnet"), str(elmo_c_archive), str(output), EXT_VARS)
    if data is not None:
        config = json.loads(output.read_text())
        config["train_data_path"] = config["validation_data_path"] = data(config, tmp_path)
        output.write_text(json.dumps(config))
    metrics = train_config(output, tmp_path / "run", json.dumps({**SMALL, **batch_size}))
    assert (tmp_path / "run" / "model.tar.gz").is_file()
    assert metrics["epoch"] == 0 and math.isfinite(metrics["training_loss"])
    assert math.isfinite(metrics["validation_loss"]) and 0.0 <= metrics[metric] <= 1.0


# --- the command line ----------------------------------------------------------------------------


def test_command_line(elmo_c_archive, tmp_path):
    output = tmp_path / "esim.json"
    variables = [f"--ext-var={name}={EXT_VARS[name]}" for name in ("SNLI_TRAIN", "SNLI_DEV")]
    command = [sys.executable, "-m", "allennlp_elmo_c", "convert-config",
               str(STOCK / "esim_elmo.jsonnet"), str(elmo_c_archive), str(output), *variables]  # fmt: skip
    result = run_plugin_command(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "model.encoder.input_size: 1024 -> 16" in result.stdout
    assert "model.text_field_embedder.token_embedders.elmo: {type: elmo_token_embedder, ...} -> " \
        "{type: elmo_c_token_embedder, ...}" in result.stdout
    assert f"wrote {output}" in result.stdout
    config = json.loads(output.read_text())
    assert config["model"]["encoder"]["input_size"] == 16
    assert config["train_data_path"] == EXT_VARS["SNLI_TRAIN"]


def test_command_line_language_model_embedder(elmo_c_archive, tmp_path):
    output = tmp_path / "parser.json"
    variables = [f"--ext-var={name}={EXT_VARS[name]}"
                 for name in ("PTB_TRAIN_PATH", "PTB_DEV_PATH", "BIDIRECTIONAL_LM_ARCHIVE_PATH")]  # fmt: skip
    command = [sys.executable, "-m", "allennlp_elmo_c", "convert-config",
               str(STOCK / "constituency_parser_transformer_elmo.jsonnet"), str(elmo_c_archive), str(output),
               *variables]  # fmt: skip
    result = run_plugin_command(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "model.encoder.input_size: 1074 -> 66" in result.stdout
    assert "dropped archive_file (" in result.stdout and "bos_eos_tokens (" in result.stdout
    assert "remove_bos_eos (" in result.stdout and "assumed 1024" in result.stdout
    result = run_plugin_command([*command, "--stock-dim", "1024"], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "model.encoder.input_size: 1074 -> 66" in result.stdout and "assumed" not in result.stdout


# --- what cannot be converted --------------------------------------------------------------------


def test_unset_external_variables_are_all_named(monkeypatch):
    for name in ("NER_TRAIN_DATA_PATH", "NER_TEST_DATA_PATH", "GLOVE_50D"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigurationError, match="GLOVE_50D, NER_TEST_DATA_PATH, NER_TRAIN_DATA_PATH .*--ext-var"):
        load_stock_config(str(STOCK / "ner_elmo.jsonnet"))


def test_unreadable_configs(tmp_path):
    with pytest.raises(ConfigurationError, match="does not exist"):
        load_stock_config(str(tmp_path / "missing.jsonnet"))
    broken = tmp_path / "broken.jsonnet"
    broken.write_text("{ model: { type: 'esim', ")
    with pytest.raises(ConfigurationError, match="does not evaluate"):
        load_stock_config(str(broken))


def test_config_without_elmo(elmo_c_archive):
    config = stock("ner_elmo")
    del config["model"]["text_field_embedder"]["token_embedders"]["elmo"]
    with pytest.raises(ConfigurationError, match="uses no ELMo.*elmo_characters indexers, at dataset_reader"):
        convert_config(config, str(elmo_c_archive))
    del config["dataset_reader"]["token_indexers"]["elmo"]
    with pytest.raises(ConfigurationError, match="uses no ELMo"):
        convert_config(config, str(elmo_c_archive))


def test_missing_and_corrupt_archives(tmp_path):
    with pytest.raises(ConfigurationError, match="does not exist"):
        convert_config(stock("esim_elmo"), str(tmp_path / "model.tar.gz"))
    corrupt = tmp_path / "corrupt.tar.gz"
    corrupt.write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(ConfigurationError, match="not a readable model.tar.gz"):
        convert_config(stock("esim_elmo"), str(corrupt))


def test_elmo_shapes_that_cannot_be_converted(elmo_c_archive):
    archive = str(elmo_c_archive)
    bcn = stock("bcn_elmo")
    bcn["model"]["use_integrator_output_elmo"] = True
    with pytest.raises(ConfigurationError, match="use_integrator_output_elmo"):
        convert_config(bcn, archive)
    multilang = stock("esim_elmo")
    multilang["model"]["text_field_embedder"]["token_embedders"]["elmo"]["type"] = "elmo_token_embedder_multilang"
    with pytest.raises(ConfigurationError, match="cannot convert model.text_field_embedder.token_embedders.elmo"):
        convert_config(multilang, archive)
    transformer = stock("ner_elmo")
    transformer["model"]["text_field_embedder"]["token_embedders"]["tokens"] = {
        "type": "pretrained_transformer_mismatched", "model_name": "bert-base-cased",
    }  # fmt: skip
    with pytest.raises(ConfigurationError, match="pretrained_transformer_mismatched token embedder"):
        convert_config(transformer, archive)
    no_indexer = stock("srl_elmo")
    no_indexer["dataset_reader"]["token_indexers"] = {"tokens": {"type": "single_id"}}
    with pytest.raises(ConfigurationError, match="no reader has a token indexer 'elmo'"):
        convert_config(no_indexer, archive)
    elsewhere = stock("esim_elmo")
    elsewhere["model"]["text_field_embedder"]["token_embedders"]["elmo"]["type"] = "embedding"
    elsewhere["model"]["some_module"] = {"elmo": {"type": "elmo_token_embedder"}}
    with pytest.raises(ConfigurationError, match="not in a text field embedder"):
        convert_config(elsewhere, archive)


def test_a_size_it_cannot_decide_is_named(elmo_c_archive):
    config = stock("ner_elmo")
    # A layer of ELMo's size or more that is neither the embedder's size, a known sum or a
    # multiple of it, nor a multiple of another layer's output.
    config["model"]["feedforward"] = {"input_dim": 1500, "num_layers": 1, "hidden_dims": 7, "activations": "linear"}
    conversion = convert_config(config, str(elmo_c_archive))
    assert conversion.config["model"]["feedforward"]["input_dim"] == 1500
    assert any(note.startswith("undecided: model.feedforward.input_dim = 1500") for note in conversion.notes)


def test_a_model_directory_converts_as_its_archive(model_directory):
    directory = str(model_directory[0])
    config = convert_config(stock("esim_elmo"), directory).config
    assert config["dataset_reader"]["token_indexers"]["elmo"]["archive_file"] == directory
    assert config["model"]["text_field_embedder"]["token_embedders"]["elmo"]["archive_file"] == directory
    assert config["model"]["encoder"]["input_size"] == D
