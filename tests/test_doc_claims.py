"""
Claims the docs make about the code, checked against the code: the patches docs/install.md
lists and the defaults it gives, the signatures of `ElmoC` and `ElmoCEmbedder` in
docs/using-a-model.md and how `ElmoC`'s arguments differ from AllenNLP's `Elmo` in the README,
the test files docs/development.md names as the GPU tests, the task formats
docs/choosing-a-bilm.md says `probe-screen --help` prints, the number of commands the docs give
the README's blocks, prepare-corpus's duplicate window in docs/your-data.md, and the lengths
issue 73 sets: the README at most 1,000 words and 500 characters a line, docs/ 800 a line.
(tests/test_docs.py checks the commands, links, paths and the environment variable table.)
"""

import argparse
import ast
import inspect
import pkgutil
import re
from typing import Dict, List

import pytest
from allennlp.modules.elmo import Elmo

from allennlp_elmo_c import ElmoC, ElmoCEmbedder, patches
from allennlp_elmo_c.commands import probe_screen
from allennlp_elmo_c.common.config_defaults import CONFIG_DEFAULTS
from tests import PROJECT_ROOT
from tests.helpers import DOC_FILES, doc_blocks


def doc(name: str) -> str:
    return (PROJECT_ROOT / name).read_text(encoding="utf-8")


def section(name: str, heading: str) -> str:
    """The text under `heading` (a whole heading line) up to the next heading of its level or
    above."""
    text = doc(name)
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    level = heading.split(" ", 1)[0]
    ends = [m.start() for m in re.finditer(r"\n(#+) ", text[start:]) if len(m.group(1)) <= len(level)]
    return text[start : start + ends[0]] if ends else text[start:]


# --- docs/install.md: the patches ------------------------------------------------------------------

PATCH_SECTION = ("docs/install.md", "### What importing the package changes")


def test_the_install_page_lists_every_patch_module_and_no_other():
    listed = re.findall(r"^- `(\w+)\.py`", section(*PATCH_SECTION), flags=re.MULTILINE)
    modules = {info.name for info in pkgutil.iter_modules(patches.__path__)}
    applied = {patch.__name__.rsplit(".", 1)[1] for patch in patches.PATCHES}
    assert applied == modules, "a module of allennlp_elmo_c/patches/ that apply() leaves out"
    assert set(listed) == modules, f"docs/install.md lists {sorted(listed)}, the package has {sorted(modules)}"


def test_the_install_page_gives_the_config_defaults_the_plugin_sets():
    bullet = re.search(r"^- `config_defaults\.py`:(.*?)(?:\n\n|\n- )", section(*PATCH_SECTION),
                       flags=re.MULTILINE | re.DOTALL).group(1)  # fmt: skip
    given = dict(re.findall(r"`(ELMO_C_[A-Z_]+)` `?([\w.]+)`?", " ".join(bullet.split())))
    assert given == CONFIG_DEFAULTS


# --- ElmoC and ElmoCEmbedder ---------------------------------------------------------------------


def documented_signature(text: str, name: str) -> Dict[str, object]:
    """{parameter: its default, or `inspect.Parameter.empty`} of the first `name(...)` call
    written in backticks in `text` (a line break inside it read as a space)."""
    call = re.search(rf"`({name}\([^`]*\))`", text).group(1)
    node = ast.parse(" ".join(call.split()), mode="eval").body
    assert isinstance(node, ast.Call)
    parameters: Dict[str, object] = {arg.id: inspect.Parameter.empty for arg in node.args}
    parameters.update({k.arg: ast.literal_eval(k.value) for k in node.keywords})
    return parameters


def real_signature(function) -> Dict[str, object]:
    return {name: p.default for name, p in inspect.signature(function).parameters.items()
            if name != "self"}  # fmt: skip


def test_the_python_section_gives_the_front_doors_real_signatures():
    python = section("docs/using-a-model.md", "## Python")
    for name, cls in (("ElmoC", ElmoC), ("ElmoCEmbedder", ElmoCEmbedder)):
        assert documented_signature(python, name) == real_signature(cls.__init__), name


def test_the_readme_says_which_of_elmos_arguments_elmo_c_lacks():
    row = next(line for line in doc("README.md").splitlines()
               if line.startswith("| `Elmo(options_file, weight_file, ...)`"))  # fmt: skip
    found = re.search(r"the same other arguments(?: but ((?:`\w+`(?:, | and )?)+))?", row)
    assert found, row
    lacking = set(re.findall(r"`(\w+)`", found.group(1) or ""))
    theirs = set(real_signature(Elmo.__init__)) - {"options_file", "weight_file"}
    ours = set(real_signature(ElmoC.__init__)) - {"model"}
    assert theirs - lacking == ours


def test_elmo_c_has_no_fasttext_path_where_the_docs_say_it_has_none():
    assert "fasttext_path" not in real_signature(ElmoC.__init__)
    assert "fasttext_path" in real_signature(ElmoCEmbedder.__init__)
    order = section("docs/using-a-model.md", "## Where the biLM's fastText `.bin` is found")
    assert "`ElmoC` and the indexer's `archive_file` have none" in order


# --- docs/development.md: the GPU tests ------------------------------------------------------------

GPU_MARK = re.compile(r"skipif\(\s*not torch\.cuda\.is_available\(\)")


def test_the_gpu_tests_named_are_the_test_files_with_a_gpu_test():
    with_gpu_tests = {path.name for path in (PROJECT_ROOT / "tests").rglob("test_*.py")
                      if GPU_MARK.search(path.read_text(encoding="utf-8"))}  # fmt: skip
    text = " ".join(doc("docs/development.md").split())
    listing = text[text.index("the tests that need a GPU skip without one.") : text.index("They last ran")]
    named = set(re.findall(r"(test_\w+\.py)", listing))
    assert named == with_gpu_tests


# --- probe-screen --help ---------------------------------------------------------------------------


def test_probe_screen_help_prints_every_task_format_the_guide_sends_readers_to():
    guide = " ".join(doc("docs/choosing-a-bilm.md").split())
    assert "are in `python -m allennlp_elmo_c probe-screen --help`" in guide
    sent = set(re.findall(r"`--task (\w+)=`|`(\w+)=`", guide[guide.index("Other task formats") :][:200]))
    sent = {a or b for a, b in sent}
    parser = argparse.ArgumentParser(prog="allennlp")
    subparsers = parser.add_subparsers()
    probe_screen.ProbeScreen().add_subparser(subparsers)
    shown = subparsers.choices["probe-screen"].format_help()
    assert sent and sent <= set(probe_screen.SPLIT_FILES)
    for task, suffix in probe_screen.SPLIT_FILES.items():
        line = next((line for line in shown.splitlines() if line.split()[:1] == [task]), None)
        assert line is not None, f"{task} is not in probe-screen --help"
        assert suffix in line and probe_screen.TASK_FORMATS[task] in line, line


# --- "in five commands" ---------------------------------------------------------------------------

NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
COUNT = re.compile(rf"\b({'|'.join(NUMBERS)})\]?(?:\([^)\s]*\))? commands\b")
INSTALL_HEADING = "Install and the two commands"


def commands(code: str) -> List[str]:
    """The commands of a shell block, continuation lines joined; `export` lines set variables and
    are not counted."""
    joined = code.replace("\\\n", " ")
    return [line for line in joined.splitlines() if line.strip() and not line.startswith("export ")]


def test_every_count_of_commands_is_the_commands_of_its_block():
    """The README's install heading counts its `two-commands` block; every other "N commands" of
    the docs is the README's walkthrough (its heading, and the pages that send readers to it)."""
    install = next(b for b in doc_blocks("parse-only: two-commands", ["README.md"]))
    walkthrough = next(b for b in doc_blocks("walkthrough", ["README.md"]))
    wrong, seen = [], 0
    for name in DOC_FILES:
        for line in " ".join(doc(name).split()).split(". "):
            for word in COUNT.findall(line):
                seen += 1
                block = install if INSTALL_HEADING in line else walkthrough
                if NUMBERS[word] != len(commands(block.code)):
                    wrong.append(f"{name}: {word} commands, where {block.marker} has "
                                 f"{len(commands(block.code))}: {line.strip()[:80]}")  # fmt: skip
    assert seen >= 6 and not wrong, "\n".join(wrong)


def test_the_duplicate_window_the_data_guide_gives_is_prepare_corpus_default():
    from allennlp_elmo_c.commands.prepare_corpus import DUPLICATE_WINDOW

    text = " ".join(doc("docs/your-data.md").split())
    found = re.search(r"`--duplicate-window` distinct sentences \(default ([\d,]+)\).*?up to "
                      r"(\d+)M distinct sentences is deduplicated exactly", text)  # fmt: skip
    assert found, "docs/your-data.md no longer states the window's default"
    assert int(found.group(1).replace(",", "")) == DUPLICATE_WINDOW
    assert int(found.group(2)) * 1_000_000 == DUPLICATE_WINDOW // 2


# --- lengths: a README read in two minutes, no paragraph on one endless line -----------------------

README_WORDS, README_LINE, DOCS_LINE = 1000, 500, 800


def long_lines(name: str, limit: int) -> List[str]:
    return [f"{name}:{number}: {len(line)} characters" for number, line in
            enumerate(doc(name).splitlines(), 1) if len(line) > limit]  # fmt: skip


def test_the_readme_is_at_most_1000_words_and_500_characters_a_line():
    assert len(doc("README.md").split()) <= README_WORDS  # as `wc -w` counts
    assert long_lines("README.md", README_LINE) == []


@pytest.mark.parametrize("name", [name for name in DOC_FILES if name != "README.md"])
def test_no_docs_line_is_over_800_characters(name):
    assert long_lines(name, DOCS_LINE) == []


# --- the commands the plugin adds, the shipped task configs, what each command takes ---------------

def plugin_commands() -> Dict[str, type]:
    from allennlp.commands.subcommand import Subcommand

    return {name: found for name, (found, _) in Subcommand._registry[Subcommand].items()
            if found.__module__.startswith("allennlp_elmo_c.")}  # fmt: skip


def test_the_install_page_names_every_command_the_plugin_adds():
    text = " ".join(section("docs/install.md", "## Loading the plugin").split())
    listed = text[text.index("The plugin's own commands") :].split(")", 1)[0]
    assert set(re.findall(r"`([\w-]+)`", listed)) == set(plugin_commands())


def test_the_shipped_task_config_table_lists_every_task_config():
    table = section("docs/using-a-model.md", "### The shipped task configs")
    listed = set(re.findall(r"^\| `(\w+\.jsonnet)` \|", table, flags=re.MULTILINE))
    shipped = {path.name for path in (PROJECT_ROOT / "downstream_configs").glob("*.jsonnet")}
    assert listed == shipped


def test_every_command_that_takes_a_model_says_it_takes_a_model_directory_too():
    # Every way in takes a `model.tar.gz` or a model directory (docs/using-a-model.md).
    parser = argparse.ArgumentParser(prog="allennlp")
    subparsers = parser.add_subparsers()
    wrong = []
    for name, command in sorted(plugin_commands().items()):
        command().add_subparser(subparsers)
        shown = " ".join(subparsers.choices[name].format_help().split())
        if "model.tar.gz" in shown and "directory" not in shown:
            wrong.append(name)
    assert wrong == []
