"""
A received model buys memory only with what its files hold and its model uses, never with what
they declare, and every malformed value in it is a one-line refusal. The attacks (those of the
held-out review in issue 53) are each a file crafted here from the packaged fixture biLM (budget
for its ~21 KB of weights: 8 x 21 KB + 64 MiB), refused as its test's docstring says.

Memory is checked with the budget's own accounting or a tripwire (a dispatch mode recording the
largest tensor any operation made), in process; the archive and vocabulary cases with
`tracemalloc`.
"""

import json
import math
import struct
import sys
from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from allennlp.commands import main
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received.model_directory import WEIGHTS_FILE, write_checksums
from tests.helpers import RECEIVED_MODEL_DOORS, outcome, without_elmo_c_variables
from tests.security.received_models import craft_directory

MiB = 1 << 20
# No more than this may be created, in all tensors, while a crafted model is refused.
TRIPWIRE_BYTES = 64 * MiB


class Tripwire(TorchDispatchMode):
    """Records the largest tensor any operation created (by its output, after it ran), and the
    bytes of all of them."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if any(returned.alias_info is not None for returned in func._schema.returns):
            return result  # a view (of a memory-mapped file, say) or an in-place operation
        for tensor in result if isinstance(result, (tuple, list)) else [result]:
            if isinstance(tensor, torch.Tensor) and not tensor.is_meta:
                self.largest = max(self.largest, tensor.numel() * tensor.element_size())
                self.total += tensor.numel() * tensor.element_size()
        return result


def load_refused(door: str, model: Path, tmp_path: Path, *fragments: str) -> None:
    """`door` refuses `model` with a one-line `ConfigurationError` holding `fragments`, having
    made less than `TRIPWIRE_BYTES` of tensors in all."""
    before = set(tmp_path.rglob("*"))
    tripwire = Tripwire()
    with tripwire:
        error = outcome(lambda: RECEIVED_MODEL_DOORS[door](model, tmp_path))
    created = {path for path in set(tmp_path.rglob("*")) - before if path.name != ".lock"}
    assert not created, f"created {sorted(created)[:5]}"  # nor in the scratch (temporary) folder
    assert tripwire.total < TRIPWIRE_BYTES, f"{tripwire.total:,} bytes made"
    assert isinstance(error, ConfigurationError), error
    message = str(error)
    assert "\n" not in message and len(message) < 1200, message
    for fragment in fragments:
        assert fragment in message, message


@pytest.fixture
def received(model_directory, tmp_path, monkeypatch):
    """A function crafting a copy of the packaged biLM: its config edited, then `weights` (a
    function of the weights' path) run, the listing regenerated as a sender would. Temporary
    files go to `tmp_path/scratch`."""
    import tempfile

    without_elmo_c_variables(monkeypatch)
    (tmp_path / "scratch").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))

    def craft(edit=lambda bilm: None, weights=None) -> Path:
        target = craft_directory(model_directory[0], tmp_path / "received", lambda config: edit(config["bilm"]))
        if weights is not None:
            weights(target / WEIGHTS_FILE)
            write_checksums(target)
        return target

    return craft


def append_tensor(weights: Path, name: str, dtype: str, shape, data: bytes = b"") -> None:
    """Appends the tensor `name` to a `.safetensors` file: `data`, or (empty `data`) a hole of
    its size (a sparse file: nothing on disk)."""
    raw = weights.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    body = raw[8 + length :]
    size = math.prod(shape) * {"U8": 1, "F32": 4}[dtype]
    header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(body), len(body) + size]}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(weights, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text + body + data)
        out.truncate(8 + len(text) + len(body) + size)


def set_contextualizer(**sizes):
    def edit(bilm):
        bilm["model"]["contextualizer"].update(sizes)

    return edit


# --- what buys budget: neither holes, unused tensors nor headers ---------------------------------


def test_a_sparse_tensor_buys_no_budget(received, tmp_path):
    """A 1 GiB hole appended to model.safetensors as a zero tensor (free on disk), counted as
    weights, would raise the budget 8 GiB, and a 10^6-cell LSTM be built (2.25 GiB, 21 s) before
    the weights' mismatch refused it (here a 256 MiB hole, +2 GiB, and a 200,000-cell LSTM,
    333 MB, to keep the test short). A hole (or any all-zero page) holds nothing and buys no
    budget: the build is refused in its dry run, before anything is allocated."""
    model = received(set_contextualizer(cell_size=200_000), lambda w: append_tensor(w, "padding", "U8", [256 * MiB]))
    assert (model / WEIGHTS_FILE).stat().st_blocks * 512 < 4 * MiB
    load_refused("ElmoC", model, tmp_path, "model.contextualizer.cell_size = 200000", "Refused before allocating")


def test_an_unused_tensor_buys_no_budget(received, tmp_path):
    """A tensor the model does not use, counted as weights, would raise the budget (here 16 MiB
    of random bytes, +128 MiB, enough for a 50,000-cell LSTM, 83 MB, to be built before the
    mismatch refused it). The weights are loaded into the model's dry run first: a tensor the
    model does not have is refused there, before anything is allocated."""
    noise = torch.randn(4 * MiB).numpy().tobytes()
    model = received(set_contextualizer(cell_size=50_000), lambda w: append_tensor(w, "unused", "F32", [4 * MiB], noise))
    load_refused("ElmoC", model, tmp_path, "does not match the model its config.json describes", "unused")


@pytest.mark.parametrize("num_embeddings, pool_size", [(1 << 28, 1 << 15), (1 << 31, 1 << 17)])
def test_an_allocation_without_a_size_argument_is_counted_before_it_runs(num_embeddings, pool_size, model_directory):
    """`slim_embedding` with 2^28 words, 2 sub-vectors and a pool of 32,768 runs
    `arange(2^14).repeat(2^14)` (2 GiB) in `balanced_assignment`; counted only afterwards, it
    would peak at 2.93 GiB (2^31 words 16 GiB). `repeat` is counted from a run on meta tensors
    before it runs: refused before allocating, naming the size."""
    from allennlp_elmo_c.modules.token_embedders.slim_embedding import SlimEmbedding
    from allennlp_elmo_c.received.allocation_budget import allocation_budget
    from allennlp_elmo_c.received.limits import BUDGET_SLACK

    limit = 8 * (model_directory[0] / WEIGHTS_FILE).stat().st_size + BUDGET_SLACK
    tripwire = Tripwire()
    with tripwire, pytest.raises(ConfigurationError, match="Refused before allocating") as refusal:
        with allocation_budget(limit, "received", sizes=[("model.x.num_embeddings", num_embeddings)]) as budget:
            SlimEmbedding(embedding_dim=16, num_subvectors=2, pool_size=pool_size, num_embeddings=num_embeddings)
    assert budget.used <= limit and tripwire.largest < TRIPWIRE_BYTES
    assert f"num_embeddings = {num_embeddings}" in str(refusal.value)


def test_a_slim_embedding_of_2_28_words_is_refused_through_a_front_door(received, tmp_path):
    """The same, as a received model directory's input embedder: refused in the dry run."""

    def edit(bilm):
        bilm["model"]["text_field_embedder"]["token_embedders"]["tokens"] = {
            "type": "slim_embedding", "embedding_dim": 16, "num_subvectors": 2, "pool_size": 32768,
            "num_embeddings": 1 << 28,
        }  # fmt: skip

    load_refused("ElmoC", received(edit), tmp_path, "num_embeddings = 268435456", "Refused before allocating")


def header_only_bin(path: Path, dim: int, rows_stored: bool) -> Path:
    """A fastText `.bin` of `dim`: without rows (126 bytes: no words, no buckets), or with one
    bucket row that is a hole (sparse, nothing on disk)."""
    from allennlp_elmo_c.fasttext.fasttext_bin import FASTTEXT_MAGIC, FASTTEXT_VERSION

    bucket = 1 if rows_stored else 0
    data = struct.pack("<ii", FASTTEXT_MAGIC, FASTTEXT_VERSION)
    data += struct.pack("<12id", dim, 5, 5, 1, 5, 1, 2, 2, bucket, 3, 6, 100, 1e-4)
    data += struct.pack("<iiiqq", 0, 0, 0, 0, -1) + struct.pack("<?qq", False, bucket, dim)
    with open(path, "wb") as out:
        out.write(data)
        out.seek(len(data) + bucket * dim * 4)
        out.write(struct.pack("<?qq", False, 0, dim))
    return path


@pytest.mark.parametrize("dim, rows_stored", [(1 << 25, False), ((1 << 31) - 1, False), (1 << 25, True)])
def test_a_bin_header_sets_no_budget(dim, rows_stored, tmp_path, model_directory):
    """A 126-byte `.bin` with no rows and `dim` 2^25, as a softmax head's frozen
    `output_embedding_fasttext` over 10 words, would have `allow(2 x V x dim x 4)` raise the
    budget if its header were believed (3.80 GiB peak before a refusal; `dim` 2^31 - 1 ~8 GiB a
    word). A `.bin` without rows is refused, and the frozen table is allowed only as far as the
    `.bin` stores its rows (a hole stores none): the table is refused before it is allocated."""
    from allennlp.data import Vocabulary

    from allennlp_elmo_c.modules.output_heads.softmax import SoftmaxOutputHead
    from allennlp_elmo_c.received.allocation_budget import allocation_budget
    from allennlp_elmo_c.received.limits import BUDGET_SLACK

    path = header_only_bin(tmp_path / "crafted.bin", dim, rows_stored)
    assert path.stat().st_blocks * 512 < MiB
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace([f"w{i}" for i in range(8)], "lm_targets")
    limit = 8 * (model_directory[0] / WEIGHTS_FILE).stat().st_size + BUDGET_SLACK
    tripwire = Tripwire()
    with tripwire, pytest.raises(ConfigurationError) as refusal:
        with allocation_budget(limit, "received"):
            SoftmaxOutputHead(16, 16, vocab, vocab_namespace="lm_targets", output_embedding_fasttext=str(path),
                              freeze_output_embedding=True)  # fmt: skip
    assert tripwire.largest < TRIPWIRE_BYTES
    expected = "Refused before allocating" if rows_stored else "no words and no buckets"
    assert expected in str(refusal.value)


TOKENIZER_CONFIG = {"tokenizer_class": "BertTokenizer", "vocab_file": "/etc/hostname"}


@pytest.mark.parametrize("door", ["ElmoC", "spaCy", "AutoModel", "describe"])
def test_a_file_package_never_writes_is_refused(door, received, tmp_path):
    """A `tokenizer_config.json` naming another tokenizer and an absolute vocabulary file,
    listed in checksums.sha256, would make `AutoTokenizer` read that file (transformers reads it
    before any plugin code, see docs/security.md). A model directory holds what `package`
    writes, nothing else: refused at every door."""
    model = received()
    (model / "tokenizer_config.json").write_text(json.dumps(TOKENIZER_CONFIG))
    write_checksums(model)
    load_refused(door, model, tmp_path, "tokenizer_config.json is not a file a model directory holds")


# --- malformed values: one-line refusals ----------------------------------------------------------


def describe_line(model: Path, monkeypatch, capsys) -> str:
    """`python -m allennlp_elmo_c describe MODEL`: its one error line (it must exit 1)."""
    monkeypatch.delenv("ELMO_C_DEBUG", raising=False)
    monkeypatch.setattr(sys, "argv", ["python -m allennlp_elmo_c", "describe", str(model)])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(prog="python -m allennlp_elmo_c")
    assert exit_.value.code == 1
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: "), errors
    return errors[0]


@pytest.mark.parametrize(
    "text, why",
    [("1e400", "too large for a float"), ("12.5", "is not a size"), ("-5", "is not a size between 0"),
     (str(2**64), "does not fit in 64 bits"), ("9" * 4000, "does not fit in 64 bits")],
)  # fmt: skip
def test_a_size_that_is_not_a_plain_integer_is_one_line(text, why, received, tmp_path, monkeypatch, capsys):
    """Unchecked, a `cell_size` of 1e400 or 12.5 ends in torch's `TypeError`, 2**64 or 4000
    digits in a 9-line `TypeError ... Overflow`, and `describe` exits with a 16-line
    `OverflowError` on 1e400 and prints the config and exits 0 on -5 and on 4000 digits. Each is
    a one-line refusal saying why, from `describe` (exit status 1) and the loader."""
    model = received()
    config = model / "config.json"
    config.write_text(config.read_text().replace('"cell_size": 12', f'"cell_size": {text}'))
    write_checksums(model)
    line = describe_line(model, monkeypatch, capsys)
    assert why in line and "config.json" in line and len(line) < 600, line
    load_refused("ElmoC", model, tmp_path, why)


def test_a_huge_vocabulary_is_refused_before_it_is_read(received, tmp_path):
    """A 3,000,000-line namespace, read unchecked, costs +0.7 GiB and ends in AllenNLP's
    `AssertionError: OOV token not found!`. Its lines are counted (a stream, nothing kept) and
    held to the budget first: refused before it is read."""
    import tracemalloc

    model = received()
    with open(model / "vocabulary" / "huge.txt", "w") as out:
        out.write("@@UNKNOWN@@\n")
        out.writelines(f"w{i}\n" for i in range(3_000_000))
    write_checksums(model)
    tracemalloc.start()
    try:
        error = outcome(lambda: RECEIVED_MODEL_DOORS["ElmoC"](model, tmp_path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(error, ConfigurationError) and "huge.txt" in str(error), error
    assert "refused before reading it" in str(error)
    assert peak < 32 * MiB, f"{peak / MiB:.0f} MiB"


def test_a_namespace_without_the_unknown_token_first_is_refused(received, tmp_path):
    """A padded namespace whose first line is not the unknown token (AllenNLP's reader ends in
    `AssertionError: OOV token not found!`): a one-line refusal naming the file and its first
    line."""
    model = received()
    (model / "vocabulary" / "words.txt").write_text("first\nsecond\n")
    write_checksums(model)
    load_refused("ElmoC", model, tmp_path, "words.txt is padded but its first line is 'first'")


def test_a_huge_safetensors_header_is_refused_before_it_is_parsed(received, tmp_path):
    """A 68 MB header (1,000,000 empty tensors), parsed whole, is refused only after 66 s and
    +1.45 GiB. Its declared length is read and bounded first: refused before it is parsed."""
    def huge_header(weights: Path) -> None:
        with open(weights, "wb") as out:
            out.write(struct.pack("<Q", 68_000_000))
            out.truncate(8 + 68_000_000)

    model = received(weights=huge_header)
    for door in ("ElmoC", "describe"):
        load_refused(door, model, tmp_path, "safetensors header declares 68000000 bytes")


@pytest.mark.parametrize("form", ["dot-slash", "trailing space"])
def test_checksum_names_as_sha256sum_reads_them(form, received, tmp_path):
    """`./README.md` lines (what `find . -type f -exec sha256sum {} +` writes, and `sha256sum
    -c` accepts) are accepted; a name with a trailing space is refused with a message that
    shows the space and says the directory has README.md, lest it read as "README.md is
    missing"."""
    model = received()
    listing = model / "checksums.sha256"
    lines = listing.read_text().splitlines()
    if form == "dot-slash":
        listing.write_text("".join(f"{line[:66]}./{line[66:]}\n" for line in lines))
        RECEIVED_MODEL_DOORS["ElmoC"](model, tmp_path)
        return
    listing.write_text("".join(line + (" " if line.endswith("README.md") else "") + "\n" for line in lines))
    load_refused("ElmoC", model, tmp_path, "'README.md ', listed in checksums.sha256, is missing",
                 "the directory has README.md")  # fmt: skip


def test_an_offline_hugging_face_download_fails_fast(tmp_path, monkeypatch):
    """A task archive naming a Hugging Face model, with `HF_HUB_OFFLINE` unset and no network,
    would take 69 s and end in a 220-line traceback in a download attempt. The model's absence
    from the cache and the Hub's silence are found first: one line, within 10 s."""
    import time

    import huggingface_hub.constants

    from allennlp_elmo_c.archive import load_elmo_c_archive
    from tests import FIXTURES_ROOT
    from tests.helpers import NO_NETWORK

    import allennlp_models.tagging  # noqa: F401  (the legacy task archive's crf_tagger)
    import tarfile

    directory = tmp_path / "task"
    with tarfile.open(FIXTURES_ROOT / "legacy_models" / "task" / "model.tar.gz") as archive:
        archive.extractall(directory, filter="data")
    config = json.loads((directory / "config.json").read_text())
    config["dataset_reader"]["token_indexers"]["bert"] = {"type": "pretrained_transformer",
                                                         "model_name": "bert-base-uncased"}  # fmt: skip
    (directory / "config.json").write_text(json.dumps(config))
    for name, value in NO_NETWORK.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    for offline, expected in ((False, "cannot be reached"), (True, "HF_HUB_OFFLINE=1 forbids")):
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", offline)
        start = time.monotonic()
        with pytest.raises(ConfigurationError) as refusal:
            load_elmo_c_archive(str(directory))
        assert time.monotonic() - start < 10
        message = str(refusal.value)
        assert expected in message and "bert-base-uncased" in message and "\n" not in message, message
        assert "dataset_reader.token_indexers.bert.model_name" in message
