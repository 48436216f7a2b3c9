"""
How long the documented commands take to start: each command's `--help` (which imports what the
command imports, parses, prints and exits) in a fresh process, `--repeats` times in turn, the
median wall time; and where one command's imports go (`python -X importtime`), summed by
top-level package.

    OMP_NUM_THREADS=1 python -m experiments.speed.startup_time [--tree DIR] [--repeats 5]

`--tree` runs the commands on another checkout of this repository (its package first on
`PYTHONPATH`, its C extensions built in place), so that two versions are measured in one
sitting on one machine. Output: a Markdown table of seconds per command, then the import table.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional, Sequence

PROJECT = Path(__file__).resolve().parents[2]
ALLENNLP = str(Path(sys.executable).with_name("allennlp"))
PLUGIN = [sys.executable, "-m", "allennlp_elmo_c"]
COMMANDS = {
    "allennlp train --help": [ALLENNLP, "train", "--help"],
    "allennlp predict --help": [ALLENNLP, "predict", "--help"],
    "python -m allennlp_elmo_c train --help": PLUGIN + ["train", "--help"],
    "python -m allennlp_elmo_c describe --help": PLUGIN + ["describe", "--help"],
    "python -m allennlp_elmo_c prepare-corpus --help": PLUGIN + ["prepare-corpus", "--help"],
    "python -m allennlp_elmo_c elmo-c-embed --help": PLUGIN + ["elmo-c-embed", "--help"],
    "python -c 'import allennlp_elmo_c'": [sys.executable, "-c", "import allennlp_elmo_c"],
    # The floor of every command: what `allennlp` imports before it parses anything.
    "python -c 'import allennlp.commands'": [sys.executable, "-c", "import allennlp.commands"],
}
_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def environment(tree: Path) -> Dict[str, str]:
    found = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1")
    found.pop("PYTHONWARNINGS", None)
    return found


def seconds(command: List[str], env: Dict[str, str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True, cwd=PROJECT)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
    return elapsed


def import_seconds(command: List[str], env: Dict[str, str]) -> Dict[str, float]:
    """Seconds of import time per top-level package (each module's own time, summed) of one run
    of `command` under `python -X importtime`."""
    argv = [sys.executable, "-X", "importtime"] + (command[1:] if command[0] == sys.executable
                                                   else [command[0]] + command[1:])  # fmt: skip
    result = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=PROJECT)
    per_package: Dict[str, float] = defaultdict(float)
    for line in result.stderr.splitlines():
        found = _IMPORT_LINE.match(line)
        if found:
            per_package[found.group(4).split(".")[0]] += int(found.group(1)) / 1e6
    return dict(per_package)


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--tree", type=Path, default=PROJECT)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--commands", default=",".join(COMMANDS),
                        help="comma-separated keys of COMMANDS")  # fmt: skip
    parser.add_argument("--imports-of", default="python -m allennlp_elmo_c describe --help")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    env = environment(args.tree.resolve())
    chosen = [name.strip() for name in args.commands.split(",") if name.strip()]
    times: Dict[str, List[float]] = {name: [] for name in chosen}
    for _ in range(args.repeats):  # in turn, so that a slow moment spreads over every command
        for name in chosen:
            times[name].append(seconds(COMMANDS[name], env))
    imports = import_seconds(COMMANDS[args.imports_of], env)
    print(f"tree: {args.tree}; {args.repeats} runs of each, in turn; median wall seconds\n")
    print("| command | seconds (median) | min | max |\n|---|---|---|---|")
    for name, values in times.items():
        print(f"| `{name}` | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} |")
    total = sum(imports.values())
    own = sum(value for package, value in imports.items() if package.startswith("allennlp_elmo_c"))
    print(f"\nimports of `{args.imports_of}`: {total:.2f} s in all, {own:.2f} s of them this "
          "plugin's own modules; the packages over 0.1 s:\n")
    print("| package | seconds |\n|---|---|")
    for package, value in sorted(imports.items(), key=lambda item: -item[1]):
        if value >= 0.1:
            print(f"| {package} | {value:.2f} |")
    result = {"tree": str(args.tree), "seconds": times, "imports": imports}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
