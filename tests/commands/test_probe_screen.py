"""`allennlp probe-screen`: entity F1 against AllenNLP's own span reader, the readers, and every
task's probe through a tiny biLM at fixture size."""
import argparse
import random
import shutil

import numpy
import pytest
from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_utils.span_utils import bio_tags_to_spans

from allennlp_elmo_c.commands import probe_screen
from tests import FIXTURES_ROOT

TASK_DATA = FIXTURES_ROOT / "data"


def load_screen():
    return probe_screen


def run_screen(argv):
    """The command's own parser and body, in this process."""
    parser = argparse.ArgumentParser()
    probe_screen.add_screen_arguments(parser)
    return probe_screen.screen(parser.parse_args(argv))


def test_entity_f1_of_the_item_counts_against_allennlp_bio_spans():
    screen = load_screen()
    rng = random.Random(0)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    gold = [[rng.choice(tags) for _ in range(rng.randint(0, 12))] for _ in range(300)]
    guessed = [[t if rng.random() < 0.7 else rng.choice(tags) for t in s] for s in gold]
    tp = guessed_count = real = 0
    for g, p in zip(gold, guessed):
        gold_spans = {(kind, span) for kind, span in bio_tags_to_spans(g)}
        predicted_spans = {(kind, span) for kind, span in bio_tags_to_spans(p)}
        tp += len(gold_spans & predicted_spans)
        guessed_count += len(predicted_spans)
        real += len(gold_spans)
    precision, recall = tp / guessed_count, tp / real

    def entity_f1(gold, predicted):
        counts = numpy.asarray(screen.item_counts("ner", gold, predicted), dtype=float).reshape(-1, 3)
        return screen.items_score("ner", counts.sum(0))

    assert entity_f1(gold, guessed) == pytest.approx(2 * precision * recall / (precision + recall))
    assert entity_f1(gold, gold) == 1.0
    assert entity_f1([["O"]], [["O"]]) == 0.0


def test_readers(tmp_path):
    screen = load_screen()
    ner = screen.read_conll(TASK_DATA / "conll2003.txt")
    assert ner[0] == (["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
                      ["I-ORG", "O", "I-MISC", "O", "O", "O", "I-MISC", "O", "O"])  # fmt: skip
    trees = screen.read_trees(TASK_DATA / "sst5.txt")
    assert trees[1] == (["The", "plot", "never", "comes", "together", "."], "1")
    assert screen.read_jsonl(TASK_DATA / "sentiment.jsonl")[0] == (
        ["A", "small", "movie", "with", "a", "big", "impact", "."], "fresh")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ConfigurationError, match="no tagged sentences"):
        screen.read_conll(empty)
    with pytest.raises(ConfigurationError, match="no train.txt in it"):
        screen.load_data({"pos": str(tmp_path)}, {})
    with pytest.raises(ConfigurationError, match="unknown screen task 'parse'"):
        screen.load_data({"parse": str(tmp_path)}, {})


def test_every_task_probed_through_a_tiny_bilm(elmo_c_archive, tmp_path):
    screen = load_screen()
    directories = {}
    for task, source, suffix in (("ner", "conll2003.txt", ".txt"), ("sst5", "sst5.txt", ".txt"),
                                 ("sentiment", "sentiment.jsonl", ".jsonl")):  # fmt: skip
        directory = tmp_path / task
        directory.mkdir()
        for split in ("train", "dev"):
            shutil.copy(TASK_DATA / source, directory / f"{split}{suffix}")
        directories[task] = str(directory)
    pos = tmp_path / "pos"
    pos.mkdir()
    for split in ("train", "dev"):
        (pos / f"{split}.txt").write_text("the###at dog###nn runs###vbz\na###at cat###nn sat###vbd\n")
    directories["pos"] = str(pos)
    out = tmp_path / "screen.json"
    argv = ["--archive", f"tiny={elmo_c_archive}", "--out", str(out), "--max-iter", "50"]
    for task, directory in directories.items():
        argv += ["--task", f"{task}={directory}"]
    results = run_screen(argv)
    tasks = results["tiny"]["tasks"]
    assert set(tasks) == {"pos", "ner", "sst5", "sentiment"}
    for task, probes in tasks.items():
        assert set(probes) == {screen.WITH_BILM, screen.FASTTEXT}, task
        for result in probes.values():
            assert 0.0 <= result["score"] <= 1.0
            assert "predictions" not in result
            # The per-item counts sum to the probe's own score.
            sums = numpy.asarray(result["items"]).sum(0)
            assert screen.items_score(task, sums) == pytest.approx(result["score"]), task
    # Trained and scored on the same sentences, the POS probe fits them all.
    assert tasks["pos"][screen.WITH_BILM]["score"] == 1.0
    assert out.is_file()


def test_pair_features_are_u_v_difference_and_product_of_averaged_sentences(monkeypatch):
    screen = load_screen()

    class Representations:
        """Stands in for a biLM: `features` reads `token_features`, stubbed below."""

    pairs = [(["a", "b"], ["c"]), (["d"], ["e", "f", "g"])]
    vectors = {"a": [1.0, 2.0], "b": [3.0, 0.0], "c": [2.0, 5.0], "d": [0.0, 1.0],
               "e": [1.0, 1.0], "f": [2.0, 1.0], "g": [3.0, 4.0]}  # fmt: skip

    def token_features(representations, sentences, batch_size):
        rows = numpy.array([vectors[w] for s in sentences for w in s])
        return {screen.FASTTEXT: rows, screen.AVERAGE: 10 * rows}

    monkeypatch.setattr(screen, "token_features", token_features)
    found = screen.pair_features(Representations(), pairs, 2)
    u, v = numpy.array([2.0, 1.0]), numpy.array([2.0, 5.0])  # the first pair's averages
    assert numpy.allclose(found[screen.FASTTEXT][0], numpy.concatenate([u, v, abs(u - v), u * v]))
    u, v = numpy.array([0.0, 1.0]), numpy.array([2.0, 2.0])
    assert numpy.allclose(found[screen.FASTTEXT][1], numpy.concatenate([u, v, abs(u - v), u * v]))
    # With the biLM: each sentence's fastText and layer average side by side, then the same four.
    u, v = numpy.array([0.0, 1.0, 0.0, 10.0]), numpy.array([2.0, 2.0, 20.0, 20.0])
    assert numpy.allclose(found[screen.WITH_BILM][1], numpy.concatenate([u, v, abs(u - v), u * v]))


def test_stsb_pairs_probed_through_a_tiny_bilm(elmo_c_archive, tmp_path):
    screen = load_screen()
    directory = tmp_path / "stsb"
    directory.mkdir()
    for split in ("train", "dev"):
        shutil.copy(TASK_DATA / "stsb.tsv", directory / f"{split}.tsv")
    pairs = screen.read_pairs(directory / "train.tsv")
    assert pairs[3] == ((["She", "said", '"', "hello", '"', "to", "him", "."],
                         ["She", "told", "him", '"', "hello", '"', "."]), "equivalent")  # fmt: skip
    argv = ["--archive", f"tiny={elmo_c_archive}", "--task", f"stsb={directory}", "--max-iter", "50"]
    probes = run_screen(argv)["tiny"]["tasks"]["stsb"]
    assert set(probes) == {screen.WITH_BILM, screen.FASTTEXT}
    assert all(0.0 <= result["score"] <= 1.0 for result in probes.values())


def screen_result(items_by_task, row="with"):
    return {"tasks": {task: {row: {"items": items, "score": sum(i[0] for i in items) / sum(i[1] for i in items)}}
                      for task, items in items_by_task.items()}}  # fmt: skip


def test_paired_bootstrap_against_resampling_by_hand():
    """Two systems scored on the same items: the bootstrap's interval against a plain loop that
    draws the items with replacement and recomputes each task's score from its definition
    (entity F1 from span counts, accuracy from correct tokens), with the same draws."""
    screen = load_screen()
    rng = numpy.random.default_rng(1)
    pos = [[int(rng.integers(0, 12)), 12] for _ in range(40)]
    ner = [[int(tp), int(tp + rng.integers(0, 2)), int(tp + rng.integers(0, 2))]
           for tp in rng.integers(0, 3, size=30)]  # fmt: skip
    sst = [[int(c), 1] for c in rng.integers(0, 2, size=50)]
    a = screen_result({"pos": pos, "ner": ner, "sst5": sst})
    shifted = [[max(c - 1, 0), n] for c, n in pos]
    b = screen_result({"pos": shifted, "ner": [[0, g, r] for _, g, r in ner],
                       "sst5": [[1 - c, 1] for c, _ in sst]})  # fmt: skip
    tasks = ("pos", "ner", "sst5")
    found = screen.paired_bootstrap(a, b, tasks, "with", "with", resamples=300, seed=7)

    def f1(rows):
        tp, guessed, real = (sum(r[i] for r in rows) for i in range(3))
        return 0.0 if tp == 0 else 2 * (tp / guessed) * (tp / real) / (tp / guessed + tp / real)

    def accuracy(rows):
        return sum(r[0] for r in rows) / sum(r[1] for r in rows)

    score = {"pos": accuracy, "ner": f1, "sst5": accuracy}
    draws = numpy.random.default_rng(7)
    by_hand = numpy.zeros(300)
    for task in tasks:
        mine, theirs = a["tasks"][task]["with"]["items"], b["tasks"][task]["with"]["items"]
        n = len(mine)
        weights = draws.multinomial(n, numpy.full(n, 1.0 / n), size=300)
        for r, counts in enumerate(weights):
            drawn = [i for i, k in enumerate(counts) for _ in range(k)]
            by_hand[r] += score[task]([mine[i] for i in drawn]) - score[task]([theirs[i] for i in drawn])
    by_hand /= len(tasks)
    assert found["low"] == pytest.approx(numpy.percentile(by_hand, 2.5))
    assert found["high"] == pytest.approx(numpy.percentile(by_hand, 97.5))
    point = sum(score[t](a["tasks"][t]["with"]["items"]) - score[t](b["tasks"][t]["with"]["items"])
                for t in tasks) / 3  # fmt: skip
    assert found["difference"] == pytest.approx(point)
    assert found["low"] <= found["difference"] <= found["high"]
    # A system against itself: no difference and no spread.
    assert screen.paired_bootstrap(a, a, tasks, "with", "with") == {"difference": 0.0, "low": 0.0, "high": 0.0}
    with pytest.raises(ValueError, match="different items"):
        screen.paired_bootstrap(a, screen_result({"pos": pos[:5], "ner": ner, "sst5": sst}),
                                tasks, "with", "with")  # fmt: skip


def test_each_later_archive_is_set_against_the_first(monkeypatch, capsys):
    """Two biLMs: the second's result carries its mean-score difference from the first (the
    second minus the first, accuracy counted by hand) with an interval around it, and the line
    that says so is printed; the first carries none."""
    screen = load_screen()
    pos_first = [[3, 4], [2, 4], [4, 4]]  # 9 of 12
    pos_second = [[4, 4], [3, 4], [4, 4]]  # 11 of 12
    sst_first, sst_second = [[1, 1], [0, 1], [0, 1], [1, 1]], [[1, 1], [0, 1], [1, 1], [1, 1]]
    results = {
        "first.tar.gz": screen_result({"pos": pos_first, "sst5": sst_first}, screen.WITH_BILM),
        "second.tar.gz": screen_result({"pos": pos_second, "sst5": sst_second}, screen.WITH_BILM),
    }
    monkeypatch.setattr(screen, "load_data", lambda tasks, limits: {task: ([], []) for task in tasks})
    monkeypatch.setattr(screen, "screen_archive", lambda path, *rest, **named: results[path])
    found = run_screen(["--archive", "cosine=first.tar.gz", "--archive", "in_batch=second.tar.gz",
                        "--task", "pos=p/", "--task", "sst5=s/"])  # fmt: skip
    by_hand = ((11 / 12 - 9 / 12) + (3 / 4 - 2 / 4)) / 2
    against = found["in_batch"]["against"]
    assert against["archive"] == "cosine"
    assert against["difference"] == pytest.approx(by_hand)
    assert against["low"] <= by_hand <= against["high"]
    assert "against" not in found["cosine"]
    printed = capsys.readouterr().out
    assert f"in_batch - cosine, mean over pos, sst5: {100 * by_hand:+.2f} points" in printed
