import json

import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received import received_json
from allennlp_elmo_c.received.limits import MAX_JSON_DEPTH as MAX_DEPTH
from allennlp_elmo_c.received.received_json import json_depth, parse_received_json, read_received_json


def test_depth_is_counted_without_parsing_and_ignores_brackets_in_strings():
    assert json_depth(b"{}") == 1 and json_depth("3") == 0
    assert json_depth('{"a": [[1], {"b": "[[[[[[{"}]}') == 3
    assert json_depth(r'["\"[[[[", "\\"]') == 1  # escaped quotes end no string


def test_too_deep_a_text_is_refused_before_python_parses_it(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("parsed")

    monkeypatch.setattr(received_json.json, "loads", never)
    with pytest.raises(ConfigurationError, match=f"nested deeper than {MAX_DEPTH} levels; it is not parsed"):
        parse_received_json("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "x")


def test_a_text_at_the_depth_cap_is_read():
    assert parse_received_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "x") is not None


def test_a_link_or_fifo_is_refused_unopened_when_links_are_not_followed(tmp_path):
    import os

    target = tmp_path / "target.json"
    target.write_text(json.dumps({"a": 1}))
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert read_received_json(link, "x") == {"a": 1}
    with pytest.raises(ConfigurationError, match="symbolic link"):
        read_received_json(link, "x", follow_links=False)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(ConfigurationError, match="not a regular file"):
        read_received_json(fifo, "x", follow_links=False)  # a plain open() would wait for a writer
    with pytest.raises(ConfigurationError, match="unreadable"):
        read_received_json(tmp_path / "absent.json", "x", follow_links=False)


def test_received_json_is_plain_capped_json(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"a": [1, 2]}')
    assert read_received_json(path, "x") == {"a": [1, 2]}
    for text in ('local x = std.extVar("HOME"); {"a": x}', '{"a": NaN}'):
        path.write_text(text)
        with pytest.raises(ConfigurationError, match="is not plain JSON"):
            read_received_json(path, "x")
    path.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(ConfigurationError, match=f"nested deeper than {MAX_DEPTH} levels"):
        read_received_json(path, "x")
    with pytest.raises(ConfigurationError, match="larger than 100 bytes"):
        parse_received_json(" " * 101, "x", max_bytes=100)
