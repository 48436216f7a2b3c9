"""`python -m allennlp_elmo_c ...`: the `allennlp` command line with this plugin loaded.

Python imports the package (`allennlp_elmo_c/__init__.py`) before this module; its first line
sets OpenMP's wait policy, before anything imports torch (`allennlp_elmo_c_startup.wait_passively`).
"""

from allennlp.commands import main

import allennlp_elmo_c  # noqa: F401  (applies its patches, registers components)

if __name__ == "__main__":
    main(prog="python -m allennlp_elmo_c")
