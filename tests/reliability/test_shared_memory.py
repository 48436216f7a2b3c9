"""
The fastText matrix is shared, not copied, between processes: two spawned processes (as DDP ranks
and spawned data-loader workers are) that receive a pickled `fasttext` embedder and look up every
row of the matrix through it read it from one memory-mapped file, whose pages the kernel counts
as shared by both (proportional set size = resident size / 2), with no private copy.

Read from `/proc/<pid>/smaps` (Linux only).
"""

import multiprocessing
import re
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
import torch

from allennlp_elmo_c.modules.token_embedders.fasttext import FastTextEmbedder
from tests import FIXTURES_ROOT

TINY = (FIXTURES_ROOT / "fasttext" / "tiny.bin").resolve()
PAGE_KB = 4

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/smaps").is_file(), reason="needs Linux /proc/<pid>/smaps"
)

_HEADER = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$")


def file_mappings(pid: int, path: Path) -> List[Tuple[int, int, Dict[str, int]]]:
    """`(start, end, {field: kB})` of each mapping of `path` in process `pid`."""
    mappings: List[Tuple[int, int, Dict[str, int]]] = []
    current = None
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        header = _HEADER.match(line)
        if header:
            current = None
            if header.group(3) == str(path):
                current = (int(header.group(1), 16), int(header.group(2), 16), {})
                mappings.append(current)
        elif current is not None and line.endswith(" kB"):
            name, value = line.split(":", 1)
            current[2][name] = int(value.split()[0])
    return mappings


def _look_up_every_row(embedder: FastTextEmbedder, pointer, ready, release) -> None:
    torch.set_num_threads(1)
    rows = embedder._fasttext.num_rows
    ids = torch.arange(rows).view(1, rows)  # one sentence of every row, one subword a token
    vectors = embedder(ids, torch.ones(1, rows, dtype=torch.long))
    assert vectors.shape == (1, rows, embedder.get_output_dim())
    pointer.value = embedder._fasttext.matrix_on(torch.device("cpu")).data_ptr()
    ready.set()
    release.wait(120)


def test_two_processes_share_the_matrix_pages():
    embedder = FastTextEmbedder(str(TINY))
    matrix_kb = embedder._fasttext.num_rows * embedder.get_output_dim() * 4 // 1024
    context = multiprocessing.get_context("spawn")
    release = context.Event()
    children = []
    for _ in range(2):
        pointer, ready = context.Value("Q", 0), context.Event()
        process = context.Process(
            target=_look_up_every_row, args=(embedder, pointer, ready, release), daemon=True
        )
        process.start()
        children.append((process, pointer, ready))
    try:
        for process, _, ready in children:
            assert ready.wait(180), "a child process did not finish its lookups"
        for process, pointer, _ in children:
            mappings = file_mappings(process.pid, TINY)
            # The matrix the embedder read is inside a mapping of the .bin, not a copy.
            assert any(start <= pointer.value < end for start, end, _ in mappings), mappings
            fields = {k: sum(m[2].get(k, 0) for m in mappings) for k in ("Rss", "Pss")}
            for key in ("Private_Dirty", "Anonymous"):
                fields[key] = sum(m[2].get(key, 0) for m in mappings)
            assert fields["Rss"] >= matrix_kb, fields  # every row was read from the mapping
            assert fields["Private_Dirty"] == 0 and fields["Anonymous"] == 0, fields
            # Every resident page is mapped by at least this process and the other one.
            assert fields["Pss"] <= fields["Rss"] / 2 + PAGE_KB, fields
    finally:
        release.set()
        for process, _, _ in children:
            process.join(60)
            if process.is_alive():
                process.kill()
    assert all(process.exitcode == 0 for process, _, _ in children)
