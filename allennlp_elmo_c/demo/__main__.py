"""`python -m allennlp_elmo_c.demo`: the main job on the bundled demo data (see `demo.main`)."""

from allennlp_elmo_c.demo.main import main

main()
