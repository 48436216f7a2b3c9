"""
Not only English (issue #19): the whole path on German and Russian text at fixture size, raw
text -> `prepare-corpus --language` -> `train-fasttext` -> pretraining
(`training_config/elmo_c_small.jsonnet`) -> `elmo-c-embed`, with accented, umlauted and Cyrillic
words and unseen Greek ones; and how spaCy's blank French and Greek tokenizers split text.
"""

import json
import h5py
import numpy
import pytest

from allennlp_elmo_c.commands.elmo_c_embed import embed_file
from allennlp_elmo_c.commands.prepare_corpus import prepare_corpus
from allennlp_elmo_c.commands.train_fasttext import train_fasttext
from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
from tests import PROJECT_ROOT
from tests.helpers import ENDINGS, train_config, write_language_documents

# Words never in the corpus (each language's) whose vectors come from character n-grams alone.
UNSEEN = {"de": ["Größenänderung", "Übergangsstraße"], "ru": ["Пожарище", "Ёлочка"]}
GREEK = ["Αθήνα", "καφές"]


@pytest.mark.parametrize("language", ["de", "ru"])
def test_prepare_fasttext_pretrain_embed(tmp_path, monkeypatch, language):
    written = write_language_documents(tmp_path / "texts", language)
    corpus = prepare_corpus([tmp_path / "texts"], tmp_path / "corpus", language=language,
                            validation_fraction=0.1, show_progress=False)  # fmt: skip
    train = (corpus / "train.txt").read_text(encoding="utf-8").splitlines()
    validation = (corpus / "validation.txt").read_text(encoding="utf-8").splitlines()
    # Every distinct sentence once, split from its line, its end punctuation a token of its own.
    assert train and validation and len(train) + len(validation) == len(written)
    sentences = train + validation
    assert all(line.split()[-1] in ENDINGS for line in sentences)
    assert {line for line in sentences} == {
        sentence[:-1] + " " + sentence[-1] for sentence in written
    }
    tokens = {token for line in sentences for token in line.split()}
    if language == "de":  # compounds with umlauts and ß stay whole
        assert {"Straßenbahnhaltestelle", "Großmutter", "Käsetüte", "Öztürk", "Köln"} <= tokens
    else:
        assert {"Ёжик", "продаёт", "тёплый", "Москве"} <= tokens

    vectors = train_fasttext(corpus / "train.txt", tmp_path / "vectors.bin", dim=100,
                             bucket=20_000, epoch=5, threads=1, verbose=0)  # fmt: skip
    fasttext = FastTextBin(vectors)
    corpus_words = {token for line in train for token in line.split()}
    # fastText has its own row for every word of the training corpus (each is seen >= 5 times),
    # accents, umlauts and Cyrillic letters included.
    assert corpus_words <= set(fasttext.word_ids)

    for name, value in {
        "ELMO_C_TRAIN_DATA": str(corpus / "train.txt"),
        "ELMO_C_VALIDATION_DATA": str(corpus / "validation.txt"),
        "ELMO_C_FASTTEXT": str(vectors),
    }.items():
        monkeypatch.setenv(name, value)
    overrides = json.dumps({"model.contextualizer.cell_size": 32,
                            "model.contextualizer.projection_size": 16})  # fmt: skip
    monkeypatch.chdir(PROJECT_ROOT)
    metrics = train_config(PROJECT_ROOT / "training_config" / "elmo_c_small.jsonnet",
                           tmp_path / "run", overrides)  # fmt: skip
    assert numpy.isfinite(metrics["validation_loss"])

    unseen = UNSEEN[language] + GREEK
    lines = validation[:5] + [" ".join(unseen)]
    (tmp_path / "sentences.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = embed_file(tmp_path / "run" / "model.tar.gz", tmp_path / "sentences.txt",
                        tmp_path / "features.hdf5")  # fmt: skip
    with h5py.File(output, "r") as hdf5:
        assert sorted(k for k in hdf5 if k != "sentence_to_index") == [
            str(i) for i in range(len(lines))
        ]
        mapping = json.loads(hdf5["sentence_to_index"][0])
        for index, line in enumerate(lines):
            layers = hdf5[str(index)][...]
            assert layers.shape == (3, len(line.split()), 32)  # 2 x projection 16
            assert numpy.isfinite(layers).all()
            assert mapping[line] == str(index)
        unseen_layers = hdf5[str(len(lines) - 1)][...]
    # The unseen words of the corpus's language have no row of their own but vectors from their
    # character n-grams: nonzero, finite, different from one another, and so different biLM
    # inputs. (Greek words in a German or Russian corpus have n-grams too, but fastText trained
    # none of them: their rows are zero or other n-grams' hash collisions; their biLM outputs
    # above are finite all the same.)
    for word in unseen:
        assert word not in fasttext.word_ids and len(fasttext.subword_ids(word)) > 0
    for word in UNSEEN[language]:
        vector = fasttext.word_vector(word)
        assert numpy.isfinite(vector).all() and numpy.abs(vector).sum() > 0
    inputs = unseen_layers[0]
    assert not numpy.allclose(inputs[0], inputs[1])


def test_french_greek_and_segmented_chinese_tokenization(tmp_path):
    """What spaCy's blank pipelines do with French elisions, Greek and Chinese already segmented
    into words (`--language xx`), as `prepare-corpus` writes them (no training: the tokenizer is
    the only language-specific step)."""
    (tmp_path / "fr").mkdir()
    (tmp_path / "fr" / "a.txt").write_text(
        "Aujourd'hui, l'œuvre d'art est célèbre. J'ai vu l’hôtel près de Noël !\n",
        encoding="utf-8",
    )
    (tmp_path / "el").mkdir()
    (tmp_path / "el" / "a.txt").write_text(
        "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας. Ο Ζεύς ήταν θεός!\n", encoding="utf-8"
    )
    french = prepare_corpus([tmp_path / "fr"], tmp_path / "fr_corpus", language="fr",
                            validation_fraction=0.0, show_progress=False)  # fmt: skip
    assert (french / "train.txt").read_text(encoding="utf-8").splitlines() == [
        # spaCy's French rules: an elided article or pronoun (l', d', j', with either
        # apostrophe) is a token of its own; words of its exception list stay whole.
        "Aujourd'hui , l' œuvre d' art est célèbre .",
        "J' ai vu l’ hôtel près de Noël !",
    ]
    greek = prepare_corpus([tmp_path / "el"], tmp_path / "el_corpus", language="el",
                           validation_fraction=0.0, show_progress=False)  # fmt: skip
    assert (greek / "train.txt").read_text(encoding="utf-8").splitlines() == [
        "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας .",
        "Ο Ζεύς ήταν θεός !",
    ]
    # Chinese segmented by the user's own tool: the language-neutral rules keep its words and
    # split sentences at full-width punctuation.
    (tmp_path / "zh").mkdir()
    (tmp_path / "zh" / "a.txt").write_text("我 喜欢 北京 的 秋天 。 你 呢 ？\n", encoding="utf-8")
    chinese = prepare_corpus([tmp_path / "zh"], tmp_path / "zh_corpus", language="xx",
                             validation_fraction=0.0, show_progress=False)  # fmt: skip
    assert (chinese / "train.txt").read_text(encoding="utf-8").splitlines() == [
        "我 喜欢 北京 的 秋天 。",
        "你 呢 ？",
    ]
