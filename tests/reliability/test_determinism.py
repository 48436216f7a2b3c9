"""Two CPU training runs with the same seeds give identical weights; another seed does not."""

import json

import pytest
import torch

from tests import FIXTURES_ROOT
from tests.helpers import train_config

CONFIG = FIXTURES_ROOT / "configs" / "elmo_c.jsonnet"


def final_weights(directory, backend, seed):
    overrides = {
        "model.contextualizer.backend": backend,
        "random_seed": seed,
        "numpy_seed": seed,
        "pytorch_seed": seed,
        "data_loader.num_workers": 1,  # reading in a worker process too
    }
    train_config(CONFIG, directory, json.dumps(overrides))
    return torch.load(directory / "model_state_e2_b0.th")


@pytest.mark.parametrize("backend", ["fused", "reference"])
def test_same_seed_same_weights(tmp_path, backend):
    first = final_weights(tmp_path / "first", backend, 7)
    second = final_weights(tmp_path / "second", backend, 7)
    assert first.keys() == second.keys()
    for name in first:
        assert torch.equal(first[name], second[name]), name
    other = final_weights(tmp_path / "other", backend, 8)
    assert not all(torch.equal(first[name], other[name]) for name in first)
