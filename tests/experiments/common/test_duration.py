import datetime

from experiments.common.duration import training_seconds


def test_training_seconds_reads_what_allennlp_writes():
    # AllenNLP's metrics.json has str(datetime.timedelta(seconds=...)).
    for seconds in (0.5, 59.25, 671.523602, 3 * 3600 + 7 * 60 + 1.000001):
        assert abs(training_seconds(str(datetime.timedelta(seconds=seconds))) - seconds) < 1e-6
