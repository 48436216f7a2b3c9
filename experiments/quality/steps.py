"""
The resumable steps of `quality.py` (and of `quality_per_minute.py` and `adaptation.py`, which
build on it): `Steps` runs each named step once and keeps its JSON result; `allennlp_train` runs
one training in a subprocess, reuses a finished one and resumes an interrupted one.
"""

import datetime
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, Optional, Sequence

PROJECT = Path(__file__).resolve().parents[2]
TRAINING_CONFIG = PROJECT / "training_config"
DOWNSTREAM_CONFIG = PROJECT / "downstream_configs"
WINDOW = 20  # tokens per training window (the demo config's max_sequence_length)
BATCH = 64  # windows per update (the demo config's batch size)

logger = logging.getLogger("quality")


class Steps:
    """Runs each named step once; its JSON result (with its duration) is kept under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root / "steps"
        self.root.mkdir(parents=True, exist_ok=True)

    def done(self, name: str) -> Optional[dict]:
        path = self.root / f"{name}.json"
        return json.loads(path.read_text()) if path.is_file() else None

    def running_elsewhere(self, name: str) -> bool:
        """Whether another live process of this machine is running step `name` now."""
        marker = self.root / f"{name}.running"
        try:
            pid = int(marker.read_text())
            os.kill(pid, 0)
        except (FileNotFoundError, ValueError, ProcessLookupError):
            return False
        except PermissionError:
            return True  # alive, another user's
        return pid != os.getpid()

    def run(self, name: str, work: Callable[[], dict]) -> dict:
        result = self.done(name)
        if result is not None:
            return result
        logger.info("step %s ...", name)
        marker = self.root / f"{name}.running"  # what `running_elsewhere` reads
        marker.write_text(str(os.getpid()))
        start = time.perf_counter()
        try:
            result = work()
        finally:
            marker.unlink(missing_ok=True)
        result["step_seconds"] = round(time.perf_counter() - start, 1)
        result["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
        temporary = self.root / f"{name}.json.partial"
        temporary.write_text(json.dumps(result, indent=1, sort_keys=True))
        os.replace(temporary, self.root / f"{name}.json")
        logger.info("step %s done in %.0f s", name, result["step_seconds"])
        return result


def steps_command(module: str, argv: Optional[Sequence[str]]) -> str:
    """The command that runs a step script's steps as it was given (`argv`, else the process's),
    for its report: without `--report-only`, a rendering that only reads their results. `module`
    is the script's dotted name, e.g. `experiments.quality.per_minute`."""
    given = list(argv if argv is not None else sys.argv[1:])
    return f"python -m {module} " + " ".join(a for a in given if a != "--report-only")


def resumable(serialization_dir: Path) -> bool:
    """
    Whether an interrupted `allennlp train` run can go on with `--recover`: it wrote a checkpoint
    (a `training_state_*` file). A run stopped before its first checkpoint is removed, to start
    again. A resumed run goes on after that checkpoint with the model and optimizer state saved
    there; AllenNLP replays the data order, and the `rng_state` callback (in every downstream
    config) restores the dropout generator, so it ends as the uninterrupted run would have. AllenNLP
    refuses to resume (ConfigurationError) when the configuration differs from the run's own.
    """
    if serialization_dir.is_dir() and any(serialization_dir.glob("training_state_*")):
        return True
    if serialization_dir.exists():
        shutil.rmtree(serialization_dir)
    serialization_dir.parent.mkdir(parents=True, exist_ok=True)
    return False


def allennlp_train(
    config: Path,
    serialization_dir: Path,
    overrides: dict,
    environment: Dict[str, str],
    threads: int,
    include_packages: Sequence[str] = (),
) -> dict:
    """
    `allennlp train` in a subprocess (its log beside the run directory), with `include_packages`
    (e.g. the module of an experiments' callback); returns metrics.json.
    A run that finished (its model.tar.gz, written atomically, and metrics.json exist) is reused;
    an interrupted one resumes from its last checkpoint (see `resumable`).
    """
    metrics = serialization_dir / "metrics.json"
    if (serialization_dir / "model.tar.gz").is_file() and metrics.is_file():
        return json.loads(metrics.read_text())
    recover = resumable(serialization_dir)
    command = [sys.executable, "-m", "allennlp_elmo_c", "train", str(config), "-s",
               str(serialization_dir), "-o", json.dumps(overrides), "--file-friendly-logging"]  # fmt: skip
    command += ["--recover"] if recover else []
    command += [arg for package in include_packages for arg in ("--include-package", package)]
    env = dict(os.environ, **environment, OMP_NUM_THREADS=str(threads))
    log = serialization_dir.parent / f"{serialization_dir.name}.log"
    with open(log, "a" if recover else "w") as output:
        result = subprocess.run(command, cwd=PROJECT, env=env, stdout=output, stderr=output)
    if result.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-30:])
        raise RuntimeError(f"allennlp train failed ({config.name}), log {log}:\n{tail}")
    return json.loads((serialization_dir / "metrics.json").read_text())
