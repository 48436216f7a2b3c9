"""`python -m allennlp_elmo_c ...`: the `allennlp` command line with this plugin loaded."""

from allennlp.commands import main

import allennlp_elmo_c  # noqa: F401  (applies its patches, registers components)

if __name__ == "__main__":
    main(prog="python -m allennlp_elmo_c")
