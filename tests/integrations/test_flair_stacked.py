"""
ELMo-C beside a local Hugging Face encoder in one Flair `StackedEmbeddings`: a tiny BERT made here
(its WordPiece tokenizer trained here with `tokenizers`), read by Flair's
`TransformerWordEmbeddings` from its directory, and `ElmoCEmbeddings` of the tiny ELMo-C archive
embed a sentence together, each token's vector the two embeddings' own, side by side.
"""

import torch
from flair.data import Sentence
from flair.embeddings import StackedEmbeddings, TransformerWordEmbeddings
from tokenizers import BertWordPieceTokenizer
from transformers import BertConfig, BertModel, BertTokenizerFast

from allennlp_elmo_c.integrations.flair import ElmoCEmbeddings

TEXT = [
    "The bank raised its rates on Friday .",
    "We sat by the river bank and watched the boats .",
    "The council of the city met on Monday to discuss the rates .",
]


def tiny_bert(directory):
    """A BERT of 2 layers of 16 units, untrained, and its WordPiece tokenizer, saved as a local
    Hugging Face model directory."""
    directory.mkdir()
    corpus = directory / "corpus.txt"
    corpus.write_text("\n".join(TEXT * 3) + "\n")
    trainer = BertWordPieceTokenizer(lowercase=False)
    trainer.train([str(corpus)], vocab_size=80, min_frequency=1, show_progress=False)
    trainer.save_model(str(directory))
    tokenizer = BertTokenizerFast(str(directory / "vocab.txt"), do_lower_case=False)
    tokenizer.save_pretrained(str(directory))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=32)  # fmt: skip
    BertModel(config).save_pretrained(str(directory))
    return directory


def test_a_local_bert_and_elmo_c_embed_a_sentence_together(elmo_c_archive, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    bert = TransformerWordEmbeddings(str(tiny_bert(tmp_path / "bert")), fine_tune=False,
                                     layers="all", layer_mean=True, subtoken_pooling="mean")  # fmt: skip
    elmo = ElmoCEmbeddings(str(elmo_c_archive))
    stacked = StackedEmbeddings([bert, elmo])
    assert stacked.embedding_length == bert.embedding_length + elmo.embedding_length

    words = "The river bank raised unheardof rates .".split()  # (a word the vocabulary splits)
    sentence = Sentence(words)
    stacked.embed(sentence)
    alone = [Sentence(words), Sentence(words)]
    bert.embed(alone[0])
    elmo.embed(alone[1])
    for token, by_bert, by_elmo in zip(sentence, *alone):
        vector = token.get_embedding()
        assert vector.shape == (stacked.embedding_length,)
        torch.testing.assert_close(vector[: bert.embedding_length], by_bert.get_embedding())
        torch.testing.assert_close(vector[bert.embedding_length :], by_elmo.get_embedding())
        assert torch.isfinite(vector).all() and vector.abs().sum() > 0
