"""
The paper's efficiency claims measured side by side in one run, on whatever this runs on:

1. `end_to_end`: whole training steps (forward, backward, optimizer step) of ELMo-C (`elmo_c`:
   fastText input, our `elmo_lstm`, continuous head with the cosine loss) against the peer built
   from code no one here wrote: allennlp-models' `language_model` (bidirectional, `num_samples`
   8192: AllenNLP's `SampledSoftmaxLoss` with sparse embeddings and `dense_sparse_adam`, as its
   own bidirectional LM config) over ELMo's character CNN, with the same contextualizer (our
   `elmo_lstm`, then AllenNLP's own `ElmoLstm`), same batch, 800K-word softmax. Tokens/s and
   peak memory, ELMo-C / peer.
2. `output_layers` (Table 4): continuous, adaptive, sampled, full and slim softmax heads over
   random encoder outputs at V = 40K, 800K, 2,000K: time per 1M tokens at batch 1 and at the
   largest batch within `--memory-budget-gb` (doubling), parameters, peak memory.
3. `encoders` (Table 5): LSTMs of 1 and 2 layers, the ELMo encoder (`elmo_lstm`) and a
   Transformer, each with the continuous and the adaptive head at V = 800K: tokens/s.
4. `data_pipeline`: reading + `fasttext_subwords` indexing + batching + the fastText lookup,
   tokens/s, as a share of an ELMo-C training step.

    python -m experiments.speed.run --quick                    # < 10 min on 2 CPU cores
    python -m experiments.speed.run --full --device cuda       # paper sizes
    python -m experiments.speed.run --quick --sections output_layers encoders

Writes the raw numbers to `--out` (JSON), the tables into `--markdown` between markers (a rerun
replaces only that section) and the output-layer plot to `--plot`; by default the committed
experiments/speed/results.json, RESULTS.md and output_layer_scaling.png, but with `--smoke` only the
paths given. Timings are medians over repeated steps after warm-up; rows that are compared are
timed in turn, step by step (`timing.time_in_turn`), so load on the machine affects them alike.

This file is the command line; each section is in its own file (`run_end_to_end.py`,
`run_output_layers.py`, `run_encoders.py`, `run_data_pipeline.py`), the profiles, inputs and
models they share in `run_models.py`, the Markdown section, plot and summary in `run_report.py`.
"""

import argparse
import gc
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import List, Optional

import torch

from experiments.speed.run_data_pipeline import data_pipeline
from experiments.speed.run_encoders import encoders
from experiments.speed.run_end_to_end import PRECISIONS, end_to_end
from experiments.speed.run_models import ENCODER_SIZES, PROJECT, profile_for
from experiments.speed.run_output_layers import output_layers
from experiments.speed.run_report import markdown, plot, summary, write_markdown
from experiments.common.machine import machine_description
from experiments.common.timing import PeakMemory

SECTIONS = ("end_to_end", "output_layers", "encoders", "data_pipeline")


def relative(path: str) -> str:
    """`path` relative to the project if it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(PROJECT))
    except ValueError:
        return path


def parse_arguments(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_const", dest="profile", const="quick")
    mode.add_argument("--full", action="store_const", dest="profile", const="full")
    mode.add_argument("--smoke", action="store_const", dest="profile", const="smoke",
                      help="tiny sizes, one step: checks the plumbing, measures nothing")
    parser.add_argument("--device", choices=["cpu", "cuda"],
                        default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, nargs="+", default=None,
                        help="CPU threads (CPU only); end_to_end runs each count given, the other "
                        "sections the first")  # fmt: skip
    parser.add_argument("--e2e-allennlp-peer-only", action="store_true",
                        help="end_to_end: leave out the peer over our elmo_lstm where the peer over "
                        "AllenNLP's ElmoLstm runs (memory)")  # fmt: skip
    parser.add_argument("--e2e-batches", type=int, nargs="+", default=None,
                        help="end_to_end: these batch sizes for each size, instead of the profile's")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--memory-budget-gb", type=float, default=None,
                        help="for the output layers' largest batch (default: 6 on CPU, "
                             "70%% of the GPU's memory)")  # fmt: skip
    parser.add_argument("--e2e-sizes", nargs="+", choices=sorted(ENCODER_SIZES), default=None,
                        help="end_to_end: only these LSTM sizes (default: the profile's)")
    parser.add_argument("--e2e-precisions", nargs="+", choices=PRECISIONS, default=["float32"],
                        help="end_to_end: ELMo-C in each of these (tf32: on a GPU; the peer runs "
                        "in float32)")  # fmt: skip
    parser.add_argument("--e2e-steps", type=int, default=None,
                        help="end_to_end: timed steps per row (default: the profile's)")
    parser.add_argument("--profile-ops", type=int, default=6,
                        help="end_to_end: profile one more step of each row and keep its N "
                             "costliest operators (0: no profiling)")  # fmt: skip
    # --smoke measures nothing: it writes only where it is told, never over the committed results.
    parser.add_argument("--out", default=None,
                        help="default: experiments/speed/results.json (--smoke: not written)")
    parser.add_argument("--markdown", default=None,
                        help="default: experiments/speed/RESULTS.md (--smoke: not written)")
    parser.add_argument("--plot", default=None,
                        help="default: experiments/speed/output_layer_scaling.png (--smoke: not written)")
    args = parser.parse_args(argv)
    for option, default in [("out", "results.json"), ("markdown", "RESULTS.md"),
                            ("plot", "output_layer_scaling.png")]:  # fmt: skip
        if getattr(args, option) is None and args.profile != "smoke":
            setattr(args, option, str(PROJECT / "experiments" / "speed" / default))
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here")
    return args


def memory_budget(args: argparse.Namespace, device: torch.device) -> int:
    """The output layers' largest batch's memory, in bytes."""
    if args.memory_budget_gb is not None:
        return int(args.memory_budget_gb * 2**30)
    if device.type == "cuda":
        return int(0.7 * torch.cuda.get_device_properties(device).total_memory)
    return 6 * 2**30


def main(argv: Optional[List[str]] = None) -> dict:
    args = parse_arguments(argv)
    device = torch.device(args.device)
    threads = args.threads[0] if args.threads else torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(threads)
    profile = profile_for(args.profile or "quick", device)
    profile.allennlp_peer_only = args.e2e_allennlp_peer_only
    profile.end_to_end = [
        (size, batch, args.e2e_steps or steps, warmup)
        for size, default_batch, steps, warmup in profile.end_to_end
        for batch in (args.e2e_batches or [default_batch])
        if args.e2e_sizes is None or size in args.e2e_sizes
    ]
    budget = memory_budget(args, device)
    torch.manual_seed(0)
    # The modules' objects live to the end: out of the collector's way, each memory mark's
    # `gc.collect()` then scans only what the benchmark made (seconds less per mark).
    gc.collect()
    gc.freeze()
    meter = PeakMemory(device)
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f} s] {message}", flush=True)

    command = "python -m experiments.speed.run " + " ".join(argv if argv is not None else sys.argv[1:])
    results = {"command": command.strip(), "out": relative(args.out) if args.out else None,
               "profile": asdict(profile),
               "machine": machine_description(device, threads),
               "memory_budget_gib": budget / 2**30, "sections": {}}  # fmt: skip
    sections = results["sections"]
    log(f"{results['machine']['device']}, profile {profile.name}, sections {args.sections}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        results["seconds"] = time.perf_counter() - started
        if args.out:
            Path(args.out).write_text(json.dumps(results, indent=1, default=str) + "\n")

    def finished(name: str) -> None:
        # Each section's numbers are printed and saved as soon as it ends: a run stopped later
        # (a time limit, a crash in another section) keeps them. "complete" says whether all ran.
        print("\n".join(summary({"sections": {name: sections[name]}})[1:]), flush=True)
        save()

    results["complete"] = False
    if "end_to_end" in args.sections:
        sections["end_to_end"] = end_to_end(profile, device, meter, log, args.profile_ops,
                                            args.threads or (), args.e2e_precisions)  # fmt: skip
        finished("end_to_end")
    if "output_layers" in args.sections:
        sections["output_layers"] = output_layers(profile, device, meter, budget, log)
        finished("output_layers")
    if "encoders" in args.sections:
        sections["encoders"] = encoders(profile, device, meter, log)
        finished("encoders")
    if "data_pipeline" in args.sections:
        elmo_c_rows = [r for r in sections.get("end_to_end", []) if r["model"] == "ELMo-C"]
        sections["data_pipeline"] = data_pipeline(profile, device,
                                                  elmo_c_rows[0] if elmo_c_rows else None,
                                                  meter, log)  # fmt: skip
        finished("data_pipeline")
    results["complete"] = True
    save()
    if args.markdown:
        write_markdown(Path(args.markdown), markdown(results))
    if args.plot and "output_layers" in sections:
        plot(sections["output_layers"], Path(args.plot), results["machine"])
    gc.unfreeze()  # collected normally at exit (extension types complain otherwise)
    print("\n".join(summary(results)))
    written = [args.out, args.markdown] + ([args.plot] if "output_layers" in sections else [])
    log("wrote " + (", ".join(path for path in written if path) or "nothing (--smoke)"))
    return results


if __name__ == "__main__":
    main()
