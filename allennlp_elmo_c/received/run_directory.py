"""
A training run's directory resumed with `allennlp train --recover`, which may come from
someone else (a run shared to be continued): AllenNLP appends to its `out.log` and
`stderr.log`, writes into its `vocabulary/`, and replaces its checkpoints and metrics, all by
name. A symbolic link there would send those writes into whatever file it points at (a log
line of the sender's choosing appended to a shell start-up file, say), so a run directory
holding a link, or anything but regular files and directories, is refused before anything in it
is opened; the run then writes only its own regular files.
"""

from pathlib import Path
from typing import Union

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received.contained_files import refuse_links


def check_run_directory(serialization_dir: Union[str, Path]) -> None:
    """
    A `ConfigurationError` naming the first symbolic link, FIFO, socket or device under the run
    directory `serialization_dir` (the directory itself, given by the user, may be a link); no
    error for a directory holding regular files and directories only, or for none at all.
    """
    root = Path(serialization_dir)
    if not root.exists():
        return
    if not root.is_dir():
        raise ConfigurationError(f"--recover: the run directory {root} is not a directory")
    refuse_links(root.resolve(), f"--recover: run directory {root}")
