"""
The one downstream tagger of `flair_comparison.py`: Flair's `SequenceTagger` (BiLSTM-CRF) on
the corpus's fastText vectors, alone or stacked with a system's contextual embeddings, trained
with Flair's `ModelTrainer`, the epoch with the best development score kept and tested once.

The fastText vectors go through Flair's own `WordEmbeddings`, filled offline: Flair reads
vector files with gensim (`FastTextEmbeddings` too), which this project does not install, and
`WordEmbeddings` also takes a vocabulary and a size, whose matrix we fill from the `.bin`
(`fasttext_word_embeddings`: every word of the task data, each with fastText's vector for it,
built from its subwords where the word was not in fastText's vocabulary, as gensim's FastText
gives it).

Tasks (`COLUMNS`): NER, the four-column files of `tasks.ner_step`; POS, Brown's `word###tag`
lines (`tasks.pos_step`) rewritten as two columns (`write_pos_columns`). Flair's score for both is
its micro-F1 over the labels, which for POS (one tag a token) is the tagging accuracy. The POS
tagger is the same BiLSTM with a softmax in place of the CRF (`CRF`): Brown's 107 simplified tags
make a CRF's transitions per token about 40 times NER's (a first POS epoch with it ran at about
100 sentences a second on one core, some 30 times slower than NER's).
"""

import shutil
import time
from pathlib import Path
from typing import Iterable, List, Optional

# Task -> the columns of its files that Flair's `ColumnCorpus` reads (the text, the task's tag).
COLUMNS = {"ner": {0: "text", 3: "ner"}, "pos": {0: "text", 1: "pos"}}
SPLITS = ("train", "dev", "test")
# Task -> whether its tagger has a CRF on top of the BiLSTM.
CRF = {"ner": True, "pos": False}
# Task -> whether its tags include one for tags its training split lacks (POS: the held-out
# genres use a few tags the training sentences do not; each such token counts as an error).
UNKNOWN_TAG = {"ner": False, "pos": True}


def task_words(files: Iterable[str]) -> List[str]:
    """The distinct words of CoNLL-style files (the first column), in the order first seen."""
    seen = {}
    for path in files:
        for line in open(path, encoding="utf-8"):
            if line.strip():
                seen.setdefault(line.split()[0], None)
    return list(seen)


def fasttext_word_embeddings(vectors: str, words: List[str], name: str):
    """Flair's `WordEmbeddings` (frozen) holding the fastText `vectors` (a `.bin`) of `words`."""
    import torch

    from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
    from allennlp_elmo_c.integrations.flair import flair  # noqa: F401  (Flair, imported safely)
    from flair.embeddings import WordEmbeddings

    model = FastTextBin.load(vectors)
    vocabulary = {word: index for index, word in enumerate(words)}
    embeddings = WordEmbeddings(None, vocab=vocabulary, embedding_length=model.dim, name=name)
    with torch.no_grad():
        for word, index in vocabulary.items():
            embeddings.embedding.weight[index] = torch.from_numpy(model.word_vector(word))
    return embeddings


def write_pos_columns(source: str, target: Path) -> None:
    """Brown's `word###tag` sentences (one a line, `source/{train,dev,test}.txt`) as two-column
    files in `target`, a blank line after each sentence."""
    target.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        lines = []
        for line in open(Path(source) / f"{split}.txt", encoding="utf-8"):
            tokens = [token.rpartition("###") for token in line.split()]
            if tokens:
                lines += [f"{word} {tag}" for word, _, tag in tokens] + [""]
        (target / f"{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def task_corpus(task: str, directory: str):
    """The task's column files in `directory` as a Flair `ColumnCorpus`."""
    from allennlp_elmo_c.integrations.flair import flair  # noqa: F401
    from flair.datasets import ColumnCorpus

    return ColumnCorpus(directory, COLUMNS[task], train_file="train.txt", dev_file="dev.txt",
                        test_file="test.txt", in_memory=True)  # fmt: skip


def tagger_step(task: str, data: dict, vectors: dict, contextual: list, seed: int, run: Path,
                settings: dict, keep: bool = False) -> dict:  # fmt: skip
    """
    One tagger of `task` on its data step's column files (`data["dir"]`): fastText `vectors`
    plus the `contextual` embeddings (none for fastText alone), trained in `run` with seed
    `seed`; `settings`: `hidden_size`, `max_epochs`, `mini_batch_size`, `learning_rate`. Returns
    its development and test micro-F1 (the best-development epoch's), and the CPU seconds it
    took (embedding the data included).
    """
    from allennlp_elmo_c.integrations.flair import flair
    from flair.embeddings import StackedEmbeddings
    from flair.models import SequenceTagger
    from flair.trainers import ModelTrainer

    began = time.process_time()
    flair.set_seed(seed)
    corpus = task_corpus(task, data["dir"])
    files = [str(Path(data["dir"]) / f"{split}.txt") for split in SPLITS]
    words = fasttext_word_embeddings(vectors["vectors"], task_words(files), "fasttext")
    embeddings = StackedEmbeddings([words, *contextual])
    tags = corpus.make_label_dictionary(task, add_unk=UNKNOWN_TAG[task])
    tagger = SequenceTagger(hidden_size=settings["hidden_size"], embeddings=embeddings,
                            tag_dictionary=tags, tag_type=task, use_crf=CRF[task], rnn_layers=1)  # fmt: skip
    trainer = ModelTrainer(tagger, corpus)
    result = trainer.train(
        run, learning_rate=settings["learning_rate"], mini_batch_size=settings["mini_batch_size"],
        max_epochs=settings["max_epochs"], embeddings_storage_mode="cpu", save_final_model=False,
        create_file_logs=False, create_loss_file=False, use_final_model_for_eval=False,
    )  # fmt: skip
    # (the model from the best development epoch, which the trainer loaded for its test)
    development = tagger.evaluate(corpus.dev, gold_label_type=task, mini_batch_size=64)
    if not keep:
        shutil.rmtree(run, ignore_errors=True)
    return {
        "dev": development.main_score, "test": result["test_score"], "crf": CRF[task],
        "cpu_seconds": time.process_time() - began,
        "sentences": {"train": len(corpus.train), "dev": len(corpus.dev), "test": len(corpus.test)},
    }  # fmt: skip


def bert_embeddings(model: str, setting: str):
    """Flair's `TransformerWordEmbeddings` of a local Hugging Face model directory, frozen, with
    the `bert_choice.BERT_EMBEDDINGS` setting `setting` (several layers: their mean)."""
    from allennlp_elmo_c.integrations.flair import flair  # noqa: F401
    from experiments.quality.bert_choice import BERT_EMBEDDINGS
    from flair.embeddings import TransformerWordEmbeddings

    return TransformerWordEmbeddings(model, fine_tune=False, layer_mean=True,
                                     allow_long_sentences=True,
                                     **BERT_EMBEDDINGS[setting])  # fmt: skip


def contextual_embeddings(system: str, record: dict) -> Optional[list]:
    """The system's Flair embeddings from a pretraining record: Flair's forward and backward
    `FlairEmbeddings` from their `.pt` files, a BERT's `bert_embeddings` (its setting:
    `record["embedding"]`), or our `ElmoCEmbeddings` (every layer, the default mode of Flair's
    ELMo embeddings) from an ELMo archive."""
    from allennlp_elmo_c.integrations.flair import ElmoCEmbeddings
    from flair.embeddings import FlairEmbeddings

    if system.startswith("bert"):
        return [bert_embeddings(record["model"], record["embedding"])]
    if system.startswith("flair"):
        return [FlairEmbeddings(record["forward"]["model"]),
                FlairEmbeddings(record["backward"]["model"])]  # fmt: skip
    return [ElmoCEmbeddings(record["archive"], embedding_mode="all")]
