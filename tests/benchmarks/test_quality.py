"""`benchmarks/quality.py` end to end at fixture size: plumbing and report format only."""
import importlib.util
import json
import shutil

import pytest

from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.demo.pretraining_fixtures import PRETRAINING_FIXTURES, tarball

LM_DATA = FIXTURES_ROOT / "data" / "lm"


def load_quality():
    spec = importlib.util.spec_from_file_location("quality", PROJECT_ROOT / "benchmarks" / "quality.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


IOB2 = """# newdoc id = doc{n}
# sent_id = doc{n}-0001
1\tAlice\tB-PER\t-\t-
2\tvisited\tO\t-\t-
3\tNew\tB-LOC\t-\t-
4\tYork\tI-LOC\t-\t-
5\t.\tO\t-\t-

# sent_id = doc{n}-0002
1\tThe\tO\t-\t-
2\tcouncil\tB-ORG\t-\t-
3\tmet\tO\t-\t-

"""


@pytest.fixture
def inputs(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(LM_DATA / "sentences.txt", corpus / "train.txt")
    shutil.copy(LM_DATA / "dev.txt", corpus / "validation.txt")
    ner = tmp_path / "shared" / "uner_ewt"
    ner.mkdir(parents=True)
    (ner / "dev.iob2").write_text("".join(IOB2.format(n=n) for n in range(12)))
    (ner / "test.iob2").write_text(IOB2.format(n=99))
    brown = {f"package/{p.name}": p.read_bytes() for p in (PRETRAINING_FIXTURES / "brown").iterdir()}
    brown["package/cn01"] = brown["package/cl01"]  # a development genre
    return corpus, tmp_path / "shared", tarball(tmp_path / "brown.tgz", brown)


def test_quality_benchmark_end_to_end_at_fixture_size(tmp_path, inputs, capsys):
    corpus, shared, brown = inputs
    quality = load_quality()
    out, report = tmp_path / "out", tmp_path / "QUALITY.md"
    tiny = {"model.contextualizer.projection_size": 4, "model.contextualizer.cell_size": 8,
            "data_loader.batch_size": 4, "validation_data_loader.batch_size": 8}  # fmt: skip
    argv = [
        "--data-dir", str(tmp_path / "data"), "--out", str(out), "--report", str(report),
        "--shared-data", str(shared), "--corpus-dir", str(corpus), "--brown-source", str(brown),
        "--fasttext-bin", str(FIXTURES_ROOT / "fasttext" / "tiny.bin"), "--fasttext-dim", "16",
        "--systems", "elmo_c_cosine", "--budgets", "tokens", "--tokens", "1280", "--seeds", "1",
        "--task-epochs", "1", "--threads", "1", "--pretrain-overrides", json.dumps(tiny),
        "--task-overrides", json.dumps({"data_loader.batch_size": 4}),
    ]  # fmt: skip
    quality.main(argv)
    text = report.read_text()
    assert text.startswith("# Downstream quality")
    for expected in ("ELMo-C (continuous, cosine)", "fastText only (no context)", "NER (UNER EWT)",
                     "POS (Brown, held-out genres)", "equal tokens", "(n=1)", "Machine:"):  # fmt: skip
        assert expected in text, expected
    steps = {path.stem for path in (out / "steps").glob("*.json")}
    assert {"corpus", "fasttext", "data-ner", "data-pos", "pretrain-elmo_c_cosine-tokens"} <= steps
    assert {f"task-{t}-{s}-seed1" for t in ("ner", "pos")
            for s in ("fasttext", "elmo_c_cosine-tokens")} <= steps  # fmt: skip
    pretrained = json.loads((out / "steps" / "pretrain-elmo_c_cosine-tokens.json").read_text())
    assert pretrained["trainable_parameters"] > 0 and pretrained["tokens"] == 1280
    # The POS task's test data are the held-out genres only, its training data none of them.
    pos = json.loads((out / "steps" / "data-pos.json").read_text())
    assert pos["sentences"]["test"] > 0 and pos["sentences"]["dev"] > 0
    # A second run finds every step done and only rewrites the report.
    report.unlink()
    quality.main(argv)
    assert report.read_text() == text


def test_helpers():
    quality = load_quality()
    assert quality.mean_std([0.5, 0.7]) == "60.00 ± 14.14 (n=2)"
