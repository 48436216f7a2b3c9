"""
Several machines, as docs/pretraining.md runs them: the paper config
(`training_config/elmo_c.jsonnet`, at a tiny size) on two "nodes", each an
`allennlp train ... --node-rank <r>` with `distributed: {cuda_devices: [-1], num_nodes: 2,
primary_address, primary_port}`, here two processes on one host joined by gloo over 127.0.0.1
on a port free at run time. Each node has its own `-s` directory, as on two machines.

The first test trains to the end: both nodes finish, see the world size (the schedule's total
batch), keep their two newest checkpoints and write an archive of the same weights. The second
kills node 1 (its whole process group, like a machine that dies) in the middle of an epoch:
node 0 stops with gloo's connection error instead of hanging, and rerunning both nodes with
`--recover` resumes both from their newest checkpoint and finishes.

Every node is a process of its own with a generous time limit, so a hang fails the test instead of
hanging it.
"""

import json
import os
import re
import signal
import socket
import tarfile
import time
from pathlib import Path
from typing import Dict, List

import torch

from allennlp.common import Params
from allennlp.training.callbacks.callback import TrainerCallback

from tests import PROJECT_ROOT
from tests.reliability import forked
from tests.helpers import LM_DATA, SENTENCES, TINY_FASTTEXT, TINY_SIZES

PAPER_CONFIG = PROJECT_ROOT / "training_config" / "elmo_c.jsonnet"
NODES = 2
# The paper config's per-worker batch for the schedule (`batch_size_per_worker`), whatever the
# data loader's batch at this size.
SCHEDULE_BATCH = 768
TIME_LIMIT = 300  # seconds, per run of both nodes: hang protection only
KILL_NODE_ENV = "ELMO_C_TEST_KILL_NODE_AT_BATCH"

# The paper config at the fixture size: 16-d fastText, a tiny LSTM, no loader workers.
TINY = {name: value for name, value in TINY_SIZES.items() if not name.startswith("vocabulary")}


# Registered on import: the nodes get it with `--include-package <this module>`.
@TrainerCallback.register("kill_node_at_batch")
class KillNodeAtBatch(TrainerCallback):
    """Kills its whole process group (the node's `allennlp train` and its worker: a machine
    that dies) with SIGKILL after training batch `$ELMO_C_TEST_KILL_NODE_AT_BATCH` of the first
    epoch; does nothing without the variable. The test starts every node in its own session."""

    def on_batch(self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
                 is_training, is_primary=True, batch_grad_norm=None, **kwargs) -> None:  # fmt: skip
        target = os.environ.get(KILL_NODE_ENV)
        if target and is_training and epoch == 0 and batch_number == int(target):
            os.killpg(os.getpgid(0), signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def environment(train_data: Path) -> Dict[str, str]:
    variables = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    variables.pop(KILL_NODE_ENV, None)
    variables["ELMO_C_FASTTEXT"] = str(TINY_FASTTEXT)
    variables["ELMO_C_TRAIN_DATA"] = str(train_data)
    variables["ELMO_C_VALIDATION_DATA"] = str(LM_DATA / "dev.txt")
    return variables


def start_nodes(run: Path, overrides: dict, variables, recover=False, kill_node_1_at=None):
    """Both nodes' `allennlp train`, each a process in its own session (forked:
    `tests.reliability.forked`), output in `run/node<r>.out`."""
    nodes = []
    for rank in range(NODES):
        command = ["train", str(PAPER_CONFIG), "-s", str(run / f"node{rank}")]
        command += ["-o", json.dumps(overrides), "--node-rank", str(rank)]
        command += ["--file-friendly-logging"]
        command += ["--include-package", "allennlp_elmo_c", "--include-package", __name__]
        command += ["--recover"] if recover else []
        node_variables = dict(variables)
        if rank == 1 and kill_node_1_at is not None:
            node_variables[KILL_NODE_ENV] = str(kill_node_1_at)
        output = run / f"node{rank}{'.recover' if recover else ''}.out"
        output.write_text("")
        nodes.append(forked.start(command, node_variables, PROJECT_ROOT, output, new_session=True))
    return nodes


def wait_for(nodes, run: Path) -> List[int]:
    """The nodes' exit codes; kills them all and fails if any is still running after
    `TIME_LIMIT` seconds."""
    deadline = time.monotonic() + TIME_LIMIT
    for node in nodes:
        node.join(timeout=max(deadline - time.monotonic(), 1))
    if any(node.exitcode is None for node in nodes):
        for node in nodes:
            if node.exitcode is None:
                os.killpg(node.pid, signal.SIGKILL)
                node.join()
        raise AssertionError(f"a node ran past {TIME_LIMIT} s (hung?):\n{outputs(run)}")
    return [node.exitcode for node in nodes]


def outputs(run: Path) -> str:
    return "\n".join(
        f"--- {path.name}:\n{path.read_text(errors='replace')[-3000:]}"
        for path in sorted(run.glob("node*.out"))
    )


def distributed(port: int) -> dict:
    return {"cuda_devices": [-1], "num_nodes": NODES, "primary_address": "127.0.0.1",
            "primary_port": port}  # fmt: skip


def weights_in(archive: Path) -> Dict[str, torch.Tensor]:
    with tarfile.open(archive) as tar:
        return torch.load(tar.extractfile("weights.th"), weights_only=True)


def test_two_nodes_train_the_paper_config_together(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    overrides = {**TINY, "trainer.num_epochs": 3, "distributed": distributed(free_port())}
    nodes = start_nodes(run, overrides, environment(SENTENCES))
    assert wait_for(nodes, run) == [0, 0], outputs(run)

    total = SCHEDULE_BATCH * NODES
    for rank in range(NODES):
        node = run / f"node{rank}"
        assert f"Rank of this node: {rank} |" in (node / "out.log").read_text()
        log = (node / "out_worker0.log").read_text()
        # One process per node: global rank = node rank.
        assert f"world size {NODES} initialized for distributed training in worker {rank}" in log
        # The schedule sees both nodes: the paper's schedule for a total batch of 2 x 768, its
        # decay from 0.4 to 2.0 of the run: 3 epochs of this node's share of the corpus.
        assert f"rnmt_plus: world size {NODES}, total batch {total}, n = {total / 128}" in log
        (per_epoch,) = {int(n) for n in re.findall(r"sentences.txt: .*: (\d+) batches an epoch", log)}
        decay_start = int(0.4 * 3 * per_epoch)
        assert f"decay from update {decay_start} to {int(2.0 * 3 * per_epoch)}" in log
        state = torch.load(node / "training_state_e3_b0.th", weights_only=False)
        schedule = state["learning_rate_scheduler"]
        assert (schedule["batch_scale"], schedule["decay_start"]) == (total / 128, decay_start)
        # The config's hourly checkpoints (distributed: by rank 0's clock) are on, and each
        # node keeps its own two newest epoch-end checkpoints.
        config = json.loads((node / "config.json").read_text())
        assert config["trainer"]["checkpointer"]["save_every_num_seconds"] == 3600
        assert sorted(p.name for p in node.glob("*_state_e*.th")) == [
            "model_state_e2_b0.th", "model_state_e3_b0.th",
            "training_state_e2_b0.th", "training_state_e3_b0.th",
        ]  # fmt: skip

    # Each node's `allennlp train` archives its directory; the weights are the same (DDP), and
    # so are the metrics (summed over both ranks).
    first, second = (weights_in(run / f"node{rank}" / "model.tar.gz") for rank in range(NODES))
    assert first.keys() == second.keys()
    for name in first:
        assert torch.equal(first[name], second[name]), name
    metrics = [json.loads((run / f"node{r}" / "metrics.json").read_text()) for r in range(NODES)]
    assert metrics[0]["epoch"] == 2
    for name in ("training_loss", "validation_loss", "validation_forward_cosine"):
        assert metrics[0][name] == metrics[1][name], name


def test_a_killed_node_stops_the_other_and_both_recover(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(SENTENCES.read_text(encoding="utf-8") * 50, encoding="utf-8")
    run = tmp_path / "run"
    run.mkdir()
    variables = environment(corpus)
    paper = Params.from_file(str(PAPER_CONFIG), ext_vars=variables).as_dict()
    overrides = {
        **TINY,  # 1 epoch of 40 batches a node
        "trainer.checkpointer.save_every_num_batches": 20,
        "trainer.callbacks": [*paper["trainer"]["callbacks"], {"type": "kill_node_at_batch"}],
        "distributed": distributed(free_port()),
    }
    nodes = start_nodes(run, overrides, variables, kill_node_1_at=30)
    assert wait_for(nodes, run) == [1, -signal.SIGKILL], outputs(run)
    # Node 0 did not hang: gloo's next all-reduce found the connection gone.
    message = (run / "node0.out").read_text()
    assert re.search(r"gloo.*Connection (reset|closed) by peer", message), message[-3000:]
    for rank in range(NODES):
        node = run / f"node{rank}"
        assert (node / "model_state_e0_b20.th").is_file()
        assert not (node / "model.tar.gz").exists()

    # The same command (the same port: --recover checks the configuration) on both nodes.
    nodes = start_nodes(run, overrides, variables, recover=True)
    assert wait_for(nodes, run) == [0, 0], outputs(run)
    for rank in range(NODES):
        node = run / f"node{rank}"
        log = (node / "out_worker0.log").read_text()
        assert f"resuming from {node / 'model_state_e0_b20.th'}" in log
        assert (node / "model.tar.gz").is_file()
    first, second = (weights_in(run / f"node{rank}" / "model.tar.gz") for rank in range(NODES))
    for name in first:
        assert torch.equal(first[name], second[name]), name
