from allennlp.common import Params
from allennlp.data import DatasetReader

from allennlp_elmo_c.archive import read_archive_config


class ArchivedReader(DatasetReader):
    """
    The dataset reader an `elmo_c` archive was trained with (no weights read), for continued
    pretraining. Registered as a `DatasetReader` with name "elmo_c_from_archive".
    """

    @classmethod
    def from_archive(cls, archive_file: str) -> DatasetReader:  # type: ignore[override]
        config = read_archive_config(archive_file)
        return DatasetReader.from_params(Params(config["dataset_reader"]))


DatasetReader.register("elmo_c_from_archive", constructor="from_archive")(ArchivedReader)
