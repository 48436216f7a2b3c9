import json

import pytest

from allennlp.common.checks import ConfigurationError

from experiments.demo.main import CONFIG, POS_CONFIG, config
from tests.helpers import PROJECT_ROOT


def test_configs_take_their_variables_from_the_demo_not_the_environment(tmp_path, monkeypatch):
    for name in ("ELMO_C_DATA_DIR", "ELMO_C_ARCHIVE", "ELMO_C_BASELINE"):
        monkeypatch.delenv(name, raising=False)
    params = config(PROJECT_ROOT, CONFIG, {"ELMO_C_DATA_DIR": str(tmp_path)})
    assert params["train_data_path"].startswith(str(tmp_path))
    for name in ("ELMO_C_FASTTEXT", "POS_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    variables = {"ELMO_C_FASTTEXT": "v.bin", "POS_DATA_DIR": str(tmp_path), "ELMO_C_ARCHIVE": "x",
                 "ELMO_C_BASELINE": "none"}  # fmt: skip
    downstream = config(PROJECT_ROOT, POS_CONFIG, variables, {"trainer.num_epochs": 2})
    assert downstream["train_data_path"].startswith(str(tmp_path))
    assert downstream["trainer"]["num_epochs"] == 2


def test_a_missing_project_directory_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigurationError, match="--project-dir"):
        config(tmp_path, CONFIG, {"ELMO_C_DATA_DIR": str(tmp_path)})


def test_the_demo_prints_its_steps_and_results_and_logs_the_rest_to_files(
    tmp_path, monkeypatch, capsys
):
    """`make demo`'s entry point end to end at fixture size (tiny corpus, 16-d fastText, a few
    Brown sentences): the terminal shows the steps, the bars and the results table only."""
    from experiments.demo import main as demo
    from tests.experiments.corpora.test_brown_pos import brown_tarball
    from tests.helpers import DEMO_AT_FIXTURE_SIZE, make_demo_data_dir

    data = make_demo_data_dir(tmp_path / "data")
    (data / "fasttext" / "frequent_words.txt").unlink()  # the demo writes its own
    news = {"train": data / "news" / "train.txt", "dev": data / "news" / "dev.txt"}
    brown = brown_tarball(tmp_path)
    monkeypatch.setattr(demo, "build_demo_data", lambda data_dir: {"news": news})
    monkeypatch.setattr(demo, "brown_source", lambda cache_dir: brown)
    monkeypatch.setattr(demo, "train_fasttext", lambda *args, **kwargs: data / "fasttext" / "news.100d.bin")
    monkeypatch.setattr(demo, "FASTTEXT_DIM", 16)
    monkeypatch.setattr(demo, "POS_SETTINGS", dict(demo.POS_SETTINGS, **{"trainer.num_epochs": 2}))
    full_size_config = demo.config

    def fixture_size_config(project_dir, relative, ext_vars, overrides=None):
        if relative == demo.CONFIG:
            overrides = dict(overrides or {}, **DEMO_AT_FIXTURE_SIZE)
        return full_size_config(project_dir, relative, ext_vars, overrides)

    monkeypatch.setattr(demo, "config", fixture_size_config)
    # 8 batches at fixture size: record every 2 for a curve of 4 points.
    monkeypatch.setattr(demo, "CURVE_EVERY", 2)
    demo.main(["--data-dir", str(data), "--project-dir", str(PROJECT_ROOT)])

    printed = capsys.readouterr()
    terminal = printed.out + printed.err
    for header in ("== 1/5", "== 2/5", "== 3/5", "== 4/5", "== 5/5", "== result"):
        assert header in printed.out
    assert "after pretraining" in printed.out and "| fastText only |" in printed.out
    assert "  plan: 8 updates, about " in printed.out  # before the pretraining
    assert "| fastText + ELMo-C |" in printed.out
    assert "tensor(" not in terminal and "Progress:" not in terminal and " INFO " not in terminal
    assert len(printed.out.splitlines()) < 45, printed.out
    curve = json.loads((data / "runs" / "elmo_c_demo" / "curve.json").read_text())
    assert curve and {"batch", "loss", "forward_cosine", "backward_cosine"} <= set(curve[0])
    png = data / "runs" / "elmo_c_demo" / "pretraining_curve.png"
    assert png.read_bytes().startswith(b"\x89PNG") and "training curve" in printed.out
    for run in ("elmo_c_demo", "pos_elmo_c", "pos_fasttext_only"):
        log = (data / "runs" / run / "out.log").read_text()
        assert "Epoch" in log and "tensor(" not in log
    # bfloat16 where this CPU supports it, said in the output and recorded in the archive and
    # in the result the README renders.
    precision, why = demo.pretraining_precision()
    assert f"  precision: {precision} ({why})" in printed.out
    config_json = json.loads((data / "runs" / "elmo_c_demo" / "config.json").read_text())
    assert config_json["model"]["precision"] == precision
    result = json.loads((data / "runs" / "result.json").read_text())
    assert result["precision"] == precision and result["baseline"] == "fastText only"
    assert set(result["test_accuracy"]) == {"fastText + ELMo-C", "fastText only"}


def test_the_demo_falls_back_to_float32_where_bfloat16_is_slow(monkeypatch):
    from experiments.demo import main as demo

    monkeypatch.setattr(demo, "bfloat16_unsupported", lambda device: "no AVX-512 here")
    assert demo.pretraining_precision() == ("float32", "no AVX-512 here")
    monkeypatch.setattr(demo, "bfloat16_unsupported", lambda device: None)
    assert demo.pretraining_precision()[0] == "bfloat16"
