"""The corpus checks `train-bpe` and `train-fasttext` share (`build_cache.corpus_recipe`)."""

import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.commands.train_bpe import train_bpe
from allennlp_elmo_c.commands.train_fasttext import train_fasttext

TRAINERS = {
    "train-bpe": lambda corpus, out: train_bpe(corpus, out / "bpe", show_progress=False),
    "train-fasttext": lambda corpus, out: train_fasttext(corpus, out / "m.bin", verbose=0),
}


@pytest.mark.parametrize("command", sorted(TRAINERS))
def test_missing_and_empty_corpus(command, tmp_path):
    train = TRAINERS[command]
    with pytest.raises(ConfigurationError, match=f"{command}: corpus .* does not exist"):
        train(tmp_path / "nope.txt", tmp_path)
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(ConfigurationError, match=f"{command}: corpus .* is empty"):
        train(tmp_path / "empty.txt", tmp_path)
    assert not (tmp_path / "bpe").exists() and not (tmp_path / "m.bin").exists()
