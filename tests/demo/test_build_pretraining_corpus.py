import sys

from allennlp.commands import main

from allennlp_elmo_c.demo import pretraining_corpus


def test_command_line_calls_the_builder(tmp_path, monkeypatch):
    calls = []

    def build(data_dir, skip_missing):
        calls.append((data_dir, skip_missing))

    monkeypatch.setattr(pretraining_corpus, "build_pretraining_corpus", build)
    for extra, skip in (([], False), (["--skip-missing"], True)):
        argv = ["allennlp", "build-pretraining-corpus", "--data-dir", str(tmp_path), *extra]
        monkeypatch.setattr(sys, "argv", argv)
        main(prog="allennlp")
        assert calls[-1] == (str(tmp_path), skip)
