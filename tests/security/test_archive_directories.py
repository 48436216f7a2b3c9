"""
An archive given as a plain directory (an extracted `model.tar.gz`, a run directory) to
`load_archive` (`allennlp predict` / `evaluate`) is read as it is, so it must hold its own files:
one holding a symbolic link is refused, naming the link, before anything is read.

The attack: were the link followed, a `vocabulary/labels.txt` linked to a file of the receiver's
would put that file's lines into the model's labels (and so into its predictions).
"""

import tarfile
from pathlib import Path

import pytest

from allennlp.common.checks import ConfigurationError

import allennlp_elmo_c  # noqa: F401  (the plugin's patched `load_archive`)
from tests import FIXTURES_ROOT
from tests.helpers import outcome, without_elmo_c_variables

TASK_ARCHIVE = FIXTURES_ROOT / "legacy_models" / "task" / "model.tar.gz"
SECRET = "s3cret-label-of-the-receiver-5521"
LINKED = "vocabulary/labels.txt"


@pytest.fixture
def extracted(tmp_path, monkeypatch) -> Path:
    """The legacy task archive's members extracted (tarfile's `data` filter) into a directory, as
    received; no ELMO_C_* variable set."""
    import allennlp_models.tagging  # noqa: F401  (crf_tagger, the conll2003 reader)

    without_elmo_c_variables(monkeypatch)
    directory = tmp_path / "received-task"
    with tarfile.open(TASK_ARCHIVE) as archive:
        archive.extractall(directory, filter="data")
    return directory


@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text(f"O\n{SECRET}\n")
    return path


def load(directory: Path):
    from allennlp.models.archival import load_archive

    return load_archive(str(directory))


def test_an_extracted_archive_loads_as_a_directory(extracted):
    """The control: the same directory without a link loads, its labels its own."""
    archive = load(extracted)
    labels = archive.model.vocab.get_token_to_index_vocabulary("labels")
    assert labels and SECRET not in labels


@pytest.mark.parametrize("place", [LINKED, "notes.txt"])
def test_an_archive_directory_holding_a_link_is_refused(place, extracted, secret):
    target = extracted / place
    if target.exists():
        target.unlink()
    target.symlink_to(secret)
    error = outcome(lambda: load(extracted))
    assert isinstance(error, ConfigurationError), error
    assert place in str(error) and "symbolic link" in str(error)
    assert SECRET not in str(error)


def test_an_archive_directory_holding_a_linked_directory_is_refused(extracted, secret):
    (extracted / "extra").symlink_to(secret.parent, target_is_directory=True)
    error = outcome(lambda: load(extracted))
    assert isinstance(error, ConfigurationError) and "extra" in str(error), error
    assert SECRET not in str(error)
