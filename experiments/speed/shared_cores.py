"""
Encoder steps beside a busy process: 1 or 2 threads, under each of OpenMP's wait policies.

    python -m experiments.speed.shared_cores --json experiments/speed/shared_cores.json \
        --report experiments/speed/RESULTS.md
    python -m experiments.speed.shared_cores --render --json experiments/speed/shared_cores.json \
        --report experiments/speed/RESULTS.md                        # the section from the JSON

`elmo_lstm` (the `fused` backend) forward + backward steps (`encoder_backends.training_step`
without the update) at the small size (input and projection 128, cell 256, 2 layers, batch
64 x 20) and the paper's (input 300, projection 512, cell 4096, batch 16 x 20), with 1 and 2
torch threads or `free` (the CPUs no other process keeps busy, as the `cpu_threads` training
callback counts them, measured in each process beside the load), and `OMP_WAIT_POLICY` unset (`default`: OpenMP's threads spin a while at each
barrier, then sleep), `ACTIVE` or `PASSIVE`. OpenMP reads the policy once, when torch loads it,
so each configuration runs in a fresh process. Every process may use the two CPUs of `--cores`
(default: the first two this one may use); under the `busy` load a Python busy loop, started by
this script and pinned to the second of them, holds that CPU throughout, and is killed at the
end; `--loads busy quiet` also runs every configuration without it. A process reports the wall
seconds of its `--steps` steps after `--warmup` and the spin count its OpenMP runtime read
(`OMP_DISPLAY_ENV=VERBOSE`; checked against the policy asked for). The configurations run one
after another, the whole set `--repeats` times in turn. The table gives each configuration's
median step and, in brackets, its time over the same size and load with 1 thread and the first
of `--policies`, so that the ratios come from one run. `--json` keeps every step's seconds;
`--report` writes the table into a markdown file in place of its section.
"""

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

from experiments.common.markers import markers, replace_section

PROJECT = Path(__file__).resolve().parents[2]
BEGIN, END = markers("shared-cores")
BATCHES = {"small": 64, "paper": 16}  # windows per batch at each size (`encoder_backends.SIZES`)
POLICIES = ("default", "ACTIVE", "PASSIVE")  # `default`: OMP_WAIT_POLICY unset
LOADS = ("busy", "quiet")
FREE = "free"  # a thread count: the free CPUs (`common/threads.free_cpus`), measured per process
RESULT = "SHARED_CORES_RESULT "
_SPIN_COUNT = re.compile(r"GOMP_SPINCOUNT = '(\d+)'")

BUSY_LOOP = """
import os, sys
os.sched_setaffinity(0, {int(sys.argv[1])})
parent = os.getppid()
print("busy", flush=True)
while os.getppid() == parent:  # ends with the script, should it be killed first
    for _ in range(100_000):
        pass
"""


@contextlib.contextmanager
def busy_cpu(cpu: int) -> Iterator[None]:
    """A Python busy loop pinned to `cpu` while the block runs."""
    process = subprocess.Popen([sys.executable, "-c", BUSY_LOOP, str(cpu)],
                               stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        if process.stdout.readline().strip() != "busy":
            raise RuntimeError(f"the busy loop on CPU {cpu} did not start")
        yield
    finally:
        process.kill()
        process.wait()


def worker_environment(policy: str, threads: int) -> Dict[str, str]:
    """This environment with the wait policy of `policy`, `threads` OpenMP threads, OpenMP's
    settings printed as it loads, and this checkout's packages first on the path."""
    environment = {name: value for name, value in os.environ.items()
                   if name not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}  # fmt: skip
    if policy != "default":
        environment["OMP_WAIT_POLICY"] = policy
    path = os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")]))
    environment.update(OMP_DISPLAY_ENV="VERBOSE", PYTHONPATH=path)
    environment.pop("OMP_NUM_THREADS", None)
    if threads != FREE:  # FREE: the worker sets torch's threads to the free CPUs it measures
        environment["OMP_NUM_THREADS"] = str(threads)
    return environment


def check_spin_count(policy: str, spin_count: Optional[int]) -> None:
    """The spin count OpenMP read is the policy's: 0 for PASSIVE, more than 0 otherwise."""
    if spin_count is None:
        raise RuntimeError("OpenMP printed no GOMP_SPINCOUNT: not GNU OpenMP, not measurable here")
    if (spin_count == 0) != (policy == "PASSIVE"):
        raise RuntimeError(f"policy {policy} ran with OpenMP's spin count {spin_count}: the "
                           "policy did not reach OpenMP before torch loaded it")  # fmt: skip


def run_configuration(size: str, threads: int, policy: str, args) -> Dict[str, object]:
    """One configuration in a fresh process: its steps' seconds and OpenMP's spin count."""
    spec = {"size": size, "threads": threads, "batch_size": args.batch_size or BATCHES[size],
            "timesteps": args.timesteps, "steps": args.steps, "warmup": args.warmup,
            "cpus": args.cores}  # fmt: skip
    command = [sys.executable, "-m", "experiments.speed.shared_cores", "--worker", json.dumps(spec)]
    result = subprocess.run(command, env=worker_environment(policy, threads), cwd=PROJECT,
                            capture_output=True, text=True)  # fmt: skip
    lines = [line for line in result.stdout.splitlines() if line.startswith(RESULT)]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"{size}, {threads} thread(s), {policy}:\n{result.stderr[-3000:]}")
    measured = json.loads(lines[-1][len(RESULT):])
    counts = {int(count) for count in _SPIN_COUNT.findall(result.stderr)}
    spin_count = max(counts) if counts else None  # every OpenMP copy loaded reads the same
    check_spin_count(policy, spin_count)
    return {**measured, "spin_count": spin_count}


def worker(spec: Dict[str, object]) -> None:
    """Runs in the measured process: pinned to its CPUs before torch loads, it times the steps
    and prints them on one line after RESULT."""
    import time

    os.sched_setaffinity(0, spec["cpus"])
    import torch

    from allennlp_elmo_c.common.threads import free_cpus, set_torch_threads
    from experiments.speed.encoder_backends import training_step

    if spec["threads"] == FREE:
        threads = free_cpus()  # the `cpu_threads` callback's rule, beside the load as it runs
        torch.set_num_threads(threads)
    else:
        threads = set_torch_threads(spec["threads"])
    step, tokens = training_step("fused", spec["size"], spec["batch_size"], spec["timesteps"],
                                 torch.device("cpu"), update=False)  # fmt: skip
    for _ in range(spec["warmup"]):
        step()
    seconds = []
    for _ in range(spec["steps"]):
        start = time.perf_counter()
        step()
        seconds.append(time.perf_counter() - start)
    print(RESULT + json.dumps({"seconds": seconds, "tokens": tokens, "torch_threads": threads,
                               "batch_size": spec["batch_size"], "torch": torch.__version__}))


def measure(args) -> List[Dict[str, object]]:
    """Every configuration under every load, the set `args.repeats` times in turn."""
    rows: Dict[tuple, Dict[str, object]] = {}
    for _ in range(args.repeats):
        for load in args.loads:
            with busy_cpu(args.cores[-1]) if load == "busy" else contextlib.nullcontext():
                for size in args.sizes:
                    for threads in args.threads:
                        for policy in args.policies:
                            found = run_configuration(size, threads, policy, args)
                            key = (size, load, threads, policy)
                            row = rows.setdefault(key, {"size": size, "load": load,
                                                        "threads": threads, "policy": policy,
                                                        "seconds": [], "repeat_medians": []})  # fmt: skip
                            row["seconds"] += found["seconds"]
                            row["repeat_medians"].append(statistics.median(found["seconds"]))
                            row.update({name: found[name] for name in
                                        ("tokens", "torch_threads", "batch_size", "spin_count")})  # fmt: skip
                            row["torch"] = found["torch"]
    for row in rows.values():
        row["median"] = statistics.median(row["seconds"])
    return list(rows.values())


def render(result: Dict[str, object]) -> str:
    rows = result["rows"]
    policies = list(dict.fromkeys(row["policy"] for row in rows))
    by_key = {(row["size"], row["load"], row["threads"], row["policy"]): row for row in rows}
    busy = f"a Python busy loop pinned to CPU {result['cores'][-1]}"
    spins = ", ".join(f"{policy} {count:,}" for policy, count in sorted(
        {(row["policy"], row["spin_count"]) for row in rows}))  # fmt: skip
    lines = [
        BEGIN,
        f"## Threads beside a busy process: `experiments/speed/shared_cores.py` ({result['date']})",
        "",
        f"`{result['command']}` on {result['cpu']} (torch {rows[0]['torch']}): `elmo_lstm` "
        "(`fused`) forward + backward, each row in a fresh process that may use CPUs "
        f"{', '.join(map(str, result['cores']))}; load `busy`: {busy} throughout, `quiet`: "
        f"nothing of this script's beside it. Median wall seconds of {result['steps']} steps "
        f"after {result['warmup']} ({result['repeats']} repeat(s) of the whole set, in turn); in "
        f"brackets, the time over 1 thread with policy {policies[0]} at the same size and load. "
        f"OMP_WAIT_POLICY `default` is unset; the spin counts OpenMP read: {spins}.",
        "",
        "| size, batch | load | threads | " + " | ".join(policies) + " |",
        "|---|---|---:|" + "---:|" * len(policies),
    ]
    for size, load, threads in dict.fromkeys((r["size"], r["load"], r["threads"]) for r in rows):
        base = by_key.get((size, load, 1, policies[0]))
        cells = []
        for policy in policies:
            row = by_key.get((size, load, threads, policy))
            if row is None:
                cells.append("-")
                continue
            ratio = f" ({row['median'] / base['median']:.2f}x)" if base else ""
            cells.append(f"{row['median']:.2f} s{ratio}")
        first = by_key[(size, load, threads, next(p for p in policies
                                                  if (size, load, threads, p) in by_key))]  # fmt: skip
        shown = f"free ({first['torch_threads']})" if threads == FREE else threads
        lines.append(f"| {size}, {first['batch_size']} x {result['timesteps']} | {load} | {shown} | "
                     + " | ".join(cells) + " |")  # fmt: skip
    lines += ["", END, ""]
    return "\n".join(lines)


def _thread_count(text: str):
    return FREE if text == FREE else int(text)


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--sizes", nargs="+", choices=sorted(BATCHES), default=["small", "paper"])
    parser.add_argument("--threads", nargs="+", type=_thread_count, default=[1, 2],
                        help=f"counts, or {FREE!r}: the free CPUs as training's cpu_threads counts them")
    parser.add_argument("--policies", nargs="+", choices=POLICIES, default=list(POLICIES))
    parser.add_argument("--loads", nargs="+", choices=LOADS, default=["busy"])
    parser.add_argument("--cores", type=lambda text: [int(cpu) for cpu in text.split(",")],
                        default=None, help="the CPUs each measured process may use, e.g. 0,1; "
                        "the busy loop takes the last")  # fmt: skip
    parser.add_argument("--steps", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=None, help="default: the size's batch")
    parser.add_argument("--timesteps", type=int, default=20)
    parser.add_argument("--json", type=Path, default=PROJECT / "experiments/speed/shared_cores.json")
    parser.add_argument("--report", type=Path, default=None, help="a markdown file to update")
    parser.add_argument("--render", action="store_true", help="write the report from --json alone")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cores is None:
        args.cores = sorted(os.sched_getaffinity(0))[:2]
    if len(args.cores) < 2 and not args.worker:
        raise SystemExit("shared_cores needs two CPUs (--cores): one for the busy loop to share")
    return args


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, object]:
    args = parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return {}
    if args.render:
        result = json.loads(args.json.read_text(encoding="utf-8"))
    else:
        import datetime

        from allennlp_elmo_c.common.machine import cpu_name

        rows = measure(args)
        result = {
            "command": "python -m experiments.speed.shared_cores "
            + " ".join(argv if argv is not None else sys.argv[1:]),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "cpu": cpu_name(), "cores": args.cores, "steps": args.steps, "warmup": args.warmup,
            "repeats": args.repeats, "timesteps": args.timesteps, "rows": rows,
        }  # fmt: skip
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    text = render(result)
    if args.report:

        replace_section(args.report, BEGIN, END, text)
    print(text)
    return result


if __name__ == "__main__":
    main()
