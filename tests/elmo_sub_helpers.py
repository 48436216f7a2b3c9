"""Shared by the ELMo-Sub tests: a BPE vocabulary trained on the fixture corpus and a tiny
ELMo-Sub archive trained with it (tests/fixtures/configs/elmo_sub_tiny.jsonnet)."""

import contextlib
from pathlib import Path
from typing import Dict

from allennlp.commands.train import train_model
from allennlp.common import Params

from allennlp_elmo_c.commands.train_bpe import train_bpe
from tests import FIXTURES_ROOT, PROJECT_ROOT

TINY_CONFIG = FIXTURES_ROOT / "configs" / "elmo_sub_tiny.jsonnet"
SENTENCES = FIXTURES_ROOT / "data" / "lm" / "sentences.txt"


def train_tiny_bpe(directory: Path, vocab_size: int = 200) -> Path:
    """A BPE of ~`vocab_size` subwords on the fixture sentences; returns its directory."""
    return train_bpe(
        SENTENCES, directory, vocab_size=vocab_size, min_frequency=1, show_progress=False
    )


def bpe_environment(bpe_directory: Path) -> Dict[str, str]:
    """The variables the ELMo-Sub configs read."""
    return {
        "ELMO_C_BPE": str(bpe_directory / "tokenizer.json"),
        "ELMO_C_VOCABULARY": str(bpe_directory / "vocabulary"),
    }


def train_tiny_elmo_sub(directory: Path, bpe_directory: Path) -> Path:
    """Trains the tiny ELMo-Sub config for one epoch; returns its model.tar.gz."""
    params = Params.from_file(
        str(TINY_CONFIG), '{"trainer.num_epochs": 1}', ext_vars=bpe_environment(bpe_directory)
    )
    with contextlib.chdir(PROJECT_ROOT):  # the config's data paths are relative to it
        train_model(params, str(directory / "run"))
    return directory / "run" / "model.tar.gz"
