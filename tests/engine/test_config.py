"""speedpatch.toml loading and checking (speedpatch.config)."""

from __future__ import annotations

import re

import pytest
from speedpatch.config import CONFIG_FILE, config_from_dict, load_config
from speedpatch.errors import ConfigError


def write(tmp_path, text: str):
    (tmp_path / CONFIG_FILE).write_text(text)
    return tmp_path


def test_defaults_match_the_method():
    search = load_config().search
    assert (search.iterations, search.beam, search.plans, search.codes) == (8, 4, 4, 2)
    assert search.dropout_keep == 0.25
    assert search.invent_fraction == 0.1 and search.different_fraction == 0.1
    assert search.regression_slack == 1.1 and search.slack_iterations == 2
    assert search.fix_on_failure is True


def test_a_workspace_without_speedpatch_toml_uses_the_defaults(tmp_path):
    assert load_config(tmp_path).search == load_config().search


def test_speedpatch_toml_values_load(tmp_path):
    config = load_config(write(tmp_path, """
offline = true
[search]
iterations = 12
beam = 2
dropout_keep = 0.5
fix_on_failure = false
[llm]
base_url = "http://localhost:8000/v1"
models = ["m1", "m2"]
temperature = 1
[budget]
max_llm_calls = 100
[backends]
gemmini = "spike"
[backend.spike]
binary = "/opt/spike"
[menus]
gemmini = "my-menu.toml"
"""))
    assert config.offline is True
    assert (config.search.iterations, config.search.beam, config.search.dropout_keep) == (12, 2, 0.5)
    assert config.search.fix_on_failure is False
    assert config.search.plans == 4  # untouched keys keep their defaults
    assert config.llm.base_url == "http://localhost:8000/v1" and config.llm.models == ["m1", "m2"]
    assert config.llm.temperature == 1.0 and isinstance(config.llm.temperature, float)
    assert config.budget.max_llm_calls == 100
    assert config.backends == {"gemmini": "spike"}
    assert config.backend_settings == {"spike": {"binary": "/opt/spike"}}
    assert config.menus == {"gemmini": "my-menu.toml"}


def test_a_model_list_given_as_a_string_is_refused_with_the_list_spelled_out(tmp_path):
    # "gpt-4o,o4-mini" would otherwise be one model of that name
    with pytest.raises(ConfigError, match=r"llm.models: expected a list .* such as \['m1'\]"):
        load_config(write(tmp_path, '[llm]\nmodels = "m1"\n'))


def test_a_negative_or_zero_count_gets_one_message_naming_the_flag(tmp_path):
    for bad in (-1, 0):
        with pytest.raises(ConfigError, match=rf"^--iterations/-T \(search.iterations\): must be at least 1, got {bad}$"):
            load_config(tmp_path, {"search": {"iterations": bad}})


def test_a_zero_count_in_the_file_names_the_file_and_the_key(tmp_path):
    path = re.escape(str(tmp_path / CONFIG_FILE))
    with pytest.raises(ConfigError, match=rf"^{path}: search.beam: must be at least 1, got -2$"):
        load_config(write(tmp_path, "[search]\nbeam = -2\n"))


def test_overrides_win_over_the_file(tmp_path):
    write(tmp_path, "[search]\niterations = 12\nbeam = 2\n")
    config = load_config(tmp_path, {"search": {"iterations": 3}, "offline": True})
    assert config.search.iterations == 3
    assert config.search.beam == 2
    assert config.offline is True


@pytest.mark.parametrize(("toml", "key"), [
    ('[search]\niterations = "eight"', "search.iterations"),
    ("[search]\nbeam = 2.5", "search.beam"),
    ("[search]\nfix_on_failure = 1", "search.fix_on_failure"),
    ("[search]\ndropout_keep = true", "search.dropout_keep"),
    ('[llm]\ntemperature = "hot"', "llm.temperature"),
    ("[llm]\nbase_url = 8000", "llm.base_url"),
    ('[llm]\nmodels = ["ok", 3]', "llm.models"),
    ("offline = 'yes'", "offline"),
])
def test_a_value_of_the_wrong_type_is_refused_naming_the_key(tmp_path, toml, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(write(tmp_path, toml))


@pytest.mark.parametrize(("toml", "key"), [
    ("[search]\nearly_stop = -1", "search.early_stop"),
    ("[search]\neval_timeout = -5.0", "search.eval_timeout"),
    ("[budget]\nmax_evaluations = -3", "budget.max_evaluations"),
    ("[llm]\nretries = -1", "llm.retries"),
])
def test_a_negative_value_is_refused_naming_the_key(tmp_path, toml, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(write(tmp_path, toml))


@pytest.mark.parametrize("key", ["iterations", "beam", "plans", "codes"])
def test_zero_search_sizes_are_refused_naming_the_key(tmp_path, key):
    with pytest.raises(ConfigError, match=f"search.{key}: must be at least 1"):
        load_config(write(tmp_path, f"[search]\n{key} = 0"))


@pytest.mark.parametrize("key", ["dropout_keep", "invent_fraction", "different_fraction"])
def test_a_fraction_above_one_is_refused_naming_the_key(tmp_path, key):
    with pytest.raises(ConfigError, match=f"search.{key}: must be between 0 and 1"):
        load_config(write(tmp_path, f"[search]\n{key} = 1.5"))


def test_an_unknown_key_is_refused_and_the_known_ones_listed(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown key search\.iteratons .*iterations"):
        load_config(write(tmp_path, "[search]\niteratons = 3"))


def test_an_unknown_section_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="unknown key 'serach'"):
        load_config(write(tmp_path, "[serach]\niterations = 3"))


def test_a_section_that_is_not_a_table_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"\[search\] must be a table"):
        load_config(write(tmp_path, "search = 3"))


def test_an_api_key_in_the_file_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"llm\.api_key"):
        load_config(write(tmp_path, '[llm]\napi_key = "sk-secret"'))


def test_an_api_key_may_come_from_overrides_and_is_left_out_of_to_dict():
    config = load_config(overrides={"llm": {"api_key": "sk-secret"}})
    assert config.llm.resolved_api_key() == "sk-secret"
    assert "api_key" not in config.to_dict()["llm"]
    assert "sk-secret" not in repr(config)


def test_a_key_given_as_api_key_env_is_refused_without_being_repeated(tmp_path):
    key = "sk-proj-canary-0123456789abcdef"
    with pytest.raises(ConfigError, match=r"llm\.api_key_env: expected the name of the environment variable") as err:
        load_config(write(tmp_path, f'[llm]\napi_key_env = "{key}"'))
    assert key not in str(err.value)


def test_api_key_env_takes_any_variable_name(tmp_path, monkeypatch):
    monkeypatch.setenv("my_llm_key_2", "sk-from-my-variable")
    config = load_config(write(tmp_path, '[llm]\napi_key_env = "my_llm_key_2"'))
    assert config.llm.resolved_api_key() == "sk-from-my-variable"


def test_the_stored_config_keeps_the_base_url_without_its_credentials():
    config = load_config(overrides={"llm": {"base_url": "https://user:sk-in-the-url-123@llm.example/v1?api-key=sk-q-4567890"}})
    assert config.to_dict()["llm"]["base_url"] == (
        "https://[redacted llm.base_url]@llm.example/v1?api-key=[redacted llm.base_url]")
    assert config.to_dict(secrets=True)["llm"]["base_url"] == config.llm.base_url


def test_the_errors_name_the_file(tmp_path):
    with pytest.raises(ConfigError, match=CONFIG_FILE):
        load_config(write(tmp_path, "[search]\nnope = 1"))


def test_bad_toml_gives_a_clear_error_naming_the_file(tmp_path):
    with pytest.raises(ConfigError, match=f"{CONFIG_FILE}: not valid TOML"):
        load_config(write(tmp_path, "[search\niterations = 3"))


def test_invalid_overrides_are_refused_too():
    with pytest.raises(ConfigError, match="search.beam"):
        load_config(overrides={"search": {"beam": 0}})


def test_a_stored_config_rebuilds_to_the_same_config(tmp_path):
    config = load_config(write(tmp_path, '[search]\nbeam = 3\n[llm]\nmodels = ["m"]\n[backend.spike]\nx = 1\n'))
    assert config_from_dict(config.to_dict()) == config


def test_use_llm_needs_a_configured_endpoint_or_model_and_not_offline():
    assert load_config().use_llm is False
    assert load_config(overrides={"llm": {"models": ["m"]}}).use_llm is True
    assert load_config(overrides={"llm": {"models": ["m"]}, "offline": True}).use_llm is False


def test_the_paper_preset_sets_the_paper_era_gemmini_search():
    search = load_config(None, {"search": {"preset": "paper"}}).search
    assert (search.beam, search.plans, search.codes, search.iterations) == (6, 12, 4, 10)
    assert search.dropout_keep == 0.3
    assert search.slack_iterations == 0 and search.regression_slack == 1.0  # strictly faster than the parent


def test_keys_beside_the_preset_win_over_it():
    assert load_config(None, {"search": {"iterations": 3, "preset": "paper"}}).search.iterations == 3


def test_an_unknown_preset_is_an_error_naming_the_known_ones():
    with pytest.raises(ConfigError, match="search.preset: expected one of paper"):
        load_config(None, {"search": {"preset": "fast"}})


def test_code_replies_are_whole_rewrites_unless_edits_are_asked_for(tmp_path):
    assert load_config().search.code_format == "rewrite"
    assert load_config(write(tmp_path, '[search]\ncode_format = "edits"\n')).search.code_format == "edits"


def test_an_unknown_code_format_is_refused_naming_the_choices(tmp_path):
    with pytest.raises(ConfigError, match="search.code_format: expected one of rewrite, edits, got 'diff'"):
        load_config(write(tmp_path, '[search]\ncode_format = "diff"\n'))
