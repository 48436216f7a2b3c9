from allennlp_elmo_c.models.elmo_c import ElmoC
