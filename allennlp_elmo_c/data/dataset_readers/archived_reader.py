from allennlp.common import Params
from allennlp.data import DatasetReader

from allennlp_elmo_c.archive import read_archive_config


class ArchivedReader(DatasetReader):
    """
    The dataset reader an archive was trained with, built from the archive's config.json (no
    weights are read): `{"type": "elmo_c_from_archive", "archive_file": ...}`, as AllenNLP's
    `from_archive` model type gives an archive's model. Continued pretraining
    (`training_config/elmo_c_adapt.jsonnet`) reads the new text with it, so that windows,
    boundary tokens, tokenizer and token indexers (the biLM's own fastText model) are the source
    biLM's.

    The archive must be an `elmo_c` archive: anything else, or a missing or unreadable file,
    is a `ConfigurationError` naming the file, raised when the reader is built, which is before
    the model is loaded.

    Registered as a `DatasetReader` with name "elmo_c_from_archive".
    """

    @classmethod
    def from_archive(cls, archive_file: str) -> DatasetReader:  # type: ignore[override]
        config = read_archive_config(archive_file)
        return DatasetReader.from_params(Params(config["dataset_reader"]))


DatasetReader.register("elmo_c_from_archive", constructor="from_archive")(ArchivedReader)
