import json
import sys

import h5py
import numpy
import pytest
import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.commands import elmo_c_embed
from allennlp_elmo_c.commands.elmo_c_embed import embed_file
from allennlp_elmo_c.modules import elmo_c as front_doors
from allennlp_elmo_c.modules.elmo_c import ElmoC
from tests import PROJECT_ROOT
from tests.helpers import fasttext_ids, run_plugin_command

LINES = ["The council met on Friday .", "", "Storms closed schools", "Café 😀 日本語 naïve"]


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "input.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def test_all_layers_match_the_embedder(elmo_c_archive, text_file, tmp_path):
    output = embed_file(elmo_c_archive, text_file, tmp_path / "out.hdf5", batch_size=2)
    representations = ElmoC(str(elmo_c_archive), 0).eval()
    with h5py.File(output, "r") as hdf5:
        assert sorted(k for k in hdf5 if k != "sentence_to_index") == ["0", "1", "2", "3"]
        assert hdf5["0"].shape == (3, 6, 16) and hdf5["1"].shape == (3, 0, 16)
        assert hdf5["3"].shape == (3, 4, 16)
        mapping = json.loads(hdf5["sentence_to_index"][0])
        assert mapping["Storms closed schools"] == "2"
        with torch.no_grad():
            layers, _ = representations.layers(**fasttext_ids([LINES[2].split()]))
        expected = torch.stack(layers, dim=1)[0, :, 1:4].numpy()
        numpy.testing.assert_allclose(hdf5["2"][...], expected, atol=1e-5)


@pytest.mark.parametrize("mode, shape", [("top", (6, 16)), ("average", (6, 16))])
def test_top_and_average(elmo_c_archive, text_file, tmp_path, mode, shape):
    output = embed_file(elmo_c_archive, text_file, tmp_path / f"{mode}.hdf5", output_mode=mode)
    full = embed_file(elmo_c_archive, text_file, tmp_path / "all.hdf5")
    with h5py.File(output, "r") as hdf5, h5py.File(full, "r") as reference:
        assert hdf5["0"].shape == shape
        layers = reference["0"][...]
        expected = layers[-1] if mode == "top" else layers.mean(axis=0)
        numpy.testing.assert_allclose(hdf5["0"][...], expected, atol=1e-6)


def test_interrupted_run_leaves_no_complete_file_and_resumes(
    elmo_c_archive, text_file, tmp_path, monkeypatch
):
    calls = {"n": 0}
    real = front_doors.embed_sentences

    def dies_on_second_batch(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(front_doors, "embed_sentences", dies_on_second_batch)
    output = tmp_path / "out.hdf5"
    with pytest.raises(KeyboardInterrupt):
        embed_file(elmo_c_archive, text_file, output, batch_size=1)
    assert not output.exists() and (tmp_path / "out.hdf5.partial").exists()
    monkeypatch.setattr(front_doors, "embed_sentences", real)
    embed_file(elmo_c_archive, text_file, output, batch_size=1)
    # The same batches as the resumed run: other batch sizes round float32 differently.
    fresh = embed_file(elmo_c_archive, text_file, tmp_path / "fresh.hdf5", batch_size=1)
    with h5py.File(output, "r") as resumed, h5py.File(fresh, "r") as reference:
        for key in ("0", "1", "2", "3"):
            numpy.testing.assert_allclose(resumed[key][...], reference[key][...], atol=1e-6)


def test_bad_arguments(elmo_c_archive, text_file, tmp_path):
    with pytest.raises(ConfigurationError, match="does not exist"):
        embed_file(elmo_c_archive, tmp_path / "missing.txt", tmp_path / "o.hdf5")
    with pytest.raises(ConfigurationError, match="output mode"):
        embed_file(elmo_c_archive, text_file, tmp_path / "o.hdf5", output_mode="mix")
    (tmp_path / "exists.hdf5").write_text("")
    with pytest.raises(ConfigurationError, match="exists"):
        embed_file(elmo_c_archive, text_file, tmp_path / "exists.hdf5")


def test_command_line(elmo_c_archive, text_file, tmp_path):
    command = [sys.executable, "-m", "allennlp_elmo_c", "elmo-c-embed", str(elmo_c_archive)]
    command += [str(text_file), str(tmp_path / "cli.hdf5"), "--top", "--batch-size", "2"]
    result = run_plugin_command(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    with h5py.File(tmp_path / "cli.hdf5", "r") as hdf5:
        assert hdf5["2"].shape == (3, 16)


def test_command_errors_name_the_flags(elmo_c_archive, text_file, tmp_path):
    import argparse

    parser = argparse.ArgumentParser()
    elmo_c_embed.ElmoCEmbed().add_subparser(parser.add_subparsers())
    args = parser.parse_args(
        ["elmo-c-embed", str(elmo_c_archive), str(text_file), str(tmp_path / "o.hdf5")]
        + ["--fasttext-path", str(tmp_path / "missing.bin"), "--verbose"]
    )
    with pytest.raises(ConfigurationError) as error:
        args.func(args)
    assert "--fasttext-path" in str(error.value) and "fasttext_path" not in str(error.value)
