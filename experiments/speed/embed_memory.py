"""
Peak memory of embedding many short sentences: does it grow with the number of sentences?

    python -m experiments.speed.embed_memory --model runs/per_minute/runs/pretrain-elmo_c_cosine/model.tar.gz \
        --text data/news/train.txt --report experiments/speed/RESULTS.md

For `--small` and `--large` one-word lines (the first words of `--text`, one per line), each in a
fresh process: `elmo-c-embed` (to HDF5, `--all` layers) and the Python embedder
(`ElmoCEmbedder.embed_sentences`, each result dropped once made). The figure is the process's
peak resident set (`ru_maxrss`), which includes the pages of the memory-mapped fastText matrix
that the words touched; the report gives large / small for each.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, Optional, Sequence

from experiments.common.markers import markers, replace_section

BEGIN, END = markers("embed-memory")
PEAK = "import resource; print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)"
COMMAND = """
import sys
from allennlp.commands import main
sys.argv = ["allennlp", "elmo-c-embed", sys.argv[1], sys.argv[2], sys.argv[3]]
try:
    main()
except SystemExit:
    pass
""" + PEAK
PYTHON = """
import sys
import allennlp_elmo_c
from allennlp_elmo_c import ElmoCEmbedder
embedder = ElmoCEmbedder(sys.argv[1])
lines = (line.split() for line in open(sys.argv[2], encoding="utf-8"))
for layers in embedder.embed_sentences(lines, batch_size=64):
    pass
""" + PEAK


def one_word_lines(text: Path, count: int, path: Path) -> Path:
    written = 0
    with open(text, encoding="utf-8") as source, open(path, "w", encoding="utf-8") as target:
        for line in source:
            for word in line.split():
                target.write(word + "\n")
                written += 1
                if written == count:
                    return path
    raise SystemExit(f"{text} has fewer than {count} words")


def peak(script: str, *arguments: str, threads: int) -> int:
    environment = {"OMP_NUM_THREADS": str(threads)}
    import os

    result = subprocess.run([sys.executable, "-c", script, *arguments], capture_output=True, text=True,
                            env={**os.environ, **environment})  # fmt: skip
    lines = [line for line in result.stdout.splitlines() if line.startswith("PEAK ")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(result.stderr[-3000:])
    return int(lines[-1].split()[1])


def measure(args) -> Dict[str, Dict[int, int]]:
    peaks: Dict[str, Dict[int, int]] = {"elmo-c-embed": {}, "ElmoCEmbedder": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for count in (args.small, args.large):
            lines = one_word_lines(args.text, count, Path(scratch) / f"{count}.txt")
            output = str(Path(scratch) / f"{count}.hdf5")
            peaks["elmo-c-embed"][count] = peak(COMMAND, str(args.model), str(lines), output, threads=args.threads)
            peaks["ElmoCEmbedder"][count] = peak(PYTHON, str(args.model), str(lines), threads=args.threads)
    return peaks


def render(peaks: Dict[str, Dict[int, int]], args, command: str) -> str:
    lines = [
        BEGIN,
        "## Memory of embedding many sentences",
        "",
        f"`{command}`: peak resident set of a fresh process embedding one-word lines "
        f"({args.threads} thread(s)).",
        "",
        f"| way in | {args.small:,} lines | {args.large:,} lines | ratio |",
        "|---|---:|---:|---:|",
    ]
    for name, values in peaks.items():
        small, large = values[args.small], values[args.large]
        lines.append(f"| {name} | {small / 2**20:,.0f} MiB | {large / 2**20:,.0f} MiB | {large / small:.2f}x |")
    lines += ["", END, ""]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--text", type=Path, required=True)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--report", type=Path, default=None)
    args = parser.parse_args(argv)
    peaks = measure(args)
    command = "python -m experiments.speed.embed_memory " + " ".join(argv if argv is not None else sys.argv[1:])
    text = render(peaks, args, command)
    if args.report:
        replace_section(args.report, BEGIN, END, text)
    print(text)
    print(json.dumps(peaks))


if __name__ == "__main__":
    main()
