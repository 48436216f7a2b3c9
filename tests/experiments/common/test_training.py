from experiments.common.training import timed_overrides


def test_the_timings_callback_follows_the_configs_own_after_the_overrides(tmp_path):
    config = tmp_path / "config.jsonnet"
    config.write_text("""{
        "data_loader": {"batch_size": std.parseInt(std.extVar("BATCH"))},
        "trainer": {"num_epochs": 3, "callbacks": [{"type": "cpu_threads"}]}
    }""")
    overrides = {"trainer.num_epochs": 1, "data_loader.batch_size": 4}
    params, timed = timed_overrides(config, overrides, {"BATCH": "2"}, write_every=10)
    assert params["data_loader"]["batch_size"] == 4 and params["trainer"]["num_epochs"] == 1
    assert timed == {**overrides, "trainer.callbacks": [
        {"type": "cpu_threads"}, {"type": "update_timings", "write_every": 10}]}  # fmt: skip
    assert overrides == {"trainer.num_epochs": 1, "data_loader.batch_size": 4}  # not changed
    # A config without callbacks gets the timings alone.
    config.write_text('{"trainer": {"num_epochs": 1}}')
    _, timed = timed_overrides(config, {}, {})
    assert timed == {"trainer.callbacks": [{"type": "update_timings"}]}
