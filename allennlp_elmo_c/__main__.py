"""`python -m allennlp_elmo_c ...`: `allennlp` with the plugin, on the free CPUs' threads."""

from allennlp.commands import main

from allennlp_elmo_c import use_free_cpus

if __name__ == "__main__":
    use_free_cpus()
    main(prog="python -m allennlp_elmo_c")
