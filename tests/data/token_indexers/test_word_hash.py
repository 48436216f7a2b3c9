import hashlib
import inspect
import os
import subprocess
import sys

import torch

from allennlp.common import Params
from allennlp.data import Batch, Instance, Token, Vocabulary
from allennlp.data.fields import TextField
from allennlp.data.token_indexers import TokenIndexer
from allennlp.nn.util import get_text_field_mask

from allennlp_elmo_c.data.token_indexers import word_hash as word_hash_module
from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer
from allennlp_elmo_c.data.token_indexers.word_hash import PADDING_HASH, WordHashIndexer, word_hash
from tests import FIXTURES_ROOT

ODD_TOKENS = ["", "\x00", "a\x00b", "😀", "👩‍👩‍👧", "日本語", "\ud800", "x" * 10_000, " ", "É"]


def tensors_for(sentences, indexers):
    fields = [TextField([Token(t) for t in sentence], indexers) for sentence in sentences]
    batch = Batch([Instance({"text": field}) for field in fields])
    vocab = Vocabulary()
    batch.index_instances(vocab)
    return batch.as_tensor_dict()["text"], vocab


def test_hash_is_the_blake2b_prefix():
    for text in ["the", "<S>", *ODD_TOKENS]:
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        assert word_hash(text) == int.from_bytes(digest, "little", signed=True)
        assert -(2**63) <= word_hash(text) < 2**63 and word_hash(text) != PADDING_HASH


def test_hash_values_are_pinned():
    # Changing the hash would silently change every random_vectors vector of a trained model.
    assert word_hash("the") == 3331141520948189790
    assert word_hash("<S>") == 4665803016763639067
    assert word_hash("") == -5426141060434712860
    assert word_hash("日本語") == 5222810888430230004


def test_hash_is_the_same_in_another_process_with_another_hash_seed():
    # The function's own source in a bare interpreter (importing allennlp would take seconds).
    code = "import hashlib\n" + inspect.getsource(word_hash)
    code += "print([word_hash(w) for w in ['the', 'ünïcode', '']])"
    environment = {**os.environ, "PYTHONHASHSEED": "12345"}
    output = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True
    ).stdout
    assert output.strip() == str([word_hash(w) for w in ["the", "ünïcode", ""]])


def test_a_zero_digest_never_becomes_the_padding_value(monkeypatch):
    class ZeroDigest:
        def digest(self):
            return bytes(8)

    monkeypatch.setattr(word_hash_module.hashlib, "blake2b", lambda *args, **kwargs: ZeroDigest())
    assert word_hash("anything") == 1


def test_distinct_strings_distinct_hashes():
    words = [f"w{i}" for i in range(20_000)] + ODD_TOKENS + ["The", "the ", "THE"]
    assert len({word_hash(word) for word in words}) == len(words)


def test_from_config_padding_and_mask():
    indexer = TokenIndexer.from_params(Params({"type": "word_hash"}))
    assert isinstance(indexer, WordHashIndexer)
    tensors, vocab = tensors_for([["the", "cat", "sat"], ["a"], []], {"hash": indexer})
    hashes, mask = tensors["hash"]["word_hashes"], tensors["hash"]["token_mask"]
    assert hashes.dtype == torch.int64 and mask.dtype == torch.bool
    assert hashes.shape == mask.shape == (3, 3)
    assert hashes[0].tolist() == [word_hash(w) for w in ["the", "cat", "sat"]]
    assert hashes[1].tolist() == [word_hash("a"), PADDING_HASH, PADDING_HASH]
    assert hashes[2].tolist() == [PADDING_HASH] * 3
    assert mask.tolist() == [[True] * 3, [True, False, False], [False] * 3]
    assert vocab.get_vocab_size("tokens") == 2  # nothing counted: padding and OOV only


def test_odd_unicode_tokens():
    tensors, _ = tensors_for([ODD_TOKENS], {"hash": WordHashIndexer()})
    assert tensors["hash"]["word_hashes"][0].tolist() == [word_hash(t) for t in ODD_TOKENS]
    assert tensors["hash"]["token_mask"].all()


def test_text_field_mask_next_to_fasttext_subwords():
    # Without a `mask` key AllenNLP takes the first lowest-dimensional tensor of the field;
    # either indexer's tensors give the right mask (hashes are never 0, "" included).
    fasttext = FastTextSubwordsIndexer(str(FIXTURES_ROOT / "fasttext" / "tiny.bin"))
    sentences = [["", "the"], ["x"]]
    for order in (["a_hash", "z_fasttext"], ["z_fasttext", "a_hash"]):
        names = {"a_hash": WordHashIndexer(), "z_fasttext": fasttext}
        tensors, _ = tensors_for(sentences, {name: names[name] for name in order})
        assert get_text_field_mask(tensors).tolist() == [[True, True], [True, False]]


def test_token_min_padding_length():
    tensors, _ = tensors_for([["a"]], {"hash": WordHashIndexer(token_min_padding_length=4)})
    assert tensors["hash"]["word_hashes"].tolist() == [[word_hash("a"), 0, 0, 0]]
