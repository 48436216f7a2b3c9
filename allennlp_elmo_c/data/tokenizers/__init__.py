from allennlp_elmo_c.data.tokenizers.bpe import BpeTokenizer
