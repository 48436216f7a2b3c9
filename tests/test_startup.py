"""
Installing and importing the plugin changes nothing outside AllenNLP's registries: no `.pth` is
installed, `import allennlp_elmo_c` writes no environment variable and registers nothing with
Hugging Face or spaCy, and spaCy's entry point imports spaCy's factory alone.
"""

import ast
import subprocess
import sys

from tests import PROJECT_ROOT


def _run(script: str) -> str:
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600, cwd=PROJECT_ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_importing_the_plugin_changes_no_environment_variable_and_no_other_registry():
    """What torch, AllenNLP, transformers and spaCy set as they load is theirs: they are
    imported first. The Hugging Face integration registers the Auto classes when imported."""
    printed = _run(
        "import os, sys, torch, allennlp.commands, transformers, spacy\n"
        "before = dict(os.environ)\n"
        "import allennlp_elmo_c\n"
        "from transformers.models.auto.configuration_auto import CONFIG_MAPPING\n"
        "print('changed', sorted(k for k in set(before) | set(os.environ)"
        " if before.get(k) != os.environ.get(k)))\n"
        "print('auto', 'elmo_c' in CONFIG_MAPPING)\n"
        "print('hf', 'allennlp_elmo_c.integrations.huggingface' in sys.modules)\n"
        "import allennlp_elmo_c.integrations.huggingface\n"
        "print('then', 'elmo_c' in CONFIG_MAPPING)\n"
    )
    assert "changed []" in printed and "auto False" in printed and "hf False" in printed
    assert "then True" in printed


def test_spacys_entry_point_imports_the_factory_alone():
    setup = (PROJECT_ROOT / "setup.py").read_text(encoding="utf-8")
    assert '"spacy_factories": ["elmo_c = allennlp_elmo_c_spacy:make_elmo_c"]' in setup
    printed = _run(
        "import sys, allennlp_elmo_c_spacy\n"
        "from spacy.language import Language\n"
        "print('factory', Language.has_factory('elmo_c'))\n"
        "print('plugin', any(m.startswith('allennlp_elmo_c.') or m == 'allennlp_elmo_c'"
        " for m in sys.modules))\n"
    )
    assert "factory True" in printed and "plugin False" in printed


def test_no_pth_file_is_installed():
    assert not list(PROJECT_ROOT.glob("*.pth"))
    tree = ast.parse((PROJECT_ROOT / "setup.py").read_text(encoding="utf-8"))
    keywords = {k.arg for node in ast.walk(tree) if isinstance(node, ast.Call)
                for k in node.keywords}  # fmt: skip
    assert "data_files" not in keywords
    makefile = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    assert not [line for line in makefile if ".pth" in line and "rm -f" not in line]


def test_use_free_cpus_sets_torch_threads(monkeypatch):
    import torch

    from allennlp_elmo_c import use_free_cpus
    from allennlp_elmo_c.common import threads

    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "free_cpus", lambda: 1)
    try:
        assert use_free_cpus() == 1 and torch.get_num_threads() == 1
        monkeypatch.setattr(threads, "usable_cpus", lambda: 2)
        assert use_free_cpus(2) == 2 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
