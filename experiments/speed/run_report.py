"""
`run.py`'s reports: the Markdown section (between its markers, so that a rerun replaces only it),
the output-layer plot and the summary printed at the end of each section.
"""

from pathlib import Path
from typing import List, Optional

from experiments.common.markers import markers, replace_section
from experiments.speed.run_models import HEAD_LABELS, HEAD_TIMESTEPS, HEADS, TIMESTEPS

BEGIN, END = markers("speed-run")


def fmt_int(value) -> str:
    return "-" if value is None else f"{value:,.0f}"


def speedup(row: dict, which: str = "elmo_c_") -> str:
    """The median ratio of an ELMo-C row's step to this row's (`which`: "elmo_c_" for float32
    ELMo-C, "bfloat16_" for bfloat16), and the range of the repeats' ratios where there were
    several; "-" where that row did not run."""
    if f"{which}speedup" not in row:
        return "-"
    low, high = row.get(f"{which}speedup_range") or (None, None)
    spread = f" ({low:.2f}-{high:.2f}, {row['repeats']} repeats)" if low is not None and low != high else ""
    return f"{row[f'{which}speedup']:.2f}x{spread}"


def fmt_words(value: int) -> str:
    return f"{value // 1000:,}K" if value >= 1000 else str(value)


def markdown(results: dict) -> str:
    machine = results["machine"]
    lines = [BEGIN, "", f"## All claims in one run: `experiments/speed/run.py --{results['profile']['name']}`",
             "", f"{machine['date']}, {machine['device']}; CPU {machine['cpu']}, "
             f"{machine['cpu_cores']} cores, torch {machine['torch']} "
             f"({machine['torch_threads']} threads)"
             + (f", GPU {machine['gpu']} ({machine['gpu_memory_gib']} GiB, CUDA {machine['cuda']})"
                if "gpu" in machine else "")
             + f". Command: `{results['command']}`."
             + (f" Raw numbers: `{results['out']}`." if results.get("out") else ""), ""]  # fmt: skip
    sections = results["sections"]
    if "end_to_end" in sections:
        lines += ["### 1. End to end: ELMo-C vs allennlp-models' `language_model`", "",
                  "Whole training steps (forward, backward, optimizer step) on the same batch of "
                  f"windows of {TIMESTEPS} tokens. ELMo-C: `elmo_c` with a synthetic fastText "
                  "(random frozen matrix in cc.en.300's shape, realistic subword counts; the "
                  "table is left out of the memory column and given apart), `elmo_lstm`, "
                  "continuous head, `fused_adam` (the pretraining configs'). Peer: `language_model` (bidirectional, `num_samples` "
                  "8192, sparse softmax embeddings, `dense_sparse_adam`) over ELMo's character "
                  "CNN. Peak memory: above the memory before the row was built (weights, "
                  "gradients, optimizer state, activations; on CPU the resident set, sampled).",
                  "ELMo-C / this: the ratio of the median steps, and the range of the repeats' "
                  "ratios (each repeat times every row once, in turn); ELMo-C (bfloat16) / this, "
                  "the same for ELMo-C with `model.precision: bfloat16`, where it ran.",
                  "", "| LSTM | model | threads | batch | tok/s | ELMo-C / this | ELMo-C (bfloat16) / this | "
                  "peak memory GiB | ELMo-C memory / this | trainable params |",
                  "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for r in sections["end_to_end"]:
            lstm = r["lstm"]
            note = (f" (+ {r['frozen_fasttext_gib']:.2f} GiB frozen fastText table)"
                    if r.get("fasttext_input_dim") else f" ({fmt_words(r['softmax_words'])} words)")
            lines.append(f"| {r['size']} ({lstm['cell']}/{lstm['projection']}) | {r['model']}"
                         f"{note} | {r.get('threads') or '-'} | {r['batch']} | {r['tokens_per_s']:,.0f} | "
                         f"{speedup(r)} | {speedup(r, 'bfloat16_')} | {r['peak_memory_gib']:.2f} | "
                         f"{r['elmo_c_memory_ratio']:.2f}x | {r['trainable_parameters']:,} |")  # fmt: skip
        lines.append("")
        profiled = [r for r in sections["end_to_end"] if r.get("top_operators")]
        if profiled:
            lines += ["Where a step's time goes (`torch.profiler`, one step, operators' self "
                      "time as a share of the step's; " +
                      ("GPU time)" if "gpu" in machine else "CPU time)") + ":", ""]  # fmt: skip
            for r in profiled:
                ops = ", ".join(f"`{op['operator']}` {100 * op['share']:.0f}%"
                                for op in r["top_operators"])  # fmt: skip
                lines.append(f"- {r['size']}, {r['model']}: {ops}")
            lines.append("")
    if "output_layers" in sections:
        rows = sections["output_layers"]
        lines += ["### 2. Output layers (paper Table 4)", "",
                  f"Each head alone over random encoder outputs (d {rows[0]['dim']}, windows "
                  f"of {HEAD_TIMESTEPS}, Zipfian target ids): forward, backward and an Adam "
                  "step. Time per 1M tokens at batch 1 and at the largest batch (doubling) whose "
                  f"peak memory stays within {results['memory_budget_gib']:.1f} GiB (predicted "
                  "linear in the batch before each probe, then measured); ratio to the continuous "
                  "head at the same V, at batch 1 and at its own largest batch. Every head is "
                  "trained densely (Adam over all its parameters each step).", "",
                  "| V | head | trainable params | s / 1M tok, batch 1 | vs continuous | "
                  "largest batch | s / 1M tok there | vs continuous | peak GiB there |",
                  "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for r in rows:
            if not r.get("fits"):
                lines.append(f"| {fmt_words(r['vocab_size'])} | {r['head']} | "
                             f"{fmt_int(r.get('trainable_parameters'))} | does not fit | | | | | |")  # fmt: skip
                continue
            b1, big = r["batch1"], r["largest"]
            ratio = lambda x: "-" if x is None else f"{x:.1f}x"  # noqa: E731
            cap = " (cap)" if r.get("largest_is_cap") else ""
            lines.append(f"| {fmt_words(r['vocab_size'])} | {r['head']} | "
                         f"{r['trainable_parameters']:,} | {b1['seconds_per_million_tokens']:.2f} | "
                         f"{ratio(b1.get('vs_continuous'))} | {big['batch']}{cap} | "
                         f"{big['seconds_per_million_tokens']:.2f} | "
                         f"{ratio(big.get('vs_continuous'))} | {big['peak_memory_gib']:.2f} |")  # fmt: skip
        growth = continuous_growth(rows)
        if growth:
            lines += ["", f"Continuous head, time at {growth['to']} / {growth['from']}: "
                      f"{growth['batch1']:.2f}x at batch 1, {growth['largest']:.2f}x at the "
                      "largest batch."]  # fmt: skip
        lines += ["", "![time per 1M tokens vs vocabulary size](output_layer_scaling.png)", ""]
    if "encoders" in sections:
        rows = sections["encoders"]
        lines += ["### 3. Encoders (paper Table 5)", "",
                  f"Encoder + one head per direction at V = {fmt_words(rows[0]['vocab_size'])}, "
                  f"random inputs (no input layer), batch {rows[0]['batch']} x {TIMESTEPS}, Adam. "
                  "The LSTMs of 1 and 2 layers are `elmo_lstm`'s plain variant (LayerNorm "
                  "outside the recurrence, no clipping); the ELMo encoder is `elmo_lstm` as "
                  "configured for training; the Transformer is two `torch.nn.TransformerEncoder` "
                  "stacks, one per direction, each under a causal mask.", "",
                  "| encoder | encoder params | head | tok/s | continuous / adaptive | peak GiB |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        speeds = {(r["encoder"], r["head"]): r["tokens_per_s"] for r in rows}
        for r in rows:
            pair = speeds[(r["encoder"], HEAD_LABELS["continuous"])] / \
                speeds[(r["encoder"], HEAD_LABELS["adaptive_softmax"])]
            pair = f"{pair:.2f}x" if r["head"] == HEAD_LABELS["continuous"] else ""
            lines.append(f"| {r['encoder']} | {r['encoder_parameters']:,} | {r['head']} | "
                         f"{r['tokens_per_s']:,.0f} | {pair} | {r['peak_memory_gib']:.2f} |")  # fmt: skip
        lines.append("")
    if "data_pipeline" in sections:
        p = sections["data_pipeline"]
        speeds = p["tokens_per_s"]
        lines += ["### 4. Data pipeline", "",
                  f"`lm_corpus` reading, `fasttext_subwords` indexing + batching (64 windows) and "
                  f"the `fasttext` lookup of {p['tokens']:,} tokens of the fixture corpus with "
                  f"`{p['fasttext_model']}` ({p['fasttext_dim']}-d), single process.", "",
                  "| stage | tok/s |", "|---|---|"]  # fmt: skip
        for stage, speed in speeds.items():
            lines.append(f"| {stage} | {speed:,.0f} |")
        lines += [f"| all | {p['pipeline_tokens_per_s']:,.0f} |", "",
                  f"Against an ELMo-C {p['training_step']['size']} training step "
                  f"({p['training_step']['tokens_per_s']:,.0f} tok/s) the pipeline is "
                  f"{100 * p['share_of_step']:.1f}% of the time per token (done in the same "
                  "process, without data-loader workers).", ""]  # fmt: skip
    lines.append(END)
    return "\n".join(lines) + "\n"


def continuous_growth(rows: List[dict]) -> Optional[dict]:
    continuous = sorted((r for r in rows if r["type"] == "continuous" and r.get("fits")),
                        key=lambda r: r["vocab_size"])  # fmt: skip
    if len(continuous) < 2:
        return None
    low, high = continuous[0], continuous[-1]
    return {"from": fmt_words(low["vocab_size"]), "to": fmt_words(high["vocab_size"]),
            **{key: high[key]["seconds_per_million_tokens"] / low[key]["seconds_per_million_tokens"]
               for key in ("batch1", "largest")}}  # fmt: skip


def write_markdown(path: Path, section: str) -> None:
    if not path.is_file():
        path.write_text("# Benchmark results\n")
    replace_section(path, BEGIN, END, section)


def plot(rows: List[dict], path: Path, machine: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=False)
    for axis, key, title in ((axes[0], "batch1", "batch 1 (20 tokens)"),
                             (axes[1], "largest", "largest batch within the memory budget (bN: batch)")):  # fmt: skip
        for kind in HEADS:
            points = sorted((r["vocab_size"], r[key]["seconds_per_million_tokens"])
                            for r in rows if r["type"] == kind and r.get("fits"))  # fmt: skip
            if points:
                line, = axis.plot(*zip(*points), marker="o", label=HEAD_LABELS[kind])
            if points and key == "largest":
                for r in rows:
                    if r["type"] == kind and r.get("fits"):
                        axis.annotate(f"b{r[key]['batch']}", (r["vocab_size"],
                                      r[key]["seconds_per_million_tokens"]), fontsize=7,
                                      color=line.get_color(), xytext=(4, -8),
                                      textcoords="offset points")  # fmt: skip
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("vocabulary size")
        axis.set_ylabel("seconds per 1M tokens")
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle(f"Output layer training cost, {machine['device']}, torch {machine['torch']}",
                    fontsize=10)  # fmt: skip
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def summary(results: dict) -> List[str]:
    lines = ["", "Summary:"]
    sections = results["sections"]
    for r in sections.get("end_to_end", []):
        lines.append(f"  end_to_end {r['size']:6s} {r['model']:46s} {r['tokens_per_s']:10,.0f} tok/s  "
                     f"ELMo-C/this {r['elmo_c_speedup']:5.2f}x  peak {r['peak_memory_gib']:6.2f} GiB")  # fmt: skip
    for r in sections.get("output_layers", []):
        if r.get("fits"):
            lines.append(f"  output_layers V {fmt_words(r['vocab_size']):>6s} {r['head']:20s} "
                         f"{r['batch1']['seconds_per_million_tokens']:9.2f} s/1M tok (batch 1) "
                         f"{r['largest']['seconds_per_million_tokens']:9.2f} (batch {r['largest']['batch']})")  # fmt: skip
        else:
            lines.append(f"  output_layers V {fmt_words(r['vocab_size']):>6s} {r['head']:20s} does not fit")
    for r in sections.get("encoders", []):
        lines.append(f"  encoders {r['encoder'][:44]:44s} {r['head']:20s} {r['tokens_per_s']:10,.0f} tok/s")
    if "data_pipeline" in sections:
        p = sections["data_pipeline"]
        lines.append(f"  data_pipeline {p['pipeline_tokens_per_s']:,.0f} tok/s, "
                     f"{100 * p['share_of_step']:.1f}% of an ELMo-C step")  # fmt: skip
    return lines
