"""AllenNLP's `training_duration` (`metrics.json`, `str(datetime.timedelta)`) as a number."""


def training_seconds(duration: str) -> float:
    """`"H:MM:SS.ffffff"` -> seconds."""
    hours, minutes, rest = duration.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(rest)
