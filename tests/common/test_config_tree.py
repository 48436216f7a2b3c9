from allennlp_elmo_c.common.config_tree import join_key, lookup_dotted, walk


CONFIG = {"a": {"b": [1, {"c": "x"}]}, "d": 2}


def test_walk_yields_parents_first_in_the_config_order():
    assert list(walk(CONFIG)) == [
        ("", None, CONFIG),
        ("a", "a", CONFIG["a"]),
        ("a.b", "b", CONFIG["a"]["b"]),
        ("a.b.0", 0, 1),
        ("a.b.1", 1, {"c": "x"}),
        ("a.b.1.c", "c", "x"),
        ("d", "d", 2),
    ]


def test_walk_names_paths_under_its_path_and_join():
    def bracketed(path, key):
        return f"{path}[{key}]" if isinstance(key, int) else join_key(path, key)

    paths = [path for path, _, _ in walk(CONFIG["a"], "model", join=bracketed)]
    assert paths == ["model", "model.b", "model.b[0]", "model.b[1]", "model.b[1].c"]


def test_skipped_keys_are_left_out_outside_lists_only():
    config = {"initializer": {"x": 1}, "layers": [{"initializer": {"y": 2}}]}
    paths = [path for path, _, _ in walk(config, skip=frozenset({"initializer"}))]
    assert paths == ["", "layers", "layers.0", "layers.0.initializer", "layers.0.initializer.y"]


def test_a_deep_config_is_walked_without_recursion():
    config = node = {}
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    assert sum(1 for _ in walk(config)) == 5001


def test_lookup_dotted_reads_dicts_and_list_indices():
    assert lookup_dotted(CONFIG, "a.b.1.c") == "x"
    assert lookup_dotted(CONFIG, "a.b.2") is None
    assert lookup_dotted(CONFIG, "a.b.c") is None
    assert lookup_dotted(CONFIG, "d.e") is None
