import contextlib
import json

import pytest
import torch

from allennlp.common.checks import ConfigurationError
from allennlp.commands.train import train_model_from_file

from allennlp_elmo_c.training.tokens_seen import TokensSeen, predicted_tokens
from tests.helpers import FIXTURES_ROOT, LM_DATA, PROJECT_ROOT


def batch_of(lengths):
    mask = torch.arange(max(lengths)).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    return {"tokens": {"tokens": {"token_mask": mask, "subword_ids": mask.long()}}}


def test_counts_training_batches_only_and_puts_the_count_in_the_metrics(tmp_path):
    callback = TokensSeen(str(tmp_path))
    for is_training in (True, True, False):  # two training batches, one validation batch
        callback.on_batch(None, [batch_of([21, 21, 5])], None, None, 0, 1, is_training)
    metrics = {}
    callback.on_epoch(None, metrics, 0)
    assert metrics["tokens_seen"] == 2 * (20 + 20 + 4)
    restored = TokensSeen(str(tmp_path))
    restored.load_state_dict(callback.state_dict())
    restored.on_batch(None, [batch_of([3]), batch_of([2])], None, None, 1, 1, True)  # accumulation
    restored.on_epoch(None, metrics, 1)
    assert metrics["tokens_seen"] == 88 + 2 + 1
    restored.load_state_dict({})  # a checkpoint written before the callback was added
    assert restored.tokens == 91


def test_a_batch_without_text_is_refused_by_name():
    with pytest.raises(ConfigurationError, match="no text field"):
        predicted_tokens({"label": torch.zeros(2)})


def test_a_resumed_run_counts_on_from_its_checkpoint(tmp_path):
    """Two epochs of the fixture config with the callback; then the second epoch's checkpoint
    and outputs are deleted and the run is resumed (`--recover`): the resumed run's count is the
    uninterrupted run's, which is the corpus's token stream less one, twice."""
    overrides = json.dumps({"trainer.callbacks": [{"type": "tokens_seen"}], "trainer.num_epochs": 2})
    config = str(FIXTURES_ROOT / "configs" / "elmo_c.jsonnet")
    with contextlib.chdir(PROJECT_ROOT):
        train_model_from_file(config, str(tmp_path), overrides=overrides)
        whole = json.loads((tmp_path / "metrics.json").read_text())["tokens_seen"]
        for name in ("model_state_e2_b0.th", "training_state_e2_b0.th", "model.tar.gz", "metrics.json"):
            (tmp_path / name).unlink()
        train_model_from_file(config, str(tmp_path), overrides=overrides, recover=True)
    resumed = json.loads((tmp_path / "metrics.json").read_text())["tokens_seen"]
    sentences = [line.split() for line in (LM_DATA / "sentences.txt").read_text().splitlines()]
    stream = sum(len(words) + 2 for words in sentences if words)
    assert whole == resumed == 2 * (stream - 1)
