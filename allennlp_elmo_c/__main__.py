"""`python -m allennlp_elmo_c ...`: the `allennlp` command line with this plugin loaded, on torch
threads chosen from the free CPUs (`allennlp_elmo_c.use_free_cpus`)."""

from allennlp.commands import main

from allennlp_elmo_c import use_free_cpus

if __name__ == "__main__":
    use_free_cpus()
    main(prog="python -m allennlp_elmo_c")
