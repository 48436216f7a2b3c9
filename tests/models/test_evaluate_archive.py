"""`allennlp evaluate model.tar.gz corpus.txt` on tiny pretrained archives: cosine and next-word
accuracy for ELMo-C, perplexity for a softmax biLM."""

import json
import math
import sys

import pytest

from allennlp.commands import main

from tests import PROJECT_ROOT
from tests.helpers import LM_DATA


def evaluate(monkeypatch, archive, tmp_path, *options: str) -> dict:
    monkeypatch.chdir(PROJECT_ROOT)  # the archives record their files relative to it
    metrics = tmp_path / "metrics.json"
    argv = ["allennlp", "evaluate", str(archive), str(LM_DATA / "dev.txt"), "--output-file",
            str(metrics), "--include-package", "allennlp_elmo_c", *options]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    main(prog="allennlp")
    return json.loads(metrics.read_text())


def test_evaluate_elmo_c_archive(monkeypatch, elmo_c_archive, tmp_path):
    # The archive's training-time candidate list is never read from an archive (a received file
    # like any other, docs/security.md): given on the command line, next-word accuracy too.
    words = json.dumps({"model.nearest_neighbour_words": str(LM_DATA / "candidates.txt")})
    metrics = evaluate(monkeypatch, elmo_c_archive, tmp_path, "-o", words)
    for direction in ("forward", "backward"):
        assert -1.0 <= metrics[f"{direction}_cosine"] <= 1.0
        assert 0.0 <= metrics[f"{direction}_nn_accuracy"] <= 1.0
        # The cosine loss is 1 - cosine.
        assert metrics[f"{direction}_loss"] == pytest.approx(1 - metrics[f"{direction}_cosine"])
    assert "forward_perplexity" not in metrics


def test_evaluate_softmax_archive(monkeypatch, elmo_softmax_archive, tmp_path):
    metrics = evaluate(monkeypatch, elmo_softmax_archive, tmp_path)
    for direction in ("forward", "backward"):
        loss = metrics[f"{direction}_loss"]
        assert metrics[f"{direction}_perplexity"] == pytest.approx(math.exp(loss))
        assert f"{direction}_cosine" not in metrics

