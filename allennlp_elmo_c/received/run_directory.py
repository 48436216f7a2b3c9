"""
A run directory resumed with `allennlp train --recover` may come from someone else: AllenNLP
writes into it by name, so a symbolic link there would redirect its writes. One holding a link,
or anything but regular files and directories, is refused before anything in it is opened.
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
