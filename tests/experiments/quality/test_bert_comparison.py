"""
The BERT rows of `experiments/quality/flair_comparison.py` at fixture size: a WordPiece vocabulary
and a tiny BERT pretrained from scratch to two CPU-time budgets with two seeds, its tagger's
embedding setting chosen on dev, NER and POS rows beside ELMo-C's and the comparison rendered; a
longer budget goes on from the run's checkpoint (`bert_lm.train_bert`).
"""

import json

import numpy

from experiments.quality import flair_comparison
from experiments.quality.bert_lm import Blocks
from tests import FIXTURES_ROOT
from tests.experiments.quality.pipeline_fixtures import MINUTES, TINY_BUDGETED

SYSTEMS = ("bert_tiny", "elmo_c_in_batch")
SETTINGS = ("first_top", "mean_all")


def bert_argv(tmp_path, inputs, minutes=MINUTES):
    return [
        "--out", str(tmp_path / "out"), "--data-dir", str(tmp_path / "data"),
        "--corpus-dir", str(inputs.corpus), "--shared-data", str(inputs.shared),
        "--fasttext-bin", str(FIXTURES_ROOT / "fasttext" / "tiny.bin"), "--fasttext-dim", "16",
        "--systems", ",".join(SYSTEMS), "--minutes", minutes, "--pretrain-seeds", "2",
        "--pretrain-seeds-at", minutes.split(",")[0], "--seeds", "1",
        "--pretrain-overrides", json.dumps(TINY_BUDGETED), "--bert-vocabulary-size", "120",
        "--bert-block-size", "16", "--bert-batch-size", "2", "--bert-warmup-steps", "2",
        "--bert-embeddings", ",".join(SETTINGS), "--tagger-hidden", "8", "--tagger-epochs", "1",
        "--tagger-batch-size", "4", "--tasks", "ner,pos", "--brown-source", str(inputs.brown),
        "--report", str(tmp_path / "QUALITY.md"),
    ]  # fmt: skip


def test_the_bert_is_pretrained_tagged_and_compared_and_a_longer_budget_goes_on_from_its_run(
    tmp_path, inputs, in_process, monkeypatch
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "QUALITY.md").write_text("# Quality\n")
    data = flair_comparison.main(bert_argv(tmp_path, inputs))
    budgets = [f"{m:g}" for m in sorted(float(m) for m in MINUTES.split(","))]

    assert list(data["cells"]["bert_tiny"]) == budgets
    for minutes in budgets:  # (every seed at both budgets: `--pretrain-seeds-at`)
        for task in ("ner", "pos"):
            found = data["cells"]["bert_tiny"][minutes][task]
            assert found["pretrain_seeds"] == [1, 2] and len(found["test"]) == 2
            assert all(0.0 <= score <= 1.0 for score in found["test"] + found["dev"])
    entries = [e for e in data["pretraining"] if e["system"] == "bert_tiny"]
    assert len(entries) == 4
    for entry in entries:  # WordPieces read, and the words they hold
        assert entry["tokens"] > 0 and entry["steps"] > 0
        assert entry["cpu_seconds"] >= 60 * entry["minutes"] * 0.999
        assert entry["words_per_direction"][0] == entry["words_per_direction"][1] > 0
    for task in ("ner", "pos"):  # the setting chosen on dev from the two tried
        chosen = data["bert_embeddings"]["bert_tiny"][task]
        assert chosen["chosen"] in SETTINGS and set(chosen["dev"]) == set(SETTINGS)
        runs = data["cells"]["bert_tiny"][budgets[-1]][task]["runs"]
        assert len(runs) == 2
    assert data["bert_lm"]["vocabulary_size"] == 120
    snapshot = json.loads((tmp_path / "out" / "steps" / "pretrain-bert_tiny-seed1.json").read_text())
    model = snapshot["budgets"][budgets[0]]["model"]
    assert {"config.json", "vocab.txt", "tokenizer_config.json"} <= {
        path.name for path in (tmp_path / "out" / "runs" / "pretrain-bert_tiny-seed1").glob(
            f"budget-{budgets[0]}min/*")}  # fmt: skip
    assert model.endswith(f"budget-{budgets[0]}min")

    report = (tmp_path / "QUALITY.md").read_text()
    assert "BERT from scratch (2 layers, hidden 128, masked LM)" in report
    assert "and a small BERT at equal CPU time" in report
    assert "ELMo-C and Flair against the BERT at the same budget" in report
    assert "| ELMo-C (continuous, in-batch softmax) |" in report
    assert f"- bert_tiny: `{data['bert_embeddings']['bert_tiny']['ner']['chosen']}`" in report

    # `--finished-only` tables what other runs finished (here, all of this one) and runs nothing.
    steps = sorted(path.name for path in (tmp_path / "out" / "steps").iterdir())
    argv = bert_argv(tmp_path, inputs)
    argv[argv.index("--systems") + 1] = "bert_mini,bert_tiny,elmo_c_in_batch"
    argv[argv.index("--report") : argv.index("--report") + 2] = ["--finished-only"]
    argv += ["--json", str(tmp_path / "finished.json")]
    finished = flair_comparison.main(argv)
    assert finished["cells"] == data["cells"] and "bert_mini" not in finished["cells"]
    assert sorted(path.name for path in (tmp_path / "out" / "steps").iterdir()) == steps
    assert "--finished-only" not in finished["command"]

    # A longer budget: the BERT's runs go on from their checkpoints, the shorter snapshots kept.
    run = tmp_path / "out" / "runs" / "pretrain-bert_tiny-seed1"
    kept = (run / f"budget-{budgets[0]}min.json").read_text()
    longer = ",".join(budgets + ["0.01"])
    argv = bert_argv(tmp_path, inputs, longer)
    argv[argv.index("--systems") + 1] = "bert_tiny"
    again = flair_comparison.main(argv)
    assert (run / f"budget-{budgets[0]}min.json").read_text() == kept
    records = json.loads((tmp_path / "out" / "steps" / "pretrain-bert_tiny-seed1.json").read_text())
    assert list(records["budgets"]) == budgets + ["0.01"]
    assert records["budgets"]["0.01"]["steps"] > records["budgets"][budgets[-1]]["steps"]
    assert list(again["cells"]["bert_tiny"]) == budgets + ["0.01"]


def test_the_blocks_read_every_block_once_an_epoch_in_the_same_order_after_a_restart():
    class Tokenizer:
        cls_token_id, sep_token_id = 1, 2

    ids = numpy.arange(10, 10 + 7 * 4 + 3, dtype=numpy.int32)  # 7 blocks of 4 and a rest
    settings = {"block_size": 6, "batch_size": 2}
    blocks = Blocks(ids, Tokenizer(), settings, seed=3)
    assert blocks.per_epoch == 3
    epoch = [row for step in range(3) for row in blocks.batch(step)]
    assert all(row[0] == 1 and row[-1] == 2 and len(row) == 6 for row in epoch)
    starts = sorted(row[1] for row in epoch)
    assert len(set(starts)) == 6 and set(starts) <= set(range(10, 38, 4))
    assert Blocks(ids, Tokenizer(), settings, seed=3).batch(4) == blocks.batch(4)
    assert Blocks(ids, Tokenizer(), settings, seed=4).batch(0) != blocks.batch(0)
