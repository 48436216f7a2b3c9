"""`experiments/quality/sentence_end.py` at fixture size: plumbing and report format only."""
import json

from experiments.quality import sentence_end
from tests.helpers import DEMO_AT_FIXTURE_SIZE, TINY_FASTTEXT, make_demo_data_dir

POS = "The###at council###nn met###vbd .###.\nIt###pps rained###vbd .###.\n"


def load_script():
    return sentence_end


def test_both_variants_pretrain_tag_and_report(tmp_path, monkeypatch):
    script = load_script()
    data = make_demo_data_dir(tmp_path / "data")

    def build_pos(directory, source, limits):  # the Brown tagging data, at fixture size
        directory.mkdir(parents=True, exist_ok=True)
        for split in ("train", "dev", "test"):
            (directory / f"{split}.txt").write_text(POS)
        return {"train": 2, "dev": 2, "test": 2}

    monkeypatch.setattr(script, "build_brown_pos", build_pos)
    monkeypatch.setattr(script, "brown_source", lambda packages: None)
    monkeypatch.setattr(script, "train_fasttext", lambda *args, **kwargs: TINY_FASTTEXT)
    monkeypatch.setattr(script, "write_candidates", lambda vectors, path: path)
    report = tmp_path / "SENTENCE_END.md"
    pretrain = dict(DEMO_AT_FIXTURE_SIZE, **{"trainer.num_epochs": 1,
                                             "data_loader.batches_per_epoch": 2})  # fmt: skip
    task = {"trainer.num_epochs": 1}
    script.main(["--data-dir", str(data), "--out", str(tmp_path / "out"), "--seeds", "1",
                 "--report", str(report), "--pretrain-overrides", json.dumps(pretrain),
                 "--task-overrides", json.dumps(task)])  # fmt: skip
    text = report.read_text()
    assert "| hashed | `</S>` |" in text and "| fasttext_eos | `</s>` |" in text
    assert "All-zero fastText vectors" in text
    eos = json.loads((tmp_path / "out" / "pretrain-fasttext_eos-seed1" / "config.json").read_text())
    assert eos["dataset_reader"]["end_tokens"] == ["</s>"]
    hashed = json.loads((tmp_path / "out" / "pretrain-hashed-seed1" / "config.json").read_text())
    assert hashed["dataset_reader"]["end_tokens"] == ["</S>"]
