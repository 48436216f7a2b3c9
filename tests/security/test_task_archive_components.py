"""
A received ELMo-C task archive builds only registered components with their constructors' keys,
and a key that names what a component loads keeps to its rule (`received_config`). Crafted task archives, each through `allennlp predict`, `allennlp evaluate` and
`load_archive`: an allennlp-models reader that acts on local paths (`vqav2`, whose `image_dir`
at `/proc/self/root` globs the whole file system and whose `answer_vocab` at a directory of the
receiver's creates a `.lock` there and reads it), the `srl` reader's `bert_model_name` naming a
local directory (which `from_pretrained` would load), and the `srl` model's `srl_eval_path` (a
Perl script its metric runs). Each is one line naming the key, and the receiver's files are
untouched.
"""

import json
import re
from pathlib import Path
from typing import Dict, Tuple

import pytest

from tests.security.received_models import (
    craft_archive,
    refusal,
    task_archive_doors,
    train_task_archive,
)


@pytest.fixture(scope="module")
def task_archive(tmp_path_factory) -> Path:
    return train_task_archive(tmp_path_factory.mktemp("task"))


def _receiver_files(home: Path) -> Dict[str, Tuple[int, int]]:
    """The receiver's directory: every file's `(size, mtime_ns)`, by name."""
    return {
        str(path.relative_to(home)): (path.lstat().st_size, path.lstat().st_mtime_ns)
        for path in sorted(home.rglob("*"))
    }


def _receiver(home: Path) -> Path:
    """A directory of the receiver's: a Hugging Face model and an answer vocabulary."""
    (home / "bert").mkdir(parents=True)
    (home / "bert" / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (home / "bert" / "vocab.txt").write_text("[PAD]\n[UNK]\nsecret\n")
    (home / "answers").mkdir()
    (home / "answers" / "answers.txt").write_text("secret\n")
    return home


CRAFTED = {
    "vqav2": (lambda home: {"dataset_reader": {
        "type": "vqav2", "image_dir": "/proc/self/root", "answer_vocab": str(home / "answers"),
    }}, "dataset_reader.", "dataset_reader.image_dir: it names a file or program outside|'vqav2' is "
        "not a registered DatasetReader"),  # fmt: skip
    "srl bert_model_name": (lambda home: {"dataset_reader": {
        "type": "srl", "bert_model_name": str(home / "bert"),
        "token_indexers": {"tokens": {"type": "single_id"}, "hashes": {"type": "word_hash"}},
    }}, "dataset_reader.bert_model_name", "local path"),  # fmt: skip
    "srl srl_eval_path": (lambda home: {"model": {
        "type": "srl", "srl_eval_path": str(home / "answers" / "answers.txt"),
        "text_field_embedder": {"token_embedders": {
            "hashes": {"type": "random_vectors", "embedding_dim": 4},
        }},
    }}, "model.srl_eval_path", "a file or program outside the model"),  # fmt: skip
}
DOORS = ("allennlp predict", "allennlp evaluate", "load_archive")
CASES = [(name, door) for name in CRAFTED for door in DOORS]


@pytest.mark.parametrize("name, door", CASES, ids=[f"{name}-{door}" for name, door in CASES])
def test_a_task_archive_may_build_only_the_allowed_components(
    name, door, task_archive, tmp_path, monkeypatch, capsys
):
    sections, key, why = CRAFTED[name]
    home = _receiver(tmp_path / "home")
    before = _receiver_files(home)
    crafted = craft_archive(task_archive, tmp_path / "received" / "model.tar.gz",
                            lambda config: config.update(sections(home)))  # fmt: skip
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    message = refusal(task_archive_doors(crafted, tmp_path / "work", monkeypatch)[door], capsys)
    assert _receiver_files(home) == before, "the receiver's files were changed"
    assert not list(home.rglob(".lock"))
    line = message.strip()
    assert "\n" not in line and key in line and re.search(why, line), line


def test_a_published_bert_the_srl_reader_names_is_found_missing_before_anything_is_built(
    task_archive, tmp_path, monkeypatch
):
    """The `srl` reader's `bert_model_name` reaches `from_pretrained` as a `pretrained_transformer`
    component's `model_name` does: a model missing from the cache is one line naming the key
    (`received.hub_models`), not transformers' traceback."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    reader = {"type": "srl", "bert_model_name": "no-such-org/no-such-bert"}
    crafted = craft_archive(task_archive, tmp_path / "received" / "model.tar.gz",
                            lambda config: config.update(dataset_reader=reader))  # fmt: skip
    message = refusal(task_archive_doors(crafted, tmp_path / "work", monkeypatch)["load_archive"])
    assert "dataset_reader.bert_model_name names the Hugging Face model" in message
    assert "'no-such-org/no-such-bert'" in message
    assert "HF_HUB_OFFLINE=1" in message and "\n" not in message
