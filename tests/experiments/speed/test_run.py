"""`experiments/speed/run.py --smoke`: every section at toy sizes, one step each, written into a temporary
folder. Output format only (JSON keys, the Markdown section between its markers, the plot), no
timing assertions."""
import json
import os

from tests import PROJECT_ROOT
from tests.reliability import forked

BEGIN, END = "<!-- report: speed-run -->", "<!-- /report -->"
# `python -m experiments.speed.run`, in a process of its own (forked: tests/reliability/forked.py)
RUN = "experiments.speed.run"


def test_smoke_run_writes_json_markdown_and_plot(tmp_path):
    out, report, figure = tmp_path / "results.json", tmp_path / "RESULTS.md", tmp_path / "plot.png"
    # An earlier run's section between the markers, with text around it to keep.
    report.write_text(f"# Results\n\nkept before\n\n{BEGIN}\nstale numbers\n{END}\n\nkept after\n")
    environment = dict(os.environ, OMP_NUM_THREADS="1",
                       PYTHONPATH=os.pathsep.join([str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")]))  # fmt: skip
    command = ["--smoke",
               "--device", "cpu", "--threads", "1", "--out", str(out), "--markdown", str(report),
               "--plot", str(figure)]  # fmt: skip
    finished = forked.run(command, environment, PROJECT_ROOT, module=RUN, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "Summary:" in finished.stdout

    results = json.loads(out.read_text())
    assert {"command", "machine", "profile", "memory_budget_gib", "sections", "seconds"} <= set(results)
    assert results["complete"] is True
    assert {"cpu", "cpu_cores", "torch", "date", "device"} <= set(results["machine"])
    sections = results["sections"]
    assert set(sections) == {"end_to_end", "output_layers", "encoders", "data_pipeline"}

    models = {row["model"] for row in sections["end_to_end"]}
    assert "ELMo-C" in models and any("AllenNLP ElmoLstm" in model for model in models)
    for row in sections["end_to_end"]:
        assert row["tokens_per_s"] > 0 and row["peak_memory_gib"] >= 0
        assert {"elmo_c_speedup", "elmo_c_memory_ratio", "trainable_parameters"} <= set(row)
        assert row["top_operators"] and 0 <= row["top_operators"][0]["share"] <= 1

    heads = sections["output_layers"]
    assert {row["type"] for row in heads} == {
        "continuous", "adaptive_softmax", "sampled_softmax", "softmax", "slim_softmax"
    }
    assert len({row["vocab_size"] for row in heads}) == 3
    for row in heads:
        assert row["fits"] is True
        for setting in ("batch1", "largest"):
            assert row[setting]["seconds_per_million_tokens"] > 0
            assert row[setting]["vs_continuous"] > 0

    encoders = sections["encoders"]
    assert len(encoders) == 8 and {row["head"] for row in encoders} == {
        "continuous (ELMo-C)", "adaptive"
    }
    pipeline = sections["data_pipeline"]
    assert 0 < pipeline["share_of_step"] < 1
    assert set(pipeline["tokens_per_s"]) == {"read", "index_and_batch", "fasttext_lookup"}

    text = report.read_text()
    assert text.startswith("# Results\n\nkept before\n") and text.rstrip().endswith("kept after")
    assert "stale numbers" not in text
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    for title in ("### 1. End to end", "### 2. Output layers", "### 3. Encoders", "### 4. Data"):
        assert title in text
    assert "| V | head | trainable params |" in text
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_end_to_end_rows_for_each_thread_count_and_batch(tmp_path):
    """`--threads 1 2 --e2e-batches 2 3`: the end-to-end rows at each thread count and batch,
    tagged and in the table."""
    out, report = tmp_path / "results.json", tmp_path / "RESULTS.md"
    environment = dict(os.environ, OMP_NUM_THREADS="1",
                       PYTHONPATH=os.pathsep.join([str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")]))  # fmt: skip
    command = ["--smoke", "--device", "cpu",
               "--sections", "end_to_end", "--threads", "1", "2", "--e2e-batches", "2", "3",
               "--out", str(out), "--markdown", str(report), "--profile-ops", "0"]  # fmt: skip
    finished = forked.run(command, environment, PROJECT_ROOT, module=RUN, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    rows = json.loads(out.read_text())["sections"]["end_to_end"]
    assert {(row["threads"], row["batch"]) for row in rows} == {(1, 2), (1, 3), (2, 2), (2, 3)}
    assert all(row["elmo_c_speedup"] > 0 for row in rows)
    assert "| threads | batch |" in report.read_text()


def test_smoke_run_leaves_the_committed_results_alone(tmp_path):
    """`--smoke` measures nothing: it writes only the paths it is given (here --markdown), never
    the committed experiments/speed/results.json, RESULTS.md and plot, and a section written without a
    JSON file names none."""
    committed = [PROJECT_ROOT / "experiments" / "speed" / name
                 for name in ("results.json", "RESULTS.md", "output_layer_scaling.png")]  # fmt: skip
    before = {path: path.read_bytes() for path in committed}
    report = tmp_path / "RESULTS.md"
    environment = dict(os.environ, OMP_NUM_THREADS="1",
                       PYTHONPATH=os.pathsep.join([str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")]))  # fmt: skip
    command = ["--smoke", "--device", "cpu",
               "--sections", "end_to_end", "output_layers", "--threads", "1", "--profile-ops", "0",
               "--markdown", str(report)]  # fmt: skip
    try:
        finished = forked.run(command, environment, PROJECT_ROOT, module=RUN, timeout=300)
        after = {path: path.read_bytes() for path in committed}
    finally:
        for path, content in before.items():  # a regression must not leave toy numbers behind
            if path.read_bytes() != content:
                path.write_bytes(content)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert after == before
    text = report.read_text()
    assert BEGIN in text and "Raw numbers" not in text
