"""
The plugin is a guest in AllenNLP: an ordinary AllenNLP model with nothing of ELMo-C in it trains,
evaluates and predicts the same with the plugin imported as without it. Two classifiers are
trained with plain `allennlp` (a subprocess in a directory without `.allennlp_plugins`, no
`--include-package`: the plugin is never imported) and with `--include-package allennlp_elmo_c`:
a `basic_classifier` over a tiny local BERT (created here, no network) whose config passes
AllenNLP's documented `tokenizer_kwargs: {"do_lower_case": true}`, and a plain `embedding` +
`boe` classifier. Each process runs all its commands in turn (`allennlp.commands.main`), so there
are two subprocesses in all; the one with the plugin also evaluates and predicts with the
archives the plain one trained.
"""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from tests.helpers import offline_environment

WORDS = "a good bad film movie plot acting was great awful the fine dull".split()
SENTENCES = [
    ("A good film", "pos"), ("The plot was great", "pos"), ("Fine acting", "pos"),
    ("A great movie", "pos"), ("A bad film", "neg"), ("The plot was dull", "neg"),
    ("Awful acting", "neg"), ("A dull movie", "neg"),
]  # fmt: skip
MODELS = ("transformer", "embedding")


def write_tiny_bert(directory: Path) -> Path:
    """A BERT of a few hundred parameters with its lower-cased word-piece vocabulary, saved as
    `save_pretrained` saves one (what `pretrained_transformer` loads by path)."""
    from transformers import BertConfig, BertModel, BertTokenizer

    directory.mkdir(parents=True)
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS) + "\n")
    config = BertConfig(vocab_size=5 + len(WORDS), hidden_size=8, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=16, max_position_embeddings=32)  # fmt: skip
    BertModel(config).save_pretrained(str(directory))
    BertTokenizer(str(vocab), do_lower_case=False).save_pretrained(str(directory))
    return directory


def configs(bert: Path, data: Path) -> Dict[str, Dict[str, Any]]:
    """The two classifiers' configs, plain AllenNLP components only."""
    transformer = {"model_name": str(bert), "tokenizer_kwargs": {"do_lower_case": True}}
    common = {
        "train_data_path": str(data), "validation_data_path": str(data),
        "data_loader": {"batch_size": 4, "shuffle": False},
        "trainer": {"num_epochs": 2, "optimizer": {"type": "adam", "lr": 0.01},
                    "validation_metric": "+accuracy", "cuda_device": -1},
    }  # fmt: skip
    return {
        "transformer": {
            **common,
            "dataset_reader": {
                "type": "text_classification_json",
                "tokenizer": {"type": "pretrained_transformer", **transformer},
                "token_indexers": {"tokens": {"type": "pretrained_transformer", **transformer}},
            },
            "model": {
                "type": "basic_classifier",
                "text_field_embedder": {"token_embedders": {"tokens": {
                    "type": "pretrained_transformer", **transformer}}},
                "seq2vec_encoder": {"type": "cls_pooler", "embedding_dim": 8},
                "namespace": "tags",
            },
        },
        "embedding": {
            **common,
            "dataset_reader": {
                "type": "text_classification_json",
                "tokenizer": {"type": "whitespace"},
            },
            "model": {
                "type": "basic_classifier",
                "text_field_embedder": {
                    "token_embedders": {"tokens": {"type": "embedding", "embedding_dim": 4}}
                },
                "seq2vec_encoder": {"type": "boe", "embedding_dim": 4},
            },
        },
    }  # fmt: skip


# Runs each command line with `allennlp.commands.main`, in this one process; then records whether
# the plugin was imported.
DRIVER = """
import json, sys
from allennlp.commands import main
for argv in json.loads(sys.argv[1]):
    sys.argv = ["allennlp"] + argv
    main(prog="allennlp")
print("PLUGIN_IMPORTED", "allennlp_elmo_c" in sys.modules)
"""


def commands(work: Path, name: str, trained_by: str, plugin: bool):
    """`train` (unless `trained_by` is another mode), `evaluate` and `predict` of model `name`."""
    mode = "plugin" if plugin else "plain"
    include = ["--include-package", "allennlp_elmo_c"] if plugin else []
    run = work / trained_by / name
    lines = []
    if trained_by == mode:
        lines.append(["train", str(work / f"{name}.json"), "-s", str(run)] + include)
    out = work / mode / f"{name}-from-{trained_by}"
    lines.append(["evaluate", str(run / "model.tar.gz"), str(work / "data.jsonl"),
                  "--output-file", f"{out}.metrics.json"] + include)  # fmt: skip
    lines.append(["predict", str(run / "model.tar.gz"), str(work / "inputs.jsonl"), "--silent",
                  "--predictor", "text_classifier", "--output-file", f"{out}.predictions.jsonl"]
                 + include)  # fmt: skip
    return lines


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """The work directory after both processes ran (no `.allennlp_plugins` anywhere above it)."""
    work = tmp_path_factory.mktemp("guest")
    bert = write_tiny_bert(work / "tiny-bert")
    with open(work / "data.jsonl", "w") as data:
        for text, label in SENTENCES:
            data.write(json.dumps({"text": text, "label": label}) + "\n")
    with open(work / "inputs.jsonl", "w") as inputs:
        for text, _ in SENTENCES:
            inputs.write(json.dumps({"sentence": text}) + "\n")
    for name, config in configs(bert, work / "data.jsonl").items():
        (work / f"{name}.json").write_text(json.dumps(config))
    environment = offline_environment(work / "home")
    # PYTHONHASHSEED: AllenNLP writes non_padded_namespaces.txt from a set.
    environment.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONHASHSEED="0")
    for mode in ("plain", "plugin"):
        (work / mode).mkdir()
        lines = [line for name in MODELS for line in commands(work, name, mode, mode == "plugin")]
        if mode == "plugin":
            lines += [line for name in MODELS for line in commands(work, name, "plain", True)]
        done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(lines)], cwd=work,
                              env=environment, capture_output=True, text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"PLUGIN_IMPORTED {mode == 'plugin'}" in done.stdout, done.stdout[-500:]
    return work


def _metrics(path: Path) -> Dict[str, Any]:
    """The metrics of a run or an evaluation, without its timings and memory use."""
    metrics = json.loads(path.read_text())
    return {key: value for key, value in metrics.items()
            if not any(word in key for word in ("duration", "memory", "start"))}  # fmt: skip


def _labels(run: Path) -> str:
    return (run / "vocabulary" / "labels.txt").read_text()


@pytest.mark.parametrize("name", MODELS)
def test_training_is_the_same_with_and_without_the_plugin(runs, name):
    plain, plugin = runs / "plain" / name, runs / "plugin" / name
    assert _metrics(plugin / "metrics.json") == _metrics(plain / "metrics.json")
    assert _labels(plugin) == _labels(plain) and set(_labels(plain).split()) == {"pos", "neg"}
    names = {path.name for path in plain.iterdir()}
    assert {path.name for path in plugin.iterdir()} == names  # no file of the plugin's added


def _archive_members(archive: Path) -> Dict[str, bytes]:
    import tarfile

    with tarfile.open(archive) as tar:
        return {member.name: tar.extractfile(member).read() for member in tar.getmembers()
                if member.isfile()}  # fmt: skip


def _gzip_name(archive: Path) -> bytes:
    """The file name in the gzip header (FNAME, RFC 1952), as AllenNLP's tarfile writes it."""
    header = archive.read_bytes()[:512]
    assert header[:2] == b"\x1f\x8b" and header[3] & 0x08
    return header[10:header.index(b"\0", 10)]


@pytest.mark.parametrize("name", MODELS)
def test_a_runs_files_are_allennlps_with_and_without_the_plugin(runs, name):
    """The vocabulary (its `.lock` included), the weights and the archive's members, byte for
    byte; the archive's gzip header names `model.tar`, as AllenNLP's does."""
    plain, plugin = runs / "plain" / name, runs / "plugin" / name
    for path in sorted((plain / "vocabulary").iterdir()):
        assert (plugin / "vocabulary" / path.name).read_bytes() == path.read_bytes(), path.name
    assert {p.name for p in (plugin / "vocabulary").iterdir()} == {
        p.name for p in (plain / "vocabulary").iterdir()} >= {".lock", "labels.txt"}  # fmt: skip
    plain_members = _archive_members(plain / "model.tar.gz")
    plugin_members = _archive_members(plugin / "model.tar.gz")
    assert set(plugin_members) == set(plain_members)
    for member, data in plain_members.items():
        assert plugin_members[member] == data, member
    assert _gzip_name(plugin / "model.tar.gz") == _gzip_name(plain / "model.tar.gz")
    assert _gzip_name(plain / "model.tar.gz") == b"model.tar"  # gzip drops the `.gz`


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("trained_by", ["plain", "plugin"])
def test_evaluate_and_predict_are_the_same_with_and_without_the_plugin(runs, name, trained_by):
    """Also with the plugin on an archive trained without it (whose tokenizer_kwargs and local
    transformer are AllenNLP's business, not a received-model check's)."""
    plain = runs / "plain" / f"{name}-from-plain"
    plugin = runs / "plugin" / f"{name}-from-{trained_by}"
    assert _metrics(Path(f"{plugin}.metrics.json")) == _metrics(Path(f"{plain}.metrics.json"))
    predicted = [
        json.loads(line) for line in Path(f"{plugin}.predictions.jsonl").read_text().splitlines()
    ]
    expected = [
        json.loads(line) for line in Path(f"{plain}.predictions.jsonl").read_text().splitlines()
    ]
    assert predicted == expected and len(expected) == len(SENTENCES)
    assert {prediction["label"] for prediction in expected} <= {"pos", "neg"}
