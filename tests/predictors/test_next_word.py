"""The `elmo_c_next_word` predictor on the tiny ELMo-C archive, checked against the model's own
predictions and candidate vectors; `allennlp predict` with it; softmax archives refused."""

import json
import sys

import pytest
import torch

from allennlp.commands import main
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from allennlp_elmo_c.predictors.next_word import NextWordPredictor
from tests import PROJECT_ROOT
from tests.helpers import LM_DATA, TINY_FASTTEXT

SENTENCE = "the council met on friday ."
CANDIDATES = [line.strip() for line in (LM_DATA / "candidates.txt").read_text().splitlines()]


@pytest.fixture
def in_project_root(monkeypatch):
    # The fixture archives record their fastText and candidate files relative to the repository.
    monkeypatch.chdir(PROJECT_ROOT)


def direct_predictions(archive, sentence):
    """The model's forward / backward predictions for `sentence` alone, `(timesteps - 1, dim)`."""
    reader, model = archive.dataset_reader, archive.model.eval()
    instance = reader.text_to_instance(sentence)
    reader.apply_token_indexers(instance)
    batch = Batch([instance])
    batch.index_instances(model.vocab)
    with torch.no_grad():
        output = model(**batch.as_tensor_dict())
    return output["forward_predictions"][0], output["backward_predictions"][0]


def best(prediction, words, model):
    """The candidate of highest cosine with `prediction`, and that cosine."""
    vectors = model.target_vectors(words, torch.device("cpu"))
    cosines = torch.nn.functional.cosine_similarity(prediction.unsqueeze(0), vectors, dim=-1)
    return words[int(cosines.argmax())], float(cosines.max())


def test_top_words_are_the_nearest_candidates(in_project_root, elmo_c_archive):
    archive = load_archive(str(elmo_c_archive))
    # The archive's training-time list is never read from an archive (a received file like any
    # other, docs/security.md): the same list, given as the user's own.
    assert archive.model.candidate_words is None
    extra_args = {"top_k": 3, "candidates_file": str(LM_DATA / "candidates.txt")}
    predictor = Predictor.from_archive(archive, "elmo_c_next_word", extra_args=extra_args)
    assert isinstance(predictor, NextWordPredictor)
    result = predictor.predict_json({"sentence": SENTENCE})
    words = SENTENCE.split()
    assert result["tokens"] == words
    assert len(result["next_words"]) == len(result["previous_words"]) == len(words)
    forward, backward = direct_predictions(archive, SENTENCE)
    # Token i + 1 (after <S>) is word i: its next word is forward[i + 1], its previous backward[i].
    for i in range(len(words)):
        for found, prediction in (
            (result["next_words"][i], forward[i + 1]),
            (result["previous_words"][i], backward[i]),
        ):
            assert len(found) == 3
            cosines = [item["cosine"] for item in found]
            assert cosines == sorted(cosines, reverse=True)
            assert all(item["word"] in CANDIDATES for item in found)
            word, cosine = best(prediction, CANDIDATES, archive.model)
            assert found[0]["word"] == word
            assert found[0]["cosine"] == pytest.approx(cosine, abs=1e-5)


def test_batch_equals_one_by_one(in_project_root, elmo_c_archive):
    predictor = Predictor.from_archive(load_archive(str(elmo_c_archive)), "elmo_c_next_word")
    inputs = [{"sentence": SENTENCE}, {"sentence": "storms closed schools"}]
    batched = predictor.predict_batch_json(inputs)
    for one, together in zip([predictor.predict_json(i) for i in inputs], batched):
        assert [[w["word"] for w in p] for p in one["next_words"]] == [
            [w["word"] for w in p] for p in together["next_words"]
        ]
        for p, q in zip(one["previous_words"], together["previous_words"]):
            assert [w["cosine"] for w in p] == pytest.approx([w["cosine"] for w in q], abs=1e-5)


def test_candidates_file_and_fasttext_vocabulary(in_project_root, elmo_c_archive, tmp_path):
    words = ["council", "storm", "schools"]
    (tmp_path / "words.txt").write_text("\n".join(words + ["storm", ""]) + "\n")
    archive = load_archive(str(elmo_c_archive))
    predictor = Predictor.from_archive(
        archive, "elmo_c_next_word",
        extra_args={"top_k": 5, "candidates_file": str(tmp_path / "words.txt")},
    )  # fmt: skip
    result = predictor.predict_json({"sentence": SENTENCE})
    forward, _ = direct_predictions(archive, SENTENCE)
    assert all(sorted(w["word"] for w in p) == sorted(words) for p in result["next_words"])
    assert result["next_words"][0][0]["word"] == best(forward[1], words, archive.model)[0]

    # No candidate list in the archive: the most frequent words of the target fastText model.
    unlisted = load_archive(str(elmo_c_archive), overrides={"model.nearest_neighbour_words": None})
    predictor = Predictor.from_archive(
        unlisted, "elmo_c_next_word", extra_args={"top_k": 2, "max_candidates": 10}
    )
    from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin

    frequent = FastTextBin.load(TINY_FASTTEXT).words[:10]
    result = predictor.predict_json({"sentence": SENTENCE})
    assert result["next_words"][0][0]["word"] == best(forward[1], frequent, unlisted.model)[0]
    assert all(w["word"] in frequent for p in result["previous_words"] for w in p)


def test_bad_arguments(in_project_root, elmo_c_archive, tmp_path):
    archive = load_archive(str(elmo_c_archive))
    with pytest.raises(ConfigurationError, match="does not exist"):
        NextWordPredictor(archive.model, archive.dataset_reader, candidates_file=str(tmp_path / "x"))
    with pytest.raises(ConfigurationError, match="top_k"):
        NextWordPredictor(archive.model, archive.dataset_reader, top_k=0)
    predictor = NextWordPredictor(archive.model, archive.dataset_reader)
    with pytest.raises(ConfigurationError, match="sentence"):
        predictor.predict_json({"text": SENTENCE})


def test_softmax_archive_is_refused(in_project_root, elmo_softmax_archive):
    archive = load_archive(str(elmo_softmax_archive))
    with pytest.raises(ConfigurationError, match="softmax"):
        Predictor.from_archive(archive, "elmo_c_next_word")


def test_allennlp_predict_command(in_project_root, monkeypatch, elmo_c_archive, tmp_path):
    inputs = tmp_path / "sentences.jsonl"
    inputs.write_text(json.dumps({"sentence": SENTENCE}) + "\n"
                      + json.dumps({"sentence": "storms closed schools"}) + "\n")  # fmt: skip
    output = tmp_path / "predictions.jsonl"
    argv = ["allennlp", "predict", str(elmo_c_archive), str(inputs), "--predictor",
            "elmo_c_next_word", "--predictor-args", '{"top_k": 2}', "--output-file",
            str(output), "--silent", "--batch-size", "2", "--include-package", "allennlp_elmo_c"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    main(prog="allennlp")
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["tokens"] for line in lines] == [SENTENCE.split(), ["storms", "closed", "schools"]]
    direct = Predictor.from_archive(
        load_archive(str(elmo_c_archive)), "elmo_c_next_word", extra_args={"top_k": 2}
    ).predict_json({"sentence": SENTENCE})
    assert [[w["word"] for w in p] for p in lines[0]["next_words"]] == [
        [w["word"] for w in p] for p in direct["next_words"]
    ]
