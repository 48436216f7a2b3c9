"""`experiments/quality/layer_probe.py` at fixture size: the report's structure, the majority baseline
against a hand count, and an unreadable archive reported without stopping the others."""
import json
import random

import pytest

from experiments.quality import layer_probe
from tests.helpers import TINY_ELMO_C_DIM, TINY_FASTTEXT

TRAIN = [
    "the###at dog###nn runs###vbz",
    "the###at run###nn ended###vbd",
    "dogs###nns run###vb fast###rb",
    "a###at dog###vb runs###vbz .###.",
]
# Training counts: at 3 (the overall majority), nn 2, vb 2, vbz 2, the rest once. `dog` and `run`
# are nn once and vb once: the tie goes to the tag seen first, nn. `cat` is unseen: at.
DEV = ["the###at dog###vb runs###vbz", "cat###nn run###nn .###."]
# Right: the/at, runs/vbz, run/nn, ./. ; wrong: dog (nn for vb), cat (at for nn).
MAJORITY = 4 / 6


def load_layer_probe():
    return layer_probe


@pytest.fixture
def data_dir(tmp_path):
    directory = tmp_path / "pos"
    directory.mkdir()
    (directory / "train.txt").write_text("\n".join(TRAIN) + "\n\n")
    (directory / "dev.txt").write_text("\n".join(DEV) + "\n")
    (directory / "test.txt").write_text("never###read\n")
    return directory


def test_majority_baseline_by_hand(data_dir):
    probe = load_layer_probe()
    train = probe.read_tagged(data_dir / "train.txt")
    dev = probe.read_tagged(data_dir / "dev.txt")
    assert len(train) == 4 and dev[1] == (["cat", "run", "."], ["nn", "nn", "."])
    assert probe.majority_accuracy(train, dev) == pytest.approx(MAJORITY)
    # Two lines: at 2 (the overall majority), `.` unseen too: the, runs, run are right.
    assert probe.majority_accuracy(train[:2], dev) == pytest.approx(3 / 6)


def test_every_layer_probed_and_reported(elmo_c_archive, data_dir, tmp_path, capsys):
    probe = load_layer_probe()
    out = tmp_path / "probe.json"
    argv = [
        "--data-dir", str(data_dir), "--archive", f"tiny={elmo_c_archive}",
        "--archive", f"broken={tmp_path / 'missing.tar.gz'}", "--fasttext", str(TINY_FASTTEXT),
        "--halves", "--max-train-sentences", "3", "--out", str(out),
    ]  # fmt: skip
    results = probe.main(argv)
    assert json.loads(out.read_text()) == results
    assert results["train_sentences"] == 3 and results["train_tokens"] == 9
    assert results["dev_tokens"] == 6
    assert results["majority_accuracy"] == pytest.approx(3 / 6)  # `.` unseen: at
    assert "does not exist" in results["archives"]["broken"]["error"]
    tiny = results["archives"]["tiny"]
    assert tiny["fasttext"] == str(TINY_FASTTEXT)
    layers = ["layer 0 (input projection, no context)", "layer 1", "layer 2"]
    expected = ["fastText (the biLM's input)", *layers, "average of all layers"] + [
        f"layer {k} {half} half" for k in range(3) for half in ("forward", "backward")
    ]
    assert list(tiny["probes"]) == expected
    dims = {name: entry["dim"] for name, entry in tiny["probes"].items()}
    assert dims["fastText (the biLM's input)"] == 16
    assert all(dims[name] == TINY_ELMO_C_DIM for name in layers + ["average of all layers"])
    assert dims["layer 2 backward half"] == TINY_ELMO_C_DIM // 2
    for entry in tiny["probes"].values():
        assert 0.0 <= entry["accuracy"] <= 1.0
    table = capsys.readouterr().out
    assert table.startswith("| representation | tiny | broken |\n")
    assert "| majority tag of the word | 50.00 | 50.00 |" in table
    assert "| layer 1 | " in table and "| – |" in table  # nothing for the broken archive
    assert "broken: not probed (" in table


def test_only_a_context_layer_sees_the_previous_word(elmo_c_archive, tmp_path):
    # Each tag names the class of the PREVIOUS word (the word itself is drawn independently), so
    # a representation without context cannot beat the majority tag, and the forward LSTM (which
    # has read the previous word) can: by 13 to 19 points on four data draws with the fixture
    # biLM, which is trained with fixed seeds.
    probe = load_layer_probe()
    rng = random.Random(0)
    first, second = ["council", "storms"], ["schools", "friday"]
    data = tmp_path / "previous"
    data.mkdir()
    for split, count in (("train", 200), ("dev", 100)):
        lines = []
        for _ in range(count):
            words = rng.choices(first + second, k=rng.randint(4, 10))
            tags = ["start"] + ["a" if word in first else "b" for word in words[:-1]]
            lines.append(" ".join(f"{w}###{t}" for w, t in zip(words, tags)))
        (data / f"{split}.txt").write_text("\n".join(lines) + "\n")
    argv = ["--data-dir", str(data), "--archive", f"tiny={elmo_c_archive}",
            "--fasttext", str(TINY_FASTTEXT), "--halves"]  # fmt: skip
    results = probe.main(argv)
    accuracy = {name: e["accuracy"] for name, e in results["archives"]["tiny"]["probes"].items()}
    floor = results["majority_accuracy"]
    assert accuracy["fastText (the biLM's input)"] <= floor + 0.02
    assert accuracy["layer 0 (input projection, no context)"] <= floor + 0.02
    assert accuracy["layer 1 forward half"] >= floor + 0.08
