"""
Hugging Face transformers: `AutoConfig` / `AutoModel` / `AutoTokenizer` on a model directory
(moved after its run and fastText file were deleted, no `ELMO_C_*` variable set).
"""
import json
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


# --- a received model directory: transformers builds only the config the plugin checked ---------


def _crafted(model_directory, tmp_path, edit, before_checksums=None):
    from tests.security.received_models import craft_directory

    def both(config):
        edit(config)
        if before_checksums is not None:
            before_checksums(tmp_path / "received")

    return str(craft_directory(model_directory[0], tmp_path / "received", both))


def _refused_everywhere(directory, why):
    from allennlp.common.checks import ConfigurationError

    for load in (AutoConfig.from_pretrained, AutoModel.from_pretrained, ElmoCModel.from_pretrained,
                 AutoTokenizer.from_pretrained):  # fmt: skip
        with pytest.raises(ConfigurationError, match=why) as error:
            load(directory)
        assert "\n" not in str(error.value)


def test_num_labels_beyond_the_budget_is_refused(model_directory, tmp_path, monkeypatch):
    """Unchecked, `num_labels: 2000000` builds label tables of +1.1 GiB."""
    without_elmo_c_variables(monkeypatch)
    directory = _crafted(model_directory, tmp_path, lambda c: c.update(num_labels=2_000_000))
    _refused_everywhere(directory, "num_labels: 2000000 is not a size between 0 and 65536")


@pytest.mark.parametrize("target", ["empty", "climbing", "vocabulary"])
def test_configuration_files_cannot_redirect_transformers(target, model_directory, tmp_path, monkeypatch):
    """`configuration_files` makes transformers read another config.json than the checked one: an
    empty directory in the model, a `..` path to a file of the receiver, a vocabulary file that
    carries `auto_map` and `trust_remote_code`. Each is refused; the receiver's file is not
    adopted."""
    without_elmo_c_variables(monkeypatch)
    receiver = tmp_path / "config.9.0.0.json"  # a JSON file of the receiver's, beside the model
    receiver.write_text('{"model_type": "elmo_c", "secret": "the receiver\'s"}')
    names = {"empty": "sub/../../config.9.0.0.json", "climbing": "../config.9.0.0.json",
             "vocabulary": "vocabulary/config.1.0.0.json.txt"}  # fmt: skip

    def files(root):
        if target == "empty":
            (root / "sub").mkdir()
        if target == "vocabulary":
            (root / names[target]).write_text(json.dumps(
                {"model_type": "elmo_c", "auto_map": {"AutoConfig": "x.Y"}, "trust_remote_code": True}))

    directory = _crafted(model_directory, tmp_path,
                         lambda c: c.update(configuration_files=[names[target]]), files)  # fmt: skip
    _refused_everywhere(directory, "configuration_files: it would make Hugging Face")


def test_a_directory_in_a_model_directory_is_refused(model_directory, tmp_path, monkeypatch):
    without_elmo_c_variables(monkeypatch)
    directory = _crafted(model_directory, tmp_path, lambda c: None, lambda root: (root / "sub").mkdir())
    _refused_everywhere(directory, "sub is a directory; a model directory holds no directory but")


def test_an_unknown_key_of_the_directory_config_is_refused(model_directory, tmp_path, monkeypatch):
    without_elmo_c_variables(monkeypatch)
    directory = _crafted(model_directory, tmp_path, lambda c: c.update(secret="x"))
    _refused_everywhere(directory, "secret: is not a key of a model directory's config.json")
