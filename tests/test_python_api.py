"""
The Python API shaped like AllenNLP's ELMo: `ElmoC` (as `Elmo`), `batch_to_ids` and
`ElmoCEmbedder` (as 0.9's `ElmoEmbedder`), imported from the package's top level.
"""
import h5py
import numpy
import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import TokenEmbedder

from allennlp_elmo_c import ElmoC, ElmoCEmbedder, batch_to_ids
from allennlp_elmo_c.commands.elmo_c_embed import embed_file
from allennlp_elmo_c.modules.elmo_c import index_sentences
from tests.helpers import doc_blocks

SENTENCES = [["The", "council", "met", "on", "Friday", "."], ["Storms", "closed", "schools"],
             ["Café", "😀", "naïve"]]  # fmt: skip


def test_elmo_c_equals_the_token_embedder(elmo_c_archive):
    elmo = ElmoC(str(elmo_c_archive), num_output_representations=2, dropout=0.0).eval()
    ids = batch_to_ids(SENTENCES, elmo)
    with torch.no_grad():
        output = elmo(ids)
    assert len(output["elmo_representations"]) == 2
    vectors = output["elmo_representations"][0]
    assert vectors.shape == (3, 6, elmo.get_output_dim())
    assert output["mask"].tolist() == [[True] * 6, [True] * 3 + [False] * 3,
                                       [True] * 3 + [False] * 3]  # fmt: skip
    embedder = TokenEmbedder.from_params(Params({
        "type": "elmo_c_token_embedder", "archive_file": str(elmo_c_archive), "dropout": 0.0,
    })).eval()  # fmt: skip
    with torch.no_grad():
        expected = embedder(**index_sentences(SENTENCES, embedder._elmo_c.word_indexer()))
    assert (vectors - expected).abs().max().item() <= 1e-6
    # The same mixing parameters' names as AllenNLP's Elmo (task regularizers match them).
    assert any("scalar_parameters" in name for name, _ in elmo.named_parameters())


def test_elmo_c_keeps_boundaries_when_asked(elmo_c_archive):
    elmo = ElmoC(str(elmo_c_archive), 1, dropout=0.0, keep_sentence_boundaries=True).eval()
    with torch.no_grad():
        output = elmo(batch_to_ids(SENTENCES, elmo))
    assert output["elmo_representations"][0].shape[1] == 8
    assert output["mask"].sum(1).tolist() == [8, 5, 5]


def test_bad_calls_say_what_to_do(elmo_c_archive, tmp_path):
    elmo = ElmoC(str(elmo_c_archive), 1)
    with pytest.raises(ConfigurationError, match="tokenized sentences"):
        batch_to_ids(["The council met ."], elmo)
    with pytest.raises(ConfigurationError, match="batch_to_ids"):
        elmo({})
    with pytest.raises(ConfigurationError, match="not both"):
        ElmoC(None, 1)
    with pytest.raises(ConfigurationError):
        ElmoC(str(tmp_path / "missing.tar.gz"), 1)


def test_embedder_equals_elmo_c_embed(elmo_c_archive, tmp_path):
    embedder = ElmoCEmbedder(str(elmo_c_archive))
    text = tmp_path / "input.txt"
    text.write_text("\n".join(" ".join(s) for s in SENTENCES) + "\n\n", encoding="utf-8")
    written = embed_file(elmo_c_archive, text, tmp_path / "command.hdf5", batch_size=1)
    ours = embedder.embed_file(text, tmp_path / "embedder.hdf5", batch_size=1)
    single = [embedder.embed_sentence(sentence) for sentence in SENTENCES + [[]]]
    streamed = list(embedder.embed_sentences(iter(SENTENCES + [[]]), batch_size=1))
    with h5py.File(written, "r") as command, h5py.File(ours, "r") as mine:
        for index, sentence in enumerate(SENTENCES + [[]]):
            expected = command[str(index)][...]
            assert expected.shape == (3, len(sentence), 16)
            numpy.testing.assert_array_equal(mine[str(index)][...], expected)
            numpy.testing.assert_array_equal(single[index], expected)
            numpy.testing.assert_array_equal(streamed[index], expected)
    # An open file, as 0.9's ElmoEmbedder.embed_file took.
    with open(text, encoding="utf-8") as opened:
        from_object = embedder.embed_file(opened, tmp_path / "object.hdf5", batch_size=1)
    with h5py.File(from_object, "r") as mine, h5py.File(written, "r") as command:
        numpy.testing.assert_array_equal(mine["0"][...], command["0"][...])
    assert not (tmp_path / "object.hdf5.input.txt").exists()
    batch = embedder.embed_batch(SENTENCES)
    assert [layers.shape[1] for layers in batch] == [6, 3, 3]
    # Stateless: the same sentence twice gives the same vectors.
    numpy.testing.assert_array_equal(embedder.embed_sentence(SENTENCES[0]), single[0])


def test_the_readme_quick_start_runs(elmo_c_archive):
    (quick_start,) = doc_blocks("python-quick-start")
    assert quick_start.file == "README.md" and quick_start.language == "python"
    block = quick_start.code
    assert len(block.strip().splitlines()) <= 10
    namespace: dict = {}
    exec(block.replace("runs/mine/model.tar.gz", str(elmo_c_archive)), namespace)
    assert namespace["vectors"].shape == (2, 4, 16)
    assert namespace["layers"].shape == (3, 4, 16)


def test_the_docs_model_directory_blocks(elmo_c_archive, tmp_path, monkeypatch):
    """docs/using-a-model.md: `package` of the run directory, then spaCy and Hugging Face on it."""
    import shlex
    import subprocess
    import sys

    from tests import PROJECT_ROOT

    (package,), (front_doors,) = doc_blocks("package"), doc_blocks("front-doors")
    command, block = package.code, front_doors.code
    words = shlex.split(command)
    assert words[:4] == ["python", "-m", "allennlp_elmo_c", "package"]
    words = [sys.executable, *words[1:4], str(elmo_c_archive.parent), str(tmp_path / "my-elmo-c")]
    result = subprocess.run(words, cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(block, namespace)
    assert namespace["doc"]._.elmo_c_layers.shape == (3, 6, 16)
    assert len(namespace["hidden"]) == 3 and namespace["hidden"][-1].shape == (1, 4, 16)
