from experiments.corpora.brown_pos import build_brown_pos, simple_tag
from tests.experiments.corpora.pretraining_fixtures import PRETRAINING_FIXTURES, tarball


def brown_tarball(tmp_path):
    files = {f"package/{p.name}": p.read_bytes() for p in (PRETRAINING_FIXTURES / "brown").iterdir()}
    files["package/cn01"] = files["package/cl01"]  # a development genre
    return tarball(tmp_path / "brown.tgz", files)


def test_simple_tags_drop_the_markers():
    assert simple_tag("nn-tl") == "nn" and simple_tag("fw-in") == "fw"
    assert simple_tag("--") == "--" and simple_tag("vbd*") == "vbd"


def test_genres_go_to_their_split_and_limits_sample(tmp_path):
    source = brown_tarball(tmp_path)
    counts = build_brown_pos(tmp_path / "pos", source, {"train": None, "dev": None, "test": None})
    lines = {s: (tmp_path / "pos" / f"{s}.txt").read_text().splitlines() for s in counts}
    assert {s: len(v) for s, v in lines.items()} == counts
    # cn01 (adventure, dev) is a copy of cl01 (mystery, test); ca01 and cj01 train.
    assert lines["dev"] and set(lines["dev"]) <= set(lines["test"])
    assert lines["train"] and not set(lines["train"]) & set(lines["test"])
    assert all("###" in token for token in lines["test"][0].split())
    limited = build_brown_pos(tmp_path / "small", source, {"train": 1, "dev": None, "test": None})
    assert limited["train"] == 1 and limited["dev"] == counts["dev"]
    # Built once: a second call with the same recipe leaves the files alone.
    stamp = (tmp_path / "small" / "train.txt").stat().st_mtime_ns
    assert build_brown_pos(tmp_path / "small", source, {"train": 1, "dev": None, "test": None}) == limited
    assert (tmp_path / "small" / "train.txt").stat().st_mtime_ns == stamp
