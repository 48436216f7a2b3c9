"""
`training_config/allennlp_lm_demo.jsonnet`, the softmax baseline as allennlp-models users train
it (its `language_model` over ELMo's character CNN and AllenNLP's `ElmoLstm`), at fixture size:
it trains, and its archive serves allennlp-models' `language_model_token_embedder`, which is how
its users embed text downstream.
"""
import json

import torch

from allennlp.common import Params
from allennlp.data import Token, Vocabulary
from allennlp.data.token_indexers import ELMoTokenCharactersIndexer
from allennlp.models.archival import load_archive
from allennlp.modules.token_embedders import TokenEmbedder

from allennlp_elmo_c.modules.seq2seq_encoders.allennlp_elmo_lstm import AllenNlpElmoLstmEncoder
from tests.helpers import PROJECT_ROOT, make_demo_data_dir, train_config

CONFIG = PROJECT_ROOT / "training_config" / "allennlp_lm_demo.jsonnet"


def test_trains_and_embeds_through_language_model_token_embedder(tmp_path, monkeypatch):
    import allennlp_models.lm  # noqa: F401  (registers language_model and its embedder)

    data = make_demo_data_dir(tmp_path / "data")
    monkeypatch.setenv("ELMO_C_DATA_DIR", str(data))
    overrides = {"vocabulary.min_count.tokens": 1, "model.num_samples": 20,
                 "data_loader.batch_size": 4, "data_loader.batches_per_epoch": 3}  # fmt: skip
    metrics = train_config(CONFIG, tmp_path / "run", json.dumps(overrides))
    assert metrics["training_loss"] > 0
    archive = load_archive(str(tmp_path / "run" / "model.tar.gz"))
    assert isinstance(archive.model._contextualizer, AllenNlpElmoLstmEncoder)
    assert archive.config["dataset_reader"]["field_name"] == "source"

    embedder = TokenEmbedder.from_params(Params({
        "type": "language_model_token_embedder",
        "archive_file": str(tmp_path / "run" / "model.tar.gz"),
        "bos_eos_tokens": ["<S>", "</S>"],
        "remove_bos_eos": True,
    }))  # fmt: skip
    indexer = ELMoTokenCharactersIndexer()
    words = [Token(w) for w in "the council met on friday".split()]
    ids = indexer.tokens_to_indices(words, Vocabulary())["elmo_tokens"]
    with torch.no_grad():
        vectors = embedder(torch.tensor([ids]))
    assert vectors.shape == (1, 5, 256) and embedder.get_output_dim() == 256
    assert torch.isfinite(vectors).all()


def test_encoder_is_allennlps_elmo_lstm_without_carried_state():
    torch.manual_seed(0)
    encoder = AllenNlpElmoLstmEncoder(6, 4, 8, 2, return_all_layers=True).eval()
    inputs, mask = torch.randn(3, 5, 6), torch.tensor([[1] * 5, [1] * 3 + [0] * 2, [1] * 5]).bool()
    first = encoder(inputs, mask)
    second = encoder(inputs, mask)  # ElmoLstm alone would start from the first call's states
    assert len(first) == 2 and first[-1].shape == (3, 5, 8)
    assert all(torch.equal(a, b) for a, b in zip(first, second))
    assert (first[-1][1, 3:] == 0).all()
