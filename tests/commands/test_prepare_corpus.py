import gzip
import json
import sys

import fasttext
import pytest
from allennlp.commands import main
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.commands import prepare_corpus as module
from allennlp_elmo_c.commands.prepare_corpus import prepare_corpus
from allennlp_elmo_c.commands.train_fasttext import train_fasttext
from allennlp_elmo_c.data import corpus as corpus_module
from allennlp_elmo_c.data.dataset_readers.lm_corpus import LmCorpusReader

QUIET = dict(show_progress=False)


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def manifest(directory):
    return json.loads((directory / "manifest.json").read_text(encoding="utf-8"))


def test_known_documents_sentence_by_sentence(tmp_path):
    write(tmp_path / "in" / "b.txt", "Dr. Smith arrived at 5 p.m. She said:\n\"It's late.\"\n")
    write(
        tmp_path / "in" / "a.txt",
        "The U.S. economy grew 2.5% in May. Prices\nrose, too!\n\n\nIs that so?  Yes.\n",
    )
    out = prepare_corpus([tmp_path / "in"], tmp_path / "out", validation_fraction=0.0, **QUIET)
    # a.txt before b.txt (sorted); a block's lines are joined, blank lines end a block.
    assert lines(out / "train.txt") == [
        "The U.S. economy grew 2.5 % in May .",
        "Prices rose , too !",
        "Is that so ?",
        "Yes .",
        "Dr. Smith arrived at 5 p.m. She said : \" It 's late . \"",
    ]
    assert (out / "validation.txt").read_bytes() == b""
    stats = manifest(out)["stats"]
    assert stats["splits"]["train"] == {"documents": 2, "sentences": 5, "tokens": 35}
    assert stats["files"] == {
        "train.txt": {"bytes": 132, "sentences": 5, "tokens": 35},
        "validation.txt": {"bytes": 0, "sentences": 0, "tokens": 0},
    }
    assert stats["duplicates_removed"] == 0 and stats["skipped"] == [] and stats["problems"] == {}


def test_german_and_russian_text(tmp_path):
    text = (
        "Über den Flüssen Österreichs liegt früh Nebel. Die Straße ist naß!\n"
        "Он сказал: «Привет, мир». Ελληνικά γράμματα.\n"
    )
    write(tmp_path / "de.txt", text)
    out = prepare_corpus(
        [tmp_path / "de.txt"], tmp_path / "out", language="de", validation_fraction=0.0, **QUIET
    )
    assert lines(out / "train.txt") == [
        "Über den Flüssen Österreichs liegt früh Nebel .",
        "Die Straße ist naß !",
        "Он сказал : « Привет , мир » .",
        "Ελληνικά γράμματα .",
    ]


def documents_corpus(directory, count=60):
    for number in range(count):
        write(
            directory / f"doc{number:03d}.txt",
            f"Document {number} starts with {number}. Its middle is {number}. It ends {number}.\n",
        )
    return directory


def split_of_documents(out):
    sides = {}
    for split in ("train", "validation"):
        for line in lines(out / f"{split}.txt"):
            sides.setdefault(line.rstrip(" .").split()[-1], set()).add(split)
    return sides


def test_split_by_document_is_deterministic_and_follows_the_seed(tmp_path):
    corpus = documents_corpus(tmp_path / "in")
    first = prepare_corpus([corpus], tmp_path / "one", validation_fraction=0.3, **QUIET)
    second = prepare_corpus([corpus], tmp_path / "two", validation_fraction=0.3, **QUIET)
    other = prepare_corpus([corpus], tmp_path / "seed", validation_fraction=0.3, seed=7, **QUIET)
    sides = split_of_documents(first)
    assert len(sides) == 60 and all(len(where) == 1 for where in sides.values())
    held_out = {number for number, where in sides.items() if where == {"validation"}}
    assert 5 <= len(held_out) <= 35
    for name in ("train.txt", "validation.txt", "manifest.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    other_held_out = {n for n, where in split_of_documents(other).items() if where == {"validation"}}
    assert other_held_out != held_out
    stats = manifest(first)["stats"]["splits"]
    assert stats["validation"]["documents"] == len(held_out)
    assert stats["train"]["documents"] == 60 - len(held_out)
    assert stats["train"]["sentences"] + stats["validation"]["sentences"] == 180


def test_exact_duplicate_sentences_are_written_once(tmp_path):
    write(tmp_path / "a.txt", "Hello world. Hello world. Something else.\n")
    write(tmp_path / "b.txt", "Hello world. Hello  world . New here.\n")
    out = prepare_corpus(
        [tmp_path / "a.txt", tmp_path / "b.txt"], tmp_path / "out", validation_fraction=0.0,
        **QUIET,
    )
    assert lines(out / "train.txt") == ["Hello world .", "Something else .", "New here ."]
    stats = manifest(out)["stats"]
    assert stats["duplicates_removed"] == 3
    assert stats["duplicate_window"] == {"sentences": module.DUPLICATE_WINDOW, "forgotten": 0}
    assert stats["splits"]["train"]["documents"] == 2
    write(tmp_path / "other" / "a.txt", "A file of the same name.\n")  # still another document
    out = prepare_corpus([tmp_path / "a.txt", tmp_path / "other" / "a.txt"], tmp_path / "same",
                         validation_fraction=0.0, **QUIET)
    assert manifest(out)["stats"]["splits"]["train"]["documents"] == 2


def test_the_duplicate_window_bounds_the_hashes_held_and_keeps_what_recurs(tmp_path):
    # A window of 4 hashes: two generations of 2. "Boiler plate ." recurs every third sentence
    # and is always found; "Far away ." recurs after more than the window and is written again;
    # no sentence seen once is ever dropped.
    unique = [f"Sentence number {n} ." for n in range(12)]
    text = ["Far away ."]
    for number, sentence in enumerate(unique):
        text += [sentence] + (["Boiler plate ."] if number % 2 == 0 else [])
    text += ["Far away ."]
    write(tmp_path / "a.txt", "\n\n".join(text) + "\n")
    out = prepare_corpus([tmp_path / "a.txt"], tmp_path / "out", validation_fraction=0.0,
                         duplicate_window=4, **QUIET)  # fmt: skip
    written = lines(out / "train.txt")
    assert written == ["Far away .", unique[0], "Boiler plate ."] + [
        line for line in text[3:] if line != "Boiler plate ."
    ]
    stats = manifest(out)["stats"]
    assert stats["duplicates_removed"] == 5  # the boilerplate's repeats, the far one's none
    assert stats["duplicate_window"]["sentences"] == 4
    assert stats["duplicate_window"]["forgotten"] > 0  # not exact, and it says so
    # The default window holds them all: exact, nothing forgotten.
    out = prepare_corpus([tmp_path / "a.txt"], tmp_path / "exact", validation_fraction=0.0, **QUIET)
    assert lines(out / "train.txt") == written[:-1]
    assert manifest(out)["stats"]["duplicate_window"]["forgotten"] == 0


def test_shards_hold_about_shard_tokens_each(tmp_path):
    corpus = documents_corpus(tmp_path / "in", count=20)
    whole = prepare_corpus([corpus], tmp_path / "whole", validation_fraction=0.0, **QUIET)
    out = prepare_corpus(
        [corpus], tmp_path / "out", validation_fraction=0.0, shard_tokens=40, **QUIET
    )
    shards = sorted(out.glob("train-*.txt"))
    assert len(shards) > 3 and not (out / "train.txt").exists()
    assert [path.name for path in shards[:2]] == ["train-00000.txt", "train-00001.txt"]
    assert [line for shard in shards for line in lines(shard)] == lines(whole / "train.txt")
    sizes = [sum(len(line.split()) for line in lines(shard)) for shard in shards]
    assert all(40 <= size < 40 + 10 for size in sizes[:-1]) and 0 < sizes[-1] < 50
    files = manifest(out)["stats"]["files"]
    assert [files[path.name]["tokens"] for path in shards] == sizes
    # Without shards in the same directory: the earlier shards are gone.
    prepare_corpus([corpus], out, validation_fraction=0.0, **QUIET)
    assert not list(out.glob("train-*.txt")) and (out / "train.txt").exists()


def test_gzip_jsonl_and_paragraphs(tmp_path):
    write(tmp_path / "in" / "a.txt.gz", gzip.compress("One from gzip.\n\nTwo from gzip.\n".encode()))
    records = [
        {"body": "A json text. Second sentence.", "id": 1},
        {"body": "Para one.\n\nPara two.", "id": 2},
        {"other": "no body"},
        [1, 2],
    ]
    json_lines = "\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n{broken\n"
    write(tmp_path / "in" / "b.jsonl", json_lines)
    out = prepare_corpus(
        [tmp_path / "in"], tmp_path / "out", validation_fraction=0.0, text_field="body", **QUIET
    )
    expected = [
        "One from gzip .", "Two from gzip .", "A json text .", "Second sentence .",
        "Para one .", "Para two .",
    ]
    assert lines(out / "train.txt") == expected
    stats = manifest(out)["stats"]
    assert stats["splits"]["train"]["documents"] == 3  # the .gz file, two JSON lines
    problems = stats["problems"][str(tmp_path / "in" / "b.jsonl")]
    assert problems == {"invalid_json_lines": 1, "lines_without_text_field_body": 2}
    out = prepare_corpus(
        [tmp_path / "in"], tmp_path / "para", validation_fraction=0.0, text_field="body",
        paragraphs=True, **QUIET,
    )
    assert lines(out / "train.txt") == expected
    assert manifest(out)["stats"]["splits"]["train"]["documents"] == 5


def test_bad_input_is_counted_and_named(tmp_path, caplog):
    directory = tmp_path / "in"
    write(directory / "bad_utf8.txt", b"Caf\xe9 au lait. Fine \xff\xfe here.\n")
    write(directory / "nul.txt", b"Before\x00after. " + b"Plain words here. " * 20 + b"\n")
    write(directory / "empty.txt", b"")
    write(directory / "blank.txt", b"  \n\n\t\n")
    write(directory / "binary.txt", bytes(range(256)) * 8)
    write(directory / "utf16.txt", "Some text.\n".encode("utf-16"))
    write(directory / "bad.txt.gz", b"not gzip at all")
    write(directory / "notes.md", "# not read\n")
    write(directory / "bom.txt", "\ufeffWith a byte order mark.\n")
    out = prepare_corpus([directory], tmp_path / "out", validation_fraction=0.0, **QUIET)
    assert lines(out / "train.txt") == [  # spaCy makes each U+FFFD a token of its own
        "Caf \ufffd au lait .",
        "Fine \ufffd \ufffd here .",
        "With a byte order mark .",
        "Before after .",
        "Plain words here .",
    ]
    stats = manifest(out)["stats"]
    assert stats["duplicates_removed"] == 19
    reasons = {entry["path"].rsplit("/", 1)[1]: entry["reason"] for entry in stats["skipped"]}
    assert sorted(reasons) == [
        "bad.txt.gz", "binary.txt", "blank.txt", "empty.txt", "notes.md", "utf16.txt"
    ]
    assert reasons["empty.txt"] == "empty file"
    assert reasons["binary.txt"].startswith("binary or not UTF-8 (")
    assert reasons["utf16.txt"].startswith("binary (")
    assert reasons["bad.txt.gz"].startswith("cannot be read (")
    assert reasons["blank.txt"].startswith("no text")
    assert reasons["notes.md"] == "not .txt, .txt.gz, .jsonl or .jsonl.gz"
    assert stats["problems"] == {
        str(directory / "bad_utf8.txt"): {"lines_with_invalid_utf8": 1},
        str(directory / "nul.txt"): {"lines_with_nul": 1},
    }
    logged = caplog.text
    assert "skipped" in logged and "utf16.txt" in logged and "lines with nul: 1" in logged


def test_truncated_gzip_keeps_the_text_before_the_error(tmp_path):
    data = gzip.compress(b"A whole sentence number 0 here.\n")
    big = gzip.compress("".join(f"Sentence {n} is here.\n" for n in range(3000)).encode())
    write(tmp_path / "in" / "ok.txt.gz", data)
    write(tmp_path / "in" / "cut.txt.gz", big[: len(big) // 2])
    out = prepare_corpus([tmp_path / "in"], tmp_path / "out", validation_fraction=0.0, **QUIET)
    written = lines(out / "train.txt")
    assert written[0] == "Sentence 0 is here ." and written[-1] == "A whole sentence number 0 here ."
    problems = manifest(out)["stats"]["problems"][str(tmp_path / "in" / "cut.txt.gz")]
    assert "the text before it was kept" in problems["read_error"]


def test_huge_line_without_newline_is_cut_at_whitespace(tmp_path):
    # 3 MB on one line, 3 times spaCy's max_length: read in 100,000-character pieces.
    words = [f"word{n:026d}" for n in range(100_000)]
    write(tmp_path / "huge.txt", " ".join(words) + " end.")
    out = prepare_corpus([tmp_path / "huge.txt"], tmp_path / "out", validation_fraction=0.0,
                         **QUIET)
    written = [token for line in lines(out / "train.txt") for token in line.split()]
    assert written == words + ["end", "."]
    problems = manifest(out)["stats"]["problems"][str(tmp_path / "huge.txt")]
    assert problems == {"long_lines_cut": 1}


def test_word_longer_than_a_piece_is_cut_between_characters(tmp_path, monkeypatch):
    monkeypatch.setattr(module, "CHUNK_CHARACTERS", 64)
    monkeypatch.setattr(corpus_module, "PIECE_BYTES", 64)
    word = "é" * 50  # 100 bytes: no whitespace to cut at
    write(tmp_path / "a.txt", f"Short start here {word} tail.\n")
    write(tmp_path / "b.jsonl", json.dumps({"text": "ж" * 70 + " next"}) + "\n")
    out = prepare_corpus([tmp_path / "a.txt", tmp_path / "b.jsonl"], tmp_path / "out",
                         validation_fraction=0.0, **QUIET)
    written = lines(out / "train.txt")
    assert "\ufffd" not in "".join(written)
    assert "".join("".join(written).split()) == f"Shortstarthere{word}tail." + "ж" * 70 + "next"
    problems = manifest(out)["stats"]["problems"]
    assert problems[str(tmp_path / "a.txt")] == {"long_lines_cut": 1, "long_words_cut": 1}
    assert problems[str(tmp_path / "b.jsonl")] == {"long_lines_cut": 1, "long_words_cut": 2}


@pytest.mark.parametrize(
    "inputs, options, message",
    [
        (["missing.txt"], {}, "input .*missing.txt does not exist"),
        (["empty_dir"], {}, "nothing usable in"),
        (["only_binary"], {}, "nothing usable in .*binary"),
        (["blank.txt"], {}, "hold no text"),
        (["notes.md"], {}, "notes.md is not a .txt"),
        (["ok.txt"], {"language": "qq"}, "'qq' \\(--language\\)"),
        (["ok.txt"], {"validation_fraction": 1.0}, "--validation-fraction"),
        (["ok.txt"], {"shard_tokens": 0}, "--shard-tokens"),
        (["ok.txt"], {"duplicate_window": 1}, "--duplicate-window must be >= 2"),
    ],
)
def test_clear_errors(tmp_path, inputs, options, message):
    (tmp_path / "empty_dir").mkdir()
    write(tmp_path / "only_binary" / "x.txt", b"\x00\x01" * 100)
    write(tmp_path / "blank.txt", "   \n")
    write(tmp_path / "notes.md", "Text.\n")
    write(tmp_path / "ok.txt", "Text.\n")
    with pytest.raises(ConfigurationError, match=message):
        prepare_corpus([tmp_path / p for p in inputs], tmp_path / "out", **options, **QUIET)
    assert not (tmp_path / "out" / "manifest.json").exists()
    assert not (tmp_path / "out" / "train.txt").exists()


def test_second_run_is_a_no_op_and_an_interrupted_run_leaves_nothing_finished(
    tmp_path, monkeypatch
):
    corpus = documents_corpus(tmp_path / "in", count=5)
    out = prepare_corpus([corpus], tmp_path / "out", **QUIET)
    stamp = (out / "train.txt").stat().st_mtime_ns
    prepare_corpus([corpus], out, **QUIET)
    assert (out / "train.txt").stat().st_mtime_ns == stamp
    prepare_corpus([corpus], out, force=True, **QUIET)
    assert (out / "train.txt").stat().st_mtime_ns != stamp

    calls = []

    def interrupt(*args):
        calls.append(args)
        if len(calls) % 3 == 0:
            raise KeyboardInterrupt

    monkeypatch.setattr(module._Writer, "write", lambda self, *args: interrupt(*args))
    with pytest.raises(KeyboardInterrupt):
        prepare_corpus([corpus], tmp_path / "cut", **QUIET)
    assert sorted(p.name for p in (tmp_path / "cut").iterdir()) == []
    with pytest.raises(KeyboardInterrupt):
        prepare_corpus([corpus], out, force=True, **QUIET)
    assert not (out / "manifest.json").exists()  # the earlier build no longer looks finished
    monkeypatch.undo()
    prepare_corpus([corpus], out, **QUIET)
    assert (out / "manifest.json").exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_output_is_what_lm_corpus_reads(tmp_path):
    write(tmp_path / "a.txt", "Ein Satz über Köln. Noch einer!\n")
    out = prepare_corpus([tmp_path / "a.txt"], tmp_path / "out", validation_fraction=0.0,
                         language="de", **QUIET)
    read = [[t.text for t in i["tokens"].tokens] for i in LmCorpusReader().read(out / "train.txt")]
    assert read == [
        ["<S>", "Ein", "Satz", "über", "Köln", ".", "</S>"],
        ["<S>", "Noch", "einer", "!", "</S>"],
    ]


def test_output_directory_inside_the_input_directory_is_not_read(tmp_path):
    write(tmp_path / "in" / "a.txt", "First text here.\n")
    out = prepare_corpus([tmp_path / "in"], tmp_path / "in" / "out", validation_fraction=0.0,
                         **QUIET)
    write(tmp_path / "in" / "b.txt", "Second text here.\n")
    prepare_corpus([tmp_path / "in"], out, validation_fraction=0.0, **QUIET)
    assert lines(out / "train.txt") == ["First text here .", "Second text here ."]
    assert manifest(out)["stats"]["skipped"] == []


def test_command_line(tmp_path, monkeypatch):
    corpus = documents_corpus(tmp_path / "in", count=6)
    write(tmp_path / "extra.txt", "One more text.\n")
    argv = [
        "allennlp", "prepare-corpus", str(corpus), str(tmp_path / "extra.txt"),
        str(tmp_path / "out"), "--validation-fraction", "0.5", "--seed", "3",
        "--shard-tokens", "30", "--language", "en", "--quiet",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    main(prog="allennlp")
    recipe = manifest(tmp_path / "out")["recipe"]
    assert recipe["seed"] == 3 and recipe["validation_fraction"] == 0.5
    assert recipe["shard_tokens"] == 30 and len(recipe["inputs"]) == 7
    assert (tmp_path / "out" / "train-00000.txt").exists()
    monkeypatch.setattr(sys, "argv", ["allennlp", "prepare-corpus", str(tmp_path / "out")])
    with pytest.raises(SystemExit):  # argparse: "the following arguments are required"
        main(prog="allennlp")


def test_output_is_what_train_fasttext_takes(tmp_path):
    corpus = documents_corpus(tmp_path / "in", count=30)
    out = prepare_corpus([corpus], tmp_path / "out", validation_fraction=0.0, **QUIET)
    model = fasttext.load_model(str(train_fasttext(
        out / "train.txt", tmp_path / "v.bin", dim=8, bucket=1000, epoch=1, min_count=1,
        threads=1, verbose=0,
    )))
    assert {"Document", "middle", "29", "."} <= set(model.words)


def test_a_json_line_over_the_cap_is_skipped_and_counted(tmp_path, monkeypatch):
    """A received `.jsonl` whose line is huge: skipped without holding it (the line is never
    read whole into memory), the lines after it kept, the skip counted."""
    monkeypatch.setattr(module, "MAX_JSON_LINE_BYTES", 1000)
    huge = json.dumps({"text": "word " * 2000})  # 10 KB, over the (patched) cap
    lines_in = [json.dumps({"text": "Before it."}), huge, json.dumps({"text": "After it."})]
    write(tmp_path / "in" / "c.jsonl", "\n".join(lines_in) + "\n")
    out = prepare_corpus([tmp_path / "in"], tmp_path / "out", validation_fraction=0.0, **QUIET)
    assert lines(out / "train.txt") == ["Before it .", "After it ."]
    problems = manifest(out)["stats"]["problems"][str(tmp_path / "in" / "c.jsonl")]
    assert problems == {"lines_over_max_json_line_bytes": 1}
