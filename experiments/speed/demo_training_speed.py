"""
Whole training steps of the demo-size models (`training_config/*_demo.jsonnet`: the same encoder,
recipe and corpus, only the output layer and its input differ), measured in the same run:
`allennlp train` for a fixed number of batches of each config, one after the other, without
validation; the time is AllenNLP's `training_duration` (the training loop only: not vocabulary
counting, not model building).

    python -m experiments.speed.demo_training_speed --data-dir data [--batches 300]

Needs the demo data (`make demo`) and, for ELMo-Sub, a BPE in DATA_DIR/bpe (built here with
`train-bpe --vocab-size 8000` if missing). Prints steps per second and each model's time relative
to ELMo-C (> 1: slower), plus trainable parameters.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
CONFIGS = {
    "ELMo-C (continuous, cosine)": "elmo_c_demo.jsonnet",
    "ELMo-A (adaptive softmax)": "elmo_a_demo.jsonnet",
    "ELMo-Sub (BPE, tied softmax)": "elmo_sub_demo.jsonnet",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--batches", type=int, default=300)
    args = parser.parse_args()
    from experiments.common.duration import training_seconds

    data = Path(args.data_dir).resolve()
    python = [sys.executable, "-m", "allennlp_elmo_c"]
    if not (data / "bpe" / "tokenizer.json").is_file():
        subprocess.run(python + ["train-bpe", str(data / "news" / "train.txt"), str(data / "bpe"),
                                 "--vocab-size", "8000", "--quiet"], check=True)  # fmt: skip
    overrides = {
        "data_loader.batches_per_epoch": args.batches,
        "validation_data_path": None,
        "model.nearest_neighbour_words": None,
        "trainer.callbacks": [],
    }
    environment = dict(os.environ, ELMO_C_DATA_DIR=str(data))
    results = {}
    with tempfile.TemporaryDirectory() as runs:
        for name, config in CONFIGS.items():
            run = Path(runs) / config
            command = python + ["train", str(PROJECT / "training_config" / config), "-s", str(run)]
            command += ["-o", json.dumps(overrides), "--file-friendly-logging"]
            subprocess.run(command, cwd=PROJECT, env=environment, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
            metrics = json.loads((run / "metrics.json").read_text())
            log = (run / "out.log").read_text()
            trainable = next(
                line.split("Number of trainable parameters:")[-1].strip()
                for line in log.splitlines()
                if "Number of trainable parameters" in line
            ) if "Number of trainable parameters" in log else "?"  # fmt: skip
            results[name] = (training_seconds(metrics["training_duration"]), trainable)
    base = results["ELMo-C (continuous, cosine)"][0]
    print(f"{args.batches} batches of 64 windows, demo size (cell 256 / projection 128)")
    print("| model | trainable params | steps / s | time vs ELMo-C |")
    print("|---|---|---|---|")
    for name, (duration, trainable) in results.items():
        print(f"| {name} | {trainable} | {args.batches / duration:.2f} | {duration / base:.2f}x |")


if __name__ == "__main__":
    main()
