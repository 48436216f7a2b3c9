"""`experiments/speed/startup_time.py`: one command timed and its imports summed by package."""
from experiments.speed import startup_time


def test_one_command_timed_and_its_imports_summed(tmp_path, capsys):
    script = startup_time
    name = "python -c 'import allennlp_elmo_c'"
    result = script.main(["--repeats", "1", "--commands", name, "--imports-of", name,
                          "--json", str(tmp_path / "startup.json")])  # fmt: skip
    assert len(result["seconds"][name]) == 1 and result["seconds"][name][0] > 0
    imports = result["imports"]
    assert imports["torch"] > 0 and imports["allennlp"] > 0 and imports["allennlp_elmo_c"] > 0
    printed = capsys.readouterr().out
    assert f"| `{name}` |" in printed and "| torch |" in printed
    assert (tmp_path / "startup.json").is_file()
