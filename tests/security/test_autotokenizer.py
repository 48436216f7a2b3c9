"""
`AutoTokenizer` on a received model directory: transformers reads the directory's config.json
through `AutoConfig`, which builds the plugin's `ElmoCConfig`; the directory's checks
(`read_directory_config`: checksums, no link, its config.json) run there, before transformers
reads any other file of it.

The attack: a `tokenizer_class` in config.json sends `AutoTokenizer` to that tokenizer's own
loader, which reads the directory's files without the plugin's checks (a `tokenizer.json` linked
to a file outside would be read, and the listing never looked at); the checks that run in
`AutoConfig` refuse such a directory first.
"""

import json
import shutil
from pathlib import Path

import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from transformers import AutoModel, AutoTokenizer

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.integrations.huggingface import ElmoCModel, ElmoCTokenizer
from allennlp_elmo_c.received.model_directory import CHECKSUMS_FILE
from tests.helpers import outcome, regenerate_checksums, without_elmo_c_variables

SECRET = "receivers_secret_word"


@pytest.fixture
def received(model_directory, tmp_path, monkeypatch) -> Path:
    """A copy of the packaged biLM whose config.json names Hugging Face's fast tokenizer, as
    received (no ELMO_C_* variable set)."""
    without_elmo_c_variables(monkeypatch)
    target = tmp_path / "received"
    shutil.copytree(model_directory[0], target)
    config = json.loads((target / "config.json").read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    (target / "config.json").write_text(json.dumps(config))
    return target


def write_tokenizer(path: Path, word: str) -> Path:
    """A tokenizer.json `PreTrainedTokenizerFast` reads, whose vocabulary holds `word`."""
    Tokenizer(WordLevel({"[UNK]": 0, word: 1}, unk_token="[UNK]")).save(str(path))
    return path


def refused(directory: Path, *fragments: str) -> None:
    error = outcome(lambda: AutoTokenizer.from_pretrained(str(directory)))
    assert isinstance(error, ConfigurationError), error
    for fragment in fragments:
        assert fragment in str(error), str(error)
    assert SECRET not in str(error)


def test_a_linked_tokenizer_file_is_refused(received, tmp_path):
    outside = write_tokenizer(tmp_path / "outside.json", SECRET)
    (received / "tokenizer.json").symlink_to(outside)
    regenerate_checksums(received)  # as a sender would (the link is not listed)
    refused(received, "tokenizer.json")


def test_a_config_naming_another_tokenizer_is_refused(received):
    write_tokenizer(received / "tokenizer.json", "word")
    regenerate_checksums(received)
    refused(received, "config.json: tokenizer_class: ")


def test_a_file_added_after_the_listing_is_refused(received):
    regenerate_checksums(received)
    write_tokenizer(received / "tokenizer.json", SECRET)
    refused(received, f"tokenizer.json is not listed in {CHECKSUMS_FILE}")


def test_a_packaged_directory_still_loads(model_directory):
    directory = str(model_directory[0])
    assert isinstance(AutoTokenizer.from_pretrained(directory), ElmoCTokenizer)
    assert isinstance(AutoModel.from_pretrained(directory), ElmoCModel)
