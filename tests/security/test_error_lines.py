"""
The plugin's own commands report a refusal (a `ConfigurationError`) as one line, `error: ...`,
naming what was refused, and exit with status 1; `--verbose` or `ELMO_C_DEBUG=1` shows the
traceback.

Without `--verbose` or `ELMO_C_DEBUG=1`, no refusal prints a Python traceback (with the
message at its end).
"""

import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from allennlp.commands import main
from allennlp.common.checks import ConfigurationError

from tests import PROJECT_ROOT

PROG = "python -m allennlp_elmo_c"


def received(tmp_path: Path) -> Dict[str, Path]:
    """A received `model.tar.gz` that is not an archive, a text to embed, a task config."""
    model = tmp_path / "model.tar.gz"
    model.write_bytes(b"not a gzip file, though named like one\n")
    text = tmp_path / "sentences.txt"
    text.write_text("the council met .\n", encoding="utf-8")
    return {"model": model, "text": text}


# Each command with arguments it refuses, and what the one line must name.
COMMANDS: Dict[str, Callable[[Path, Dict[str, Path]], List[str]]] = {
    "elmo-c-embed": lambda t, f: [str(f["model"]), str(f["text"]), str(t / "out.hdf5")],
    "package": lambda t, f: [str(f["model"]), str(t / "packaged")],
    "describe": lambda t, f: [str(f["model"])],
    "convert-config": lambda t, f: [str(t / "no_such_config.jsonnet"), str(f["model"]),
                                    str(t / "out.json")],  # fmt: skip
    "prepare-corpus": lambda t, f: [str(t / "no_such_text.txt"), str(t / "corpus")],
    "train-fasttext": lambda t, f: [str(t / "no_such_corpus.txt"), str(t / "vectors.bin")],
    "train-bpe": lambda t, f: [str(t / "no_such_corpus.txt"), str(t / "bpe")],
}


def run(argv: List[str], monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", [PROG, *argv])
    main(prog=PROG)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_refusal_is_one_line_and_status_1(command, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ELMO_C_DEBUG", raising=False)
    arguments = COMMANDS[command](tmp_path, received(tmp_path))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        run([command, *arguments], monkeypatch)
    assert exit.value.code == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, errors
    named = [path for path in arguments if Path(path).name in errors[0]]
    assert named, f"{errors[0]!r} names none of {arguments}"
    assert not (tmp_path / "out.hdf5").exists() and not (tmp_path / "packaged").exists()


@pytest.mark.parametrize("how", ["--verbose", "ELMO_C_DEBUG=1"])
def test_verbose_or_the_variable_raise_with_the_traceback(how, tmp_path, monkeypatch):
    files = received(tmp_path)
    argv = ["describe", str(files["model"])]
    if how == "--verbose":
        argv.append("--verbose")
    else:
        monkeypatch.setenv("ELMO_C_DEBUG", "1")
    with pytest.raises(ConfigurationError, match="model.tar.gz"):
        run(argv, monkeypatch)


def test_the_command_line_prints_one_line_and_no_traceback(tmp_path):
    """Through the real entry point, in a process of its own."""
    files = received(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "allennlp_elmo_c", "describe", str(files["model"])],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert str(files["model"]) in line


def test_multi_line_messages_become_one_line():
    from allennlp_elmo_c.commands.subcommand import one_line

    message = "Could not recover training:\n  a.th: missing\n  b.th: damaged\nMove them away."
    expected = "Could not recover training: a.th: missing; b.th: damaged; Move them away."
    assert one_line(message) == expected
