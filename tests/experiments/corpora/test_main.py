"""`python -m experiments.corpora`: each command calls its builder with the options given, and
the plugin's own command line does not carry them."""
import sys

import pytest
from allennlp.commands import main as allennlp_main

from experiments.corpora import __main__ as corpora, build_demo_data, pretraining_corpus


def test_build_pretraining_corpus_calls_the_builder(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(pretraining_corpus, "build_pretraining_corpus",
                        lambda data_dir, skip_missing: calls.append((data_dir, skip_missing)))  # fmt: skip
    for extra, skip in (([], False), (["--skip-missing"], True)):
        corpora.main(["build-pretraining-corpus", "--data-dir", str(tmp_path), *extra])
        assert calls[-1] == (str(tmp_path), skip)


def test_build_demo_data_calls_the_builder(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(build_demo_data, "build_demo_data", lambda *args: calls.append(args))
    corpora.main(["build-demo-data", "--data-dir", str(tmp_path), "--news-source", "n.whl"])
    assert calls == [(str(tmp_path), "n.whl", None)]


@pytest.mark.parametrize("command", ["build-demo-data", "build-pretraining-corpus"])
def test_the_plugin_command_line_has_no_corpus_builders(command, monkeypatch, capsys):
    import allennlp_elmo_c  # noqa: F401  (registers every plugin command)

    monkeypatch.setattr(sys, "argv", ["allennlp", command, "--help"])
    with pytest.raises(SystemExit):
        allennlp_main(prog="allennlp")
    assert f"invalid choice: '{command}'" in capsys.readouterr().err
