"""
Not only English (issue #19): the whole path on German and Russian text at fixture size, raw
text -> `prepare-corpus --language` -> `train-fasttext` -> pretraining
(`training_config/elmo_c_small.jsonnet`) -> `elmo-c-embed`, with accented, umlauted and Cyrillic
words and unseen Greek ones; and how spaCy's blank French and Greek tokenizers split text.
"""

import json
import random

import h5py
import numpy
import pytest

from allennlp_elmo_c.commands.elmo_c_embed import embed_file
from allennlp_elmo_c.commands.prepare_corpus import prepare_corpus
from allennlp_elmo_c.commands.train_fasttext import train_fasttext
from allennlp_elmo_c.common.fasttext_bin import FastTextBin
from tests import PROJECT_ROOT
from tests.helpers import train_config

# Sentences built from these parts: varied enough for fastText, every word seen often enough for
# its own row (min_count 5).
PARTS = {
    "de": (
        ["Die Bäckerin", "Der Müller", "Unsere Großmutter", "Ein Straßenbahnfahrer",
         "Die Schülerin", "Der Bürgermeister", "Frau Öztürk", "Mein Nachbar"],
        ["kauft", "repariert", "verkauft", "bemalt", "sucht", "öffnet", "vergisst", "trägt"],
        ["das Fahrrad", "die Brötchen", "einen Blumenstrauß", "die Tür", "den Schlüssel",
         "das Frühstück", "die Käsetüte", "den Fußball"],
        ["an der Straßenbahnhaltestelle", "im Rathaus", "auf dem Marktplatz", "in München",
         "neben der Kirche", "vor dem Gebäude", "hinter der Brücke", "in Köln"],
    ),
    "ru": (
        ["Моя бабушка", "Наш сосед", "Учительница", "Водитель трамвая", "Старый мельник",
         "Ёжик", "Мэр города", "Художница"],
        ["покупает", "чинит", "продаёт", "рисует", "ищет", "открывает", "забывает", "несёт"],
        ["велосипед", "свежий хлеб", "букет цветов", "дверь", "ключ", "завтрак", "мяч",
         "тёплый шарф"],
        ["на остановке", "в ратуше", "на площади", "в Москве", "возле церкви", "перед зданием",
         "за мостом", "в Петербурге"],
    ),
}
ENDINGS = [".", "!", "?"]
# Words never in the corpus (each language's) whose vectors come from character n-grams alone.
UNSEEN = {"de": ["Größenänderung", "Übergangsstraße"], "ru": ["Пожарище", "Ёлочка"]}
GREEK = ["Αθήνα", "καφές"]


def write_documents(directory, language: str, documents: int = 60, sentences: int = 6):
    """`documents` .txt files of `sentences` sentences each, hard-wrapped like prose; returns the
    distinct sentences written."""
    rng = random.Random(language)
    subjects, verbs, objects, places = PARTS[language]
    directory.mkdir()
    written = set()
    for index in range(documents):
        text = []
        for _ in range(sentences):
            sentence = " ".join(rng.choice(part) for part in (subjects, verbs, objects, places))
            sentence += rng.choice(ENDINGS)
            written.add(sentence)
            text.append(sentence)
        # Two sentences per line: sentence splitting, not line breaks, makes the sentences.
        lines = [" ".join(text[i:i + 2]) for i in range(0, len(text), 2)]
        (directory / f"doc{index:03d}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return written


@pytest.mark.parametrize("language", ["de", "ru"])
def test_prepare_fasttext_pretrain_embed(tmp_path, monkeypatch, language):
    written = write_documents(tmp_path / "texts", language)
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
        "ELMO_C_STEPS": "6",
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


def test_french_and_greek_tokenization(tmp_path):
    """What spaCy's blank pipelines do with French elisions and Greek, as `prepare-corpus` writes
    them (no training: the tokenizer is the only language-specific step)."""
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
