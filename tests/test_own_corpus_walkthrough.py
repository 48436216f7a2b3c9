"""
Your own text: every shell block marked `<!-- walkthrough -->` (the README's five commands, which
plan and train the in-batch softmax loss, docs/choosing-a-bilm.md's second biLM, with the cosine,
and the probe screen of both, then the adaptation step of
docs/your-data.md) runs as it is written, in order, in a fresh directory that holds
`training_config/`, a few hundred German sentences in `my_texts/` and
`my_domain_texts/`, and tagged German sentences in `my_tagged/` (the fixture-size substitution:
small inputs, not other commands), and makes the files the docs say it makes. tests/test_docs.py
checks that no other block goes unrun.
"""

import json
import random
import re
import subprocess
from pathlib import Path

import h5py
import numpy

from allennlp.common import Params

from tests import PROJECT_ROOT
from tests.helpers import LANGUAGE_PARTS, doc_blocks, user_environment, write_language_documents

MARKER = "walkthrough"
FILES = ["README.md", "docs/choosing-a-bilm.md", "docs/your-data.md"]  # in this order (each needs the README's)
PART_TAGS = ("SUBJECT", "VERB", "OBJECT", "PLACE")


def write_tagged(directory: Path, language: str) -> None:
    """`train.txt` and `dev.txt` of `word###tag` sentences: each word tagged with the part of the
    sentence it belongs to (a task a linear probe can learn)."""
    rng = random.Random(language)
    directory.mkdir()
    for split, count in (("train", 60), ("dev", 20)):
        lines = []
        for _ in range(count):
            phrases = [(rng.choice(part), tag) for part, tag in zip(LANGUAGE_PARTS[language], PART_TAGS)]
            lines.append(" ".join(f"{word}###{tag}" for phrase, tag in phrases for word in phrase.split()))
        (directory / f"{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def walkthrough_blocks() -> list:
    blocks = doc_blocks(MARKER)
    assert [block.file for block in blocks] == FILES, "the walkthrough moved: update FILES"
    return [block.code for block in blocks]


def test_the_docs_mark_the_whole_walkthrough():
    readme, second, adaptation = walkthrough_blocks()
    commands = ["prepare-corpus my_texts/", "train-fasttext", "plan corpus/train.txt",
                "allennlp train training_config/elmo_c_small.jsonnet", "elmo-c-embed"]  # fmt: skip
    positions = [readme.index(command) for command in commands]
    assert positions == sorted(positions)
    # The plan and the training run get the same overrides: the guide's loss for one's own data,
    # validated at the training batch size.
    recommended = '-o \'{"model.output_head.loss": "in_batch_softmax", "validation_data_loader.batch_size": 64}\''
    assert readme.count(recommended) == 2
    assert "prepare-corpus my_domain_texts/" in adaptation and "elmo_c_adapt.jsonnet" in adaptation
    assert '"model.output_head.loss": "cosine"' in second and "probe-screen" in second


def test_the_readme_walkthrough_runs(tmp_path):
    (tmp_path / "training_config").symlink_to(PROJECT_ROOT / "training_config")
    write_language_documents(tmp_path / "my_texts", "de")
    write_tagged(tmp_path / "my_tagged", "de")
    write_language_documents(tmp_path / "my_domain_texts", "de", documents=30, seed=1)
    environment = user_environment()
    printed = []
    for block in walkthrough_blocks():
        result = subprocess.run(["bash", "-e", "-c", block], cwd=tmp_path, env=environment,
                                capture_output=True, text=True, timeout=600)  # fmt: skip
        assert result.returncode == 0, f"{block}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        printed.append(result.stdout)
    # The README's plan, printed before the training run.
    assert "plan for corpus/train.txt" in printed[0] and " updates" in printed[0], printed[0][-3000:]

    validation = (tmp_path / "corpus" / "validation.txt").read_text(encoding="utf-8").splitlines()
    assert validation and (tmp_path / "corpus" / "train.txt").stat().st_size > 0
    assert "Straßenbahnhaltestelle" in (tmp_path / "corpus" / "train.txt").read_text("utf-8")
    assert (tmp_path / "vectors" / "mine.100d.bin").stat().st_size > 0
    metrics = json.loads((tmp_path / "runs" / "mine" / "metrics.json").read_text())
    assert numpy.isfinite(metrics["validation_loss"])
    with h5py.File(tmp_path / "features.hdf5", "r") as hdf5:
        assert len([key for key in hdf5 if key != "sentence_to_index"]) == len(validation)
        for index, line in enumerate(validation):
            assert hdf5[str(index)].shape == (len(line.split()), 256)  # --top
            assert numpy.isfinite(hdf5[str(index)][...]).all()
    adapted = json.loads((tmp_path / "runs" / "mine_domain" / "config.json").read_text())
    assert adapted["model"]["type"] == "elmo_c"  # an ordinary archive, not a from_archive one
    assert (tmp_path / "runs" / "mine_domain" / "model.tar.gz").is_file()
    # The README's biLM: the in-batch softmax, validated at its training batch.
    first = json.loads((tmp_path / "runs" / "mine" / "config.json").read_text())
    assert first["model"]["output_head"]["loss"] == "in_batch_softmax"
    assert first["validation_data_loader"]["batch_size"] == first["data_loader"]["batch_size"] == 64
    # docs/choosing-a-bilm.md: the second biLM differs in its loss only, and the screen scored
    # both on the tagged dev sentences.
    second = json.loads((tmp_path / "runs" / "mine_cosine" / "config.json").read_text())
    assert second["model"]["output_head"]["loss"] == "cosine"
    screen = json.loads((tmp_path / "screen.json").read_text())
    assert set(screen) == {"cosine", "in_batch"}
    against = screen["cosine"]["against"]  # the second biLM set against the first
    assert against["archive"] == "in_batch" and against["low"] <= against["difference"] <= against["high"]
    for result in screen.values():
        probe = result["tasks"]["pos"]["fastText + average of all layers"]
        assert 0.0 < probe["score"] <= 1.0


SMALL_CONFIG = PROJECT_ROOT / "training_config" / "elmo_c_small.jsonnet"
UNUSED = {"ELMO_C_TRAIN_DATA": "x.txt", "ELMO_C_VALIDATION_DATA": "x.txt", "ELMO_C_FASTTEXT": "x.bin"}


def test_the_documented_300d_overrides_set_every_input_size_of_the_small_config():
    """The overrides the README and docs/your-data.md give for 300-d vectors (`cc.<lang>.300.bin`)
    name keys `elmo_c_small.jsonnet` has, and are every place it holds the vectors' 100 dims."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    your_data = (PROJECT_ROOT / "docs" / "your-data.md").read_text(encoding="utf-8")
    found = [json.loads("{" + fragment + "}") for fragment in
             re.findall(r"`(\"model\.text_field_embedder[^`]*: 300)`", readme)]  # fmt: skip
    found += [json.loads(fragment) for fragment in re.findall(r"-o '(\{[^']*: 300\})'", your_data)]
    assert len(found) == 2, found
    plain = Params.from_file(str(SMALL_CONFIG), ext_vars=UNUSED).as_flat_dict()
    dims = {key for key, value in plain.items() if value == 100}
    for overrides in found:
        assert set(overrides) <= set(plain), overrides
        assert {key for key, value in overrides.items() if value == 300} == dims
        changed = Params.from_file(str(SMALL_CONFIG), json.dumps(overrides), ext_vars=UNUSED)
        assert all(changed.as_flat_dict()[key] == 300 for key in dims)
