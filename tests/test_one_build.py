"""
Every front door builds a received biLM once (on `meta`, checked against its weights, then given
them) and loads its weights once; a task archive's biLM is built once from the record the task
model keeps, its weights coming from the task model's state dict.
"""

import functools
from collections import Counter

import pytest

from allennlp_elmo_c.models.elmo_c import ElmoCLanguageModel
from tests import FIXTURES_ROOT
from tests.helpers import RECEIVED_MODEL_DOORS

# The doors that read a model's files without building it.
BUILD_NOTHING = ("AutoTokenizer", "describe")
ONCE = {"built": 1, "weights loaded": 1}


@pytest.fixture
def builds(monkeypatch) -> Counter:
    """The biLMs built and the loads of real weights into one."""
    counts: Counter = Counter()
    init = ElmoCLanguageModel.__init__
    load = ElmoCLanguageModel._load_from_state_dict

    @functools.wraps(init)  # (AllenNLP reads the constructor's parameters from its signature)
    def counted_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        counts["built"] += 1

    def counted_load(self, state_dict, prefix, *args, **kwargs):
        # Every load reaches the biLM's own tensors: torch's `load_state_dict` and Hugging
        # Face's loader alike call this for each module.
        mine = [tensor for key, tensor in state_dict.items() if key.startswith(prefix)]
        if any(not tensor.is_meta for tensor in mine):
            counts["weights loaded"] += 1
        return load(self, state_dict, prefix, *args, **kwargs)

    monkeypatch.setattr(ElmoCLanguageModel, "__init__", counted_init)
    monkeypatch.setattr(ElmoCLanguageModel, "_load_from_state_dict", counted_load)
    return counts


@pytest.mark.parametrize("door", list(RECEIVED_MODEL_DOORS))
def test_a_model_directory_is_built_once(door, model_directory, builds, tmp_path):
    RECEIVED_MODEL_DOORS[door](model_directory[0], tmp_path)
    assert builds == (Counter() if door in BUILD_NOTHING else Counter(ONCE)), door


@pytest.mark.parametrize("door", [door for door in RECEIVED_MODEL_DOORS if "Auto" not in door])
def test_an_archive_is_built_once(door, elmo_c_archive, builds, tmp_path):
    # (Hugging Face reads model directories only.)
    RECEIVED_MODEL_DOORS[door](elmo_c_archive, tmp_path)
    assert builds == (Counter() if door in BUILD_NOTHING else Counter(ONCE)), door


def test_a_task_archive_builds_its_bilm_once(builds, tmp_path):
    import allennlp_models.tagging  # noqa: F401  (the task archive's crf_tagger)

    RECEIVED_MODEL_DOORS["load_archive"](FIXTURES_ROOT / "legacy_models" / "task" / "model.tar.gz",
                                         tmp_path)  # fmt: skip
    assert builds == Counter(ONCE)
