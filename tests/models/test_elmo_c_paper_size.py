"""
The paper-size ELMo-C of `training_config/elmo_c.jsonnet` (300-d fastText, cell 4096 /
projection 512 x 2 layers per direction): 76.2M trainable parameters, and the fastText matrix
never becomes part of the model's weights or archive.
"""

import io
import random
import tarfile

import pytest
import torch

from allennlp.commands.train import train_model_from_file
from allennlp.common import Params
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.models import Model

from allennlp_elmo_c.commands.train_fasttext import train_fasttext
from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
from allennlp_elmo_c.models.elmo_c import ElmoCLanguageModel
from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.helpers import EXPECTED_PARAMETERS, skip_orthogonal_init

PAPER_CONFIG = PROJECT_ROOT / "training_config" / "elmo_c.jsonnet"
SMALL_CONFIG = FIXTURES_ROOT / "configs" / "elmo_c.jsonnet"
SENTENCES = FIXTURES_ROOT / "data" / "lm" / "sentences.txt"
TINY_BIN = FIXTURES_ROOT / "fasttext" / "tiny.bin"
BUCKET = 10_000


def _corpus_text() -> str:
    """The fixture sentences many times over, shuffled and mixed with made-up words."""
    rng = random.Random(0)
    lines = SENTENCES.read_text(encoding="utf-8").split("\n")
    lines = [line for line in lines if line.strip()]
    fixture_words = sorted({word for line in lines for word in line.split()})
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "xe", "zu", "pa", "de"]
    made_up = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(400)]
    out = []
    for _ in range(20):
        out.extend(rng.sample(lines, len(lines)))
    for _ in range(1500):
        words = rng.choices(fixture_words, k=rng.randint(2, 8)) + rng.choices(
            made_up, k=rng.randint(3, 15)
        )
        rng.shuffle(words)
        out.append(" ".join(words))
    rng.shuffle(out)
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def fasttext_300d(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fasttext_300d")
    corpus = directory / "corpus.txt"
    corpus.write_text(_corpus_text(), encoding="utf-8")
    return train_fasttext(
        corpus,
        directory / "cc.test.300.bin",
        dim=300,
        bucket=BUCKET,
        epoch=1,
        min_count=1,
        threads=2,
        verbose=0,
    )


@pytest.fixture
def paper_params(fasttext_300d, monkeypatch) -> Params:
    monkeypatch.setenv("ELMO_C_FASTTEXT", str(fasttext_300d))
    monkeypatch.setenv("ELMO_C_TRAIN_DATA", str(SENTENCES))
    monkeypatch.setenv("ELMO_C_VALIDATION_DATA", str(SENTENCES))
    skip_orthogonal_init(monkeypatch)
    return Params.from_file(str(PAPER_CONFIG))


def test_expected_parameter_formula():
    assert EXPECTED_PARAMETERS == 76_185_176


def test_paper_model_size_and_no_fasttext_matrix_in_weights(paper_params, fasttext_300d):
    assert paper_params["model"]["contextualizer"]["cell_size"] == 4096
    model = Model.from_params(vocab=Vocabulary(), params=paper_params.pop("model"))
    assert isinstance(model, ElmoCLanguageModel)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert abs(trainable - 76.2e6) <= 0.01 * 76.2e6, f"{trainable:,} trainable parameters"
    assert trainable == EXPECTED_PARAMETERS, f"{trainable:,} trainable parameters"
    assert model.num_layers() == 3

    fasttext = FastTextBin.load(fasttext_300d)
    matrix_shape = tuple(fasttext.input_matrix.shape)
    assert matrix_shape[1] == 300 and matrix_shape[0] > BUCKET  # words + buckets rows
    matrix_numel = matrix_shape[0] * matrix_shape[1]
    embedder = model._text_field_embedder._token_embedders["tokens"]
    matrix = embedder._fasttext.matrix_on(torch.device("cpu"))
    matrix_start = matrix.data_ptr()
    matrix_end = matrix_start + matrix.numel() * matrix.element_size()

    def check(tensors):
        for name, tensor in tensors:
            assert tuple(tensor.shape) != matrix_shape, name
            assert 300 not in tensor.shape or tensor.numel() < matrix_numel, (
                name,
                tuple(tensor.shape),
            )
            pointer = tensor.data_ptr()
            assert not matrix_start <= pointer < matrix_end, f"{name} lives in the fastText matrix"

    check(model.named_parameters())
    check(model.state_dict().items())
    check(model.named_buffers())

    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    size = buffer.tell()
    assert size < 400 * 2**20, f"state_dict is {size / 2**20:.0f} MiB"
    assert (
        size < 4 * EXPECTED_PARAMETERS * 1.01
    )  # float32 parameters and LayerNorm stats, nothing else
    buffer.seek(0)
    saved = torch.load(buffer)
    biggest = max(tensor.numel() for tensor in saved.values())
    assert biggest <= 17_000_000 and biggest == 4 * 4096 * 512
    assert not any(tuple(tensor.shape) == matrix_shape for tensor in saved.values())


def test_paper_dataset_reader_reads_the_fixture_and_feeds_the_model(paper_params, fasttext_300d):
    reader = DatasetReader.from_params(paper_params.pop("dataset_reader"))
    instances = list(reader.read(paper_params["train_data_path"]))
    lines = [line for line in SENTENCES.read_text(encoding="utf-8").splitlines() if line.strip()]
    # The sentences, each between <S> and </S>, as one stream of 21-token windows that share one
    # token with the next (20 predictions per direction, the paper's unroll).
    windows = [[token.text for token in instance["tokens"].tokens] for instance in instances]
    assert all(len(window) == 21 for window in windows[:-1]) and len(windows[-1]) <= 21
    stream = [t for line in lines for t in ["<S>", *line.split(), "</S>"]]
    assert windows[0] + [t for window in windows[1:] for t in window[1:]] == stream
    torch.manual_seed(0)
    model = Model.from_params(vocab=Vocabulary(), params=paper_params.pop("model"))
    batch = Batch(instances[:3])
    batch.index_instances(model.vocab)
    model.eval()
    with torch.no_grad():
        output = model(**batch.as_tensor_dict())
    assert torch.isfinite(output["loss"])
    mask = output["mask"]
    assert output["lm_embeddings"].shape == (3, mask.size(1), 1024)
    assert output["noncontextual_token_embeddings"].shape == (3, mask.size(1), 300)
    # The input vectors are the configured .bin's vectors.
    fasttext = FastTextBin.load(fasttext_300d)
    word = instances[0]["tokens"].tokens[1].text
    expected = torch.from_numpy(fasttext.word_vector(word)).float()
    torch.testing.assert_close(
        output["noncontextual_token_embeddings"][0, 1], expected, atol=1e-5, rtol=1e-5
    )


def test_small_archive_holds_no_fasttext_matrix(tmp_path, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)  # the fixture config's paths are relative to the project
    serialization_dir = tmp_path / "run"
    train_model_from_file(
        str(SMALL_CONFIG), str(serialization_dir), overrides='{"trainer.num_epochs": 1}'
    )
    archive = serialization_dir / "model.tar.gz"
    assert archive.is_file()
    matrix_shape = tuple(FastTextBin.load(TINY_BIN).input_matrix.shape)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert "weights.th" in names
        weights = torch.load(io.BytesIO(tar.extractfile("weights.th").read()))
    assert weights and all(tuple(tensor.shape) != matrix_shape for tensor in weights.values())
    assert all(tensor.numel() < matrix_shape[0] * matrix_shape[1] for tensor in weights.values())
    assert archive.stat().st_size < TINY_BIN.stat().st_size
