"""
`experiments/quality/flair_comparison.py` end to end at fixture size: Flair's character LMs
(hidden 8) and two ELMo-C systems pretrained to two tiny CPU-time budgets with two pretraining
seeds, Flair's tagger on each snapshot and on fastText alone with two seeds for NER and POS, the
table's JSON and the report's section rendered from it; a rerun skips every finished run.
"""

import json

import pytest

from experiments.quality import flair_comparison
from experiments.quality.flair_lm import BudgetClock
from tests import FIXTURES_ROOT
from tests.experiments.quality.pipeline_fixtures import EARLIER, MINUTES, TINY_BUDGETED

SYSTEMS = ("flair_8", "elmo_c_cosine", "elmo_c_in_batch")


def comparison_argv(tmp_path, inputs):
    return [
        "--out", str(tmp_path / "out"), "--data-dir", str(tmp_path / "data"),
        "--corpus-dir", str(inputs.corpus), "--shared-data", str(inputs.shared),
        "--fasttext-bin", str(FIXTURES_ROOT / "fasttext" / "tiny.bin"), "--fasttext-dim", "16",
        "--systems", ",".join(SYSTEMS), "--minutes", MINUTES, "--pretrain-seeds", "2",
        "--seeds", "2", "--pretrain-overrides", json.dumps(TINY_BUDGETED),
        "--flair-sequence-length", "10", "--flair-batch-size", "4", "--flair-splits", "2",
        "--flair-valid-characters", "100", "--tagger-hidden", "8", "--tagger-epochs", "1",
        "--tagger-batch-size", "4", "--tasks", "ner,pos", "--brown-source", str(inputs.brown),
        "--report", str(tmp_path / "QUALITY.md"),
    ]  # fmt: skip


def step_files(out):
    return {path.name: path.stat().st_mtime_ns for path in (out / "steps").glob("*.json")}


def test_the_comparison_tables_every_system_budget_and_seed_and_a_rerun_skips_finished_runs(
    tmp_path, inputs, in_process
):
    (tmp_path / "QUALITY.md").write_text(EARLIER)
    argv = comparison_argv(tmp_path, inputs)
    data = flair_comparison.main(argv)
    budgets = [f"{m:g}" for m in sorted(float(m) for m in MINUTES.split(","))]

    assert set(data["cells"]) == {"fasttext", *SYSTEMS}
    assert list(data["cells"]["fasttext"]) == ["0"]
    for system in SYSTEMS:
        assert list(data["cells"][system]) == budgets
        for minutes in budgets:
            assert list(data["cells"][system][minutes]) == ["ner", "pos"]
            for found in data["cells"][system][minutes].values():
                seeds = [1, 2] if minutes == budgets[-1] else [1]
                assert found["pretrain_seeds"] == seeds and found["task_seeds"] == [1, 2]
                assert len(found["test"]) == len(found["dev"]) == 2 * len(seeds)
                assert all(0.0 <= score <= 1.0 for score in found["test"] + found["dev"])
    assert data["finished_runs"] == data["expected_runs"] == 2 * 2 * (1 + 3 * 3)
    assert list(data["tasks"]) == ["ner", "pos"]
    for task, crf in (("ner", True), ("pos", False)):  # POS: Brown's many tags, no CRF
        assert {run["crf"] for run in data["cells"]["elmo_c_cosine"][budgets[0]][task]["runs"]} == {crf}
    # POS reads Brown's held-out genres: development and test are other text than training.
    assert all(data["tasks"]["pos"]["sentences"][split] > 0 for split in ("train", "dev", "test"))
    for entry in data["pretraining"]:
        # Each budget bought some text, in at least its CPU time (Flair: for both directions).
        assert entry["cpu_seconds"] >= 60 * entry["minutes"] * 0.999
        assert min(entry["words_per_direction"]) > 0
        assert ("characters" in entry) == entry["system"].startswith("flair")
    assert len(data["pretraining"]) == 3 * 3
    assert json.loads((tmp_path / "out" / "flair_comparison.json").read_text()) == data

    report = (tmp_path / "QUALITY.md").read_text()
    assert report.startswith(EARLIER)
    assert flair_comparison.BEGIN in report and "Partial" not in report
    assert "Flair char LMs (hidden 8, forward + backward)" in report
    rows = [line for line in report.splitlines() if line.startswith("| ELMo-C (continuous, in-batch")]
    assert [row.split(" | ")[1] for row in rows] == budgets * 2  # a row per budget and task
    assert "### POS (Brown, held-out genres) accuracy" in report and "| test accuracy |" in report

    # A rerun finds every step done, and repeats none; a tagger run whose result is gone reruns.
    before = step_files(tmp_path / "out")
    assert flair_comparison.main(argv)["cells"] == data["cells"]
    assert step_files(tmp_path / "out") == before
    gone = f"task-ner-elmo_c_cosine-{budgets[0]}min-p1-seed2.json"
    (tmp_path / "out" / "steps" / gone).unlink()
    flair_comparison.main(argv)
    after = step_files(tmp_path / "out")
    assert [name for name in after if after[name] != before.get(name)] == [gone]

    # The section renders from the JSON alone.
    (tmp_path / "again.md").write_text("")
    flair_comparison.main(argv[:-1] + [str(tmp_path / "again.md"), "--render-only"])
    section = report[report.index(flair_comparison.BEGIN):]
    assert (tmp_path / "again.md").read_text() == section
    # Another section of the same report, from another JSON, leaves the first one as it is.
    flair_comparison.main(argv + ["--render-only", "--section", "flair-comparison-pos"])
    both = (tmp_path / "QUALITY.md").read_text()
    assert both.startswith(report) and "<!-- report: flair-comparison-pos -->" in both
    # (Its title names the tasks, the budgets and the corpus: such sections differ in their anchors.)
    budgets = ", ".join(f"{m:g}" for m in sorted(float(m) for m in MINUTES.split(",")))
    tokens = f"{data['corpus']['train_tokens']:,}"
    title = ("## ELMo-C against Flair's contextual string embeddings at equal CPU time: NER and POS, "
             f"{budgets} CPU-minutes, {tokens}-token corpus\n")
    assert both.count(title) == 2


def test_the_budget_clock_leaves_out_evaluation_and_stops_after_the_last_budget():
    now = [0.0]
    written = []
    clock = BudgetClock([2.0, 5.0], lambda budget, c: written.append((budget, c.characters)),
                        clock=lambda: now[0])  # fmt: skip

    class Model:
        training = True

        def forward(self, data, hidden):
            return data

        def generate_text(self):
            now[0] += 100.0  # generation at a split's end is not training time

    class Trainer:
        def evaluate(self, *arguments):
            now[0] += 100.0

    class Batch:
        def numel(self):
            return 10

    model, trainer = Model(), Trainer()
    clock.install(model, trainer)
    for _ in range(3):  # batches at 0, 1 and 2 s: the 2 s budget is passed after two
        model.forward(Batch(), None)
        now[0] += 1.0
    assert written == [(2.0, 20)] and clock.characters == 30
    trainer.evaluate()
    model.generate_text()
    model.forward(Batch(), None)  # at 3 s of training time
    assert clock.seconds == pytest.approx(3.0)
    now[0] += 2.0
    with pytest.raises(KeyboardInterrupt):
        model.forward(Batch(), None)
    assert written[-1] == (5.0, 40) and clock.seconds == pytest.approx(5.0)


def test_the_fasttext_row_holds_fasttexts_vectors_also_for_words_it_never_saw():
    import numpy
    from flair.data import Sentence

    from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
    from experiments.quality.flair_tagger import fasttext_word_embeddings

    vectors = FIXTURES_ROOT / "fasttext" / "tiny.bin"
    model = FastTextBin.load(vectors)
    words = [model.words[1], "Zyxwvut"]  # one of its words, one built from subwords alone
    assert words[1] not in model.words
    embeddings = fasttext_word_embeddings(str(vectors), words, "fasttext")
    sentence = Sentence(words)
    embeddings.embed(sentence)
    for token, word in zip(sentence, words):
        found = token.get_embedding(["fasttext"]).numpy()
        numpy.testing.assert_allclose(found, model.word_vector(word), rtol=1e-6)
        assert numpy.abs(found).sum() > 0


def test_a_pos_tag_the_training_split_lacks_is_an_error_not_a_crash(tmp_path):
    from experiments.quality.flair_tagger import tagger_step, write_pos_columns

    brown = tmp_path / "brown"
    brown.mkdir()
    (brown / "train.txt").write_text("the###at dog###nn ran###vbd\nthe###at cat###nn sat###vbd\n")
    (brown / "dev.txt").write_text("the###at dog###nn sat###vbd !###.\n")  # `.`: unseen
    (brown / "test.txt").write_text("the###at dog###nn ran###vbd !###.\n")
    write_pos_columns(str(brown), tmp_path / "columns")
    assert (tmp_path / "columns" / "test.txt").read_text() == "the at\ndog nn\nran vbd\n! .\n\n"
    settings = {"hidden_size": 4, "max_epochs": 1, "mini_batch_size": 2, "learning_rate": 0.1}
    vectors = {"vectors": str(FIXTURES_ROOT / "fasttext" / "tiny.bin")}
    result = tagger_step("pos", {"dir": str(tmp_path / "columns")}, vectors, [], 1,
                         tmp_path / "run", settings)  # fmt: skip
    assert result["crf"] is False and 0.0 <= result["test"] <= 0.75  # the unseen tag is wrong
