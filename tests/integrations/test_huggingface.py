"""
Hugging Face transformers: `AutoConfig` / `AutoModel` / `AutoTokenizer` on a model directory
(moved after its run and fastText file were deleted, no `ELMO_C_*` variable set).
"""
import shutil

import pytest
import torch
from transformers import AutoConfig, AutoModel, AutoTokenizer, BatchEncoding

from allennlp_elmo_c import ElmoC, batch_to_ids
from allennlp_elmo_c.integrations.huggingface import ElmoCConfig, ElmoCModel, ElmoCTokenizer
from tests.helpers import MODEL_SENTENCES as SENTENCES, without_elmo_c_variables


@pytest.fixture
def loaded(model_directory, monkeypatch):
    directory, _ = model_directory
    without_elmo_c_variables(monkeypatch)
    return directory, AutoModel.from_pretrained(str(directory)), AutoTokenizer.from_pretrained(str(directory))


def elmo_layers(directory) -> list:
    """Every layer as `ElmoC` gives it (one layer at a time, by fixed mixing weights)."""
    layers = []
    for index in range(3):
        weights = [-9e10] * 3
        weights[index] = 1.0
        elmo = ElmoC(str(directory), 1, dropout=0.0, scalar_mix_parameters=weights).eval()
        with torch.no_grad():
            layers.append(elmo(batch_to_ids(SENTENCES, elmo))["elmo_representations"][0])
    return layers


def test_auto_classes_give_ours(loaded):
    directory, model, tokenizer = loaded
    assert isinstance(AutoConfig.from_pretrained(str(directory)), ElmoCConfig)
    assert isinstance(model, ElmoCModel) and isinstance(tokenizer, ElmoCTokenizer)
    assert not model.training  # from_pretrained gives a model in eval mode


def test_hidden_states_are_the_layers(loaded):
    directory, model, tokenizer = loaded
    inputs = tokenizer(SENTENCES, is_split_into_words=True)
    assert isinstance(inputs, BatchEncoding)
    assert inputs["attention_mask"].tolist() == [[1] * 6, [1] * 3 + [0] * 3, [1] * 3 + [0] * 3]
    with torch.no_grad():
        output = model(**inputs, output_hidden_states=True)
    assert len(output.hidden_states) == model.config.num_hidden_layers == 3
    assert output.last_hidden_state.shape == (3, 6, model.config.hidden_size)
    for ours, expected in zip(output.hidden_states, elmo_layers(directory)):
        assert (ours - expected).abs().max().item() <= 1e-6
    assert torch.equal(output.last_hidden_state, output.hidden_states[-1])
    # The same word in two contexts: two vectors.
    assert not torch.allclose(output.last_hidden_state[0, 0], output.hidden_states[-1][1, 0])


def test_raw_text_goes_through_the_pretraining_tokenizer(loaded):
    _, model, tokenizer = loaded
    raw = tokenizer(["The council met on Friday ."])
    split = tokenizer([["The", "council", "met", "on", "Friday", "."]], is_split_into_words=True)
    assert raw.keys() == split.keys()
    assert all(torch.equal(raw[key], split[key]) for key in raw)
    with torch.no_grad():
        assert model(**raw).last_hidden_state.shape[1] == 6


def test_save_pretrained_round_trips(loaded, tmp_path):
    _, model, tokenizer = loaded
    inputs = tokenizer(SENTENCES, is_split_into_words=True)
    model.save_pretrained(tmp_path / "saved")
    tokenizer.save_pretrained(tmp_path / "saved")
    moved = tmp_path / "moved"
    shutil.move(tmp_path / "saved", moved)
    again = AutoModel.from_pretrained(str(moved))
    with torch.no_grad():
        assert torch.equal(again(**inputs).last_hidden_state, model(**inputs).last_hidden_state)
    # What save_pretrained wrote is a model directory for every other front door too.
    elmo = ElmoC(str(moved), 1, dropout=0.0)
    assert elmo.get_output_dim() == model.config.hidden_size


def test_bad_input_is_a_clear_error(loaded, tmp_path):
    _, _, tokenizer = loaded
    with pytest.raises(ValueError, match="strings"):
        tokenizer([["ok", 3]], is_split_into_words=True)
    from allennlp.common.checks import ConfigurationError

    with pytest.raises(ConfigurationError, match="not a model directory"):
        ElmoCTokenizer(str(tmp_path))


def test_a_subword_bilm_directory_is_refused_by_the_tokenizer(bpe, tmp_path):
    """ELMo-Sub indexes a word by its first BPE subword: not what the reader's indexer gives, so
    the tokenizer says so instead of making ids the model would misread."""
    from allennlp.common.checks import ConfigurationError

    from allennlp_elmo_c.commands.package import package_model
    from tests.helpers import train_tiny_elmo_sub

    directory = package_model(str(train_tiny_elmo_sub(tmp_path, bpe)), str(tmp_path / "elmo-sub"))
    with pytest.raises(ConfigurationError, match="BPE subwords"):
        AutoTokenizer.from_pretrained(str(directory))


def test_from_pretrained_takes_config_attributes_and_refuses_loading_options(loaded):
    """The plugin's loader reads the weights (once); `from_pretrained` still takes the config's
    attributes and the Hub's download options, and refuses loading options it does not honour,
    naming them."""
    from allennlp.common.checks import ConfigurationError

    directory, model, tokenizer = loaded
    inputs = tokenizer(SENTENCES, is_split_into_words=True)
    again = AutoModel.from_pretrained(str(directory), output_hidden_states=True, local_files_only=True)
    assert not again.training and again.config.output_hidden_states
    with torch.no_grad():
        output, expected = again(**inputs), model(**inputs)
    assert len(output.hidden_states) == 3
    assert torch.equal(output.last_hidden_state, expected.last_hidden_state)
    direct = ElmoCModel.from_pretrained(str(directory), output_hidden_states=True)
    assert direct.config.output_hidden_states and not direct.training
    for option in ({"device_map": "cpu"}, {"torch_dtype": torch.float64}):
        with pytest.raises(ConfigurationError, match=rf"\['{next(iter(option))}'\].*\.to\(device\)"):
            AutoModel.from_pretrained(str(directory), **option)
