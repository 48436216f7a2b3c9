"""`experiments/quality/adaptation.py` end to end at fixture size: plumbing and report format only."""
import json
import zlib

from experiments.quality import adaptation
from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.experiments.corpora.pretraining_fixtures import NPM_FILES, PRETRAINING_FIXTURES, fake_registry, tarball
from tests.helpers import TINY_FASTTEXT

LM_DATA = FIXTURES_ROOT / "data" / "lm"


def load_adaptation():
    return adaptation


def test_detokenize():
    adaptation = load_adaptation()
    tokens = ["``", "It", "is", "n't", "(", "so", ")", ",", "''", "he", "said", "."]
    assert adaptation.detokenize(tokens) == "\"It isn't (so),\" he said."


def test_adaptation_benchmark_end_to_end_at_fixture_size(tmp_path, monkeypatch, in_process):
    monkeypatch.chdir(PROJECT_ROOT)
    monkeypatch.delenv("ELMO_C_FASTTEXT", raising=False)
    adaptation = load_adaptation()
    from experiments.corpora import pretraining_corpus
    from experiments.corpora.brown_pos import build_brown_pos

    # A third of the documents in the validation split (the real 1% leaves fixtures none).
    monkeypatch.setattr(pretraining_corpus, "is_validation",
                        lambda source, doc_id: zlib.crc32(f"{source}/{doc_id}".encode()) % 3 == 0)
    data_dir = fake_registry(tmp_path / "data")  # every package cached: the build is offline

    brown_files = {p.name: p.read_bytes() for p in (PRETRAINING_FIXTURES / "brown").iterdir()}
    # Fiction genres for the adaptation corpus, and the POS task's dev genre.
    members = {f"package/{name}": data for name, data in brown_files.items()}
    members["package/cn01"] = brown_files["cl01"]
    lines = [line.split() for line in (LM_DATA / "sentences.txt").read_text().splitlines() if line]
    fiction = ["ck01", "ck02", "ck03", "cm01", "cm02", "cr01", "cr02", "cr03"]
    for number, name in enumerate(fiction):
        sentences = lines[number::len(fiction)]
        text = "\n\n".join(" ".join(f"{word}/nn" for word in words) for words in sentences)
        members[f"package/{name}"] = text.encode()
    # The registry's Brown package, with fiction the source corpus must leave out.
    brown = tarball(data_dir / "packages" / NPM_FILES["brown"], members)
    pos_dir = tmp_path / "quality" / "tasks" / "pos"
    counts = build_brown_pos(pos_dir, brown, {"train": 3, "dev": None, "test": None})
    # A finished quality.py run: the steps this benchmark reads.
    quality_steps = tmp_path / "quality" / "steps"
    quality_steps.mkdir(parents=True)
    for name, result in {
        "fasttext": {"vectors": str(TINY_FASTTEXT), "candidates": str(LM_DATA / "candidates.txt")},
        "data-pos": {"dir": str(pos_dir), "sentences": counts},
        "task-pos-fasttext-seed1": {"dev": 0.5, "test": 0.25},
        "task-pos-elmo_c_cosine-tokens-seed1": {"dev": 0.75, "test": 0.5},
    }.items():
        (quality_steps / f"{name}.json").write_text(json.dumps(result))
    out, report = tmp_path / "adapt", tmp_path / "QUALITY.md"
    report.write_text("# Existing report\n\nkept as it is\n")
    tiny = {"data_loader.batch_size": 2, "validation_data_loader.batch_size": 4}
    tiny_source = {"model.contextualizer.projection_size": 4, "model.contextualizer.cell_size": 8,
                   "data_loader.batch_size": 4, "validation_data_loader.batch_size": 8}  # fmt: skip
    argv = [
        "--data-dir", str(data_dir), "--quality", str(tmp_path / "quality"),
        "--out", str(out), "--report", str(report), "--fasttext-dim", "16",
        "--source-tokens", "2560", "--pretrain-overrides", json.dumps(tiny_source),
        "--fiction-sources", "brown", "--validation-fraction", "0.45", "--steps", "3",
        "--seeds", "1", "--task-epochs", "1", "--eval-batch-size", "4",
        "--adapt-overrides", json.dumps(tiny),
        "--task-overrides", json.dumps({"data_loader.batch_size": 4}),
    ]  # fmt: skip
    adaptation.main(argv)
    text = report.read_text()
    assert text.startswith("# Existing report\n\nkept as it is\n")
    assert text.count(adaptation.BEGIN) == 1 and text.count(adaptation.END) == 1
    for expected in ("## Adapting to a new domain", "| source (unadapted) | 0.",
                     "| adapted to fiction | 0.", "Source corpus (no fiction)", "(n=1)",
                     "| fastText only (no context) | 25.00 (n=1) | 50.00 (n=1) |",
                     "fiction included), above | 50.00 (n=1) |"):  # fmt: skip
        assert expected in text, expected
    assert "running" not in text
    steps = {path.stem for path in (out / "steps").glob("*.json")}
    assert steps == {
        "source-corpus", "pretrain-source", "adapt-corpus", "adapt-eval-source",
        "adapt-eval-source-home", "adapt-seed1", "adapt-eval-seed1", "adapt-eval-seed1-home",
        "task-pos-elmo_c_cosine-adapted-seed1", "task-pos-elmo_c_cosine-source-seed1",
    }  # fmt: skip
    # The source corpus: no Brown fiction genre, no novels, both splits non-empty.
    home = json.loads((out / "steps" / "source-corpus.json").read_text())
    assert home["brown_genres"] == ["a", "j"]
    assert not {"austen", "moby_dick"} & set(home["sources"])
    assert {"news", "sotu", "wikipedia"} <= set(home["sources"])
    assert home["files"]["train.txt"]["tokens"] > 0 and home["files"]["validation.txt"]["tokens"] > 0
    source = json.loads((out / "steps" / "pretrain-source.json").read_text())
    assert source["batches"] == 2 and source["tokens"] == 2560
    corpus = json.loads((out / "steps" / "adapt-corpus.json").read_text())
    assert corpus["sources"]["brown"]["documents"] == len(fiction)
    assert corpus["splits"]["train"]["tokens"] > 0 and corpus["splits"]["validation"]["tokens"] > 0
    # The POS training sentences are not in the adaptation corpus.
    assert corpus["sources"]["brown"]["dropped_pos_training_sentences"] >= 0
    adapted = json.loads((out / "steps" / "adapt-seed1.json").read_text())
    assert adapted["steps"] == 3 and adapted["tokens"] == 3 * 2 * 20
    # A second run finds every step done and rewrites the same section in place.
    adaptation.main(argv)
    assert report.read_text() == text
