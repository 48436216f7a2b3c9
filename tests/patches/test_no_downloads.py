"""`patches.no_downloads`: importing allennlp-models' NarrativeQA tool downloads nothing."""

import sys


def test_the_narrativeqa_import_downloads_nothing_and_nltk_download_stays_nltks(tmp_path):
    """allennlp-models' NarrativeQA tool, imported after the plugin (what `python -m
    allennlp_elmo_c` and Python code do), neither tries the network nor prints; `nltk.download`
    is NLTK's own before and after. Without the plugin the same import prints NLTK's errors
    (or finds punkt installed on this machine)."""
    import subprocess
    import sys

    from tests.helpers import offline_environment

    script = """
import logging, nltk, sys
logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format="%(name)s: %(message)s")
download = nltk.download
try:
    nltk.data.find("tokenizers/punkt")
    print("punkt installed")
except LookupError:
    pass
if sys.argv[1] == "plugin":
    import allennlp_elmo_c
import allennlp_models.rc.tools.narrativeqa
print("nltk.download is NLTK's:", nltk.download is download)
"""
    environment = offline_environment(tmp_path / "home")

    def run(mode):
        return subprocess.run([sys.executable, "-c", script, mode], env=environment,
                              capture_output=True, text=True, timeout=600)  # fmt: skip

    quiet, loud = run("plugin"), run("alone")
    assert quiet.returncode == 0 and loud.returncode == 0, (
        quiet.stderr[-2000:] + loud.stderr[-2000:]
    )
    assert quiet.stderr == "", quiet.stderr
    assert "nltk.download is NLTK's: True" in quiet.stdout
    if "punkt installed" not in quiet.stdout:
        for name in ("punkt", "wordnet"):
            assert (f"allennlp_elmo_c.startup: nltk.download('{name}') from "
                    "allennlp_models.rc.tools.narrativeqa skipped") in quiet.stdout  # fmt: skip
        assert "[nltk_data] Error loading punkt" in loud.stderr
    assert not (tmp_path / "home" / "nltk_data").exists()


def test_the_finder_wraps_only_the_narrativeqa_import():
    import importlib.machinery

    import allennlp_elmo_c_startup as startup

    finder = startup.QuietNarrativeQAFinder()
    assert finder.find_spec("allennlp_models.rc.tools.squad", None) is None
    assert finder.find_spec("nltk", None) is None
    import allennlp_models.rc.tools as tools

    spec = finder.find_spec(startup.NARRATIVEQA, tools.__path__)
    assert isinstance(spec.loader, startup._QuietLoader)
    assert isinstance(spec.loader.loader, importlib.machinery.SourceFileLoader)
    assert spec.loader.get_filename(startup.NARRATIVEQA).endswith("narrativeqa.py")
    before = list(sys.meta_path)
    startup.install()
    startup.install()
    assert sum(type(f).__name__ == "QuietNarrativeQAFinder" for f in sys.meta_path) <= 1
    sys.meta_path[:] = before
