"""The extension's settings are declared once (server/lsp/settings_schema.py): package.json's
contributes.configuration and the extension README's settings table are generated from that table (its
languages from the targets), and the server reads the settings object through it."""

from __future__ import annotations

import json

from speedpatch import targets
from speedpatch.config import load_config
from speedpatch.lsp import settings_schema
from speedpatch.lsp.settings import name_setting, to_overrides
from speedpatch.lsp.settings_schema import (
    PACKAGE_JSON,
    README,
    README_BEGIN,
    README_END,
    SETTINGS,
    builtin_targets,
    contributes_configuration,
    render_readme,
)

SAMPLE = {"string": "x-7", "array": ["m-7"], "integer": 7, "number": 7.5, "boolean": True}


def _sample_settings() -> dict:
    """A client settings object with every server-read setting given a value of its type."""
    out: dict = {}
    for setting in SETTINGS:
        if not setting.toml:
            continue
        kinds = setting.type if isinstance(setting.type, tuple) else (setting.type,)
        *sections, last = setting.key.split(".")
        table = out
        for section in sections:
            table = table.setdefault(section, {})
        table[last] = SAMPLE[kinds[0]]
    return out


def test_package_json_declares_exactly_the_settings_the_schema_generates():
    declared = json.loads(PACKAGE_JSON.read_text())["contributes"]["configuration"]
    # on failure: python -m speedpatch.lsp.settings_schema rewrites the section
    assert declared == contributes_configuration(builtin_targets())


def test_package_json_activates_on_every_language_of_every_target_and_no_other():
    events = json.loads(PACKAGE_JSON.read_text())["activationEvents"]
    languages = {e.removeprefix("onLanguage:") for e in events if e.startswith("onLanguage:")}
    assert languages == {language for t in builtin_targets() for language in t.language_ids}
    assert "workspaceContains:speedpatch.toml" in events


def test_the_readme_settings_table_is_the_generated_one():
    text = README.read_text()
    assert README_BEGIN in text and README_END in text
    assert text == render_readme(text, builtin_targets())  # on failure: python -m speedpatch.lsp.settings_schema
    for key in contributes_configuration(builtin_targets())["properties"]:
        assert f"| `{key}` |" in text


def test_the_generator_rewrites_only_the_generated_parts(tmp_path, monkeypatch):
    package = json.loads(PACKAGE_JSON.read_text())
    package["contributes"]["configuration"]["properties"]["speedpatch.search.beam"]["default"] = 99
    package["activationEvents"].remove("onLanguage:cuda-cpp")
    package_copy, readme_copy = tmp_path / "package.json", tmp_path / "README.md"
    package_copy.write_text(json.dumps(package, indent=2) + "\n")
    readme_copy.write_text(README.read_text().replace("| `speedpatch.search.beam` |", "| `speedpatch.search.bean` |"))
    monkeypatch.setattr(settings_schema, "PACKAGE_JSON", package_copy)
    monkeypatch.setattr(settings_schema, "README", readme_copy)
    assert settings_schema.main(["--check"]) == 1
    assert settings_schema.main([]) == 0 and settings_schema.main(["--check"]) == 0
    assert package_copy.read_text() == PACKAGE_JSON.read_text()
    assert readme_copy.read_text() == README.read_text()


def test_every_backend_setting_offers_exactly_its_targets_backends():
    properties = contributes_configuration(builtin_targets())["properties"]
    for name in targets.BUILTIN:
        target = targets.get_target(name)
        entry = properties[f"speedpatch.backends.{name}"]
        assert entry["enum"] == ["", *(b.name for b in target.backends())]
        assert len(entry["enumDescriptions"]) == len(entry["enum"]) and all(entry["enumDescriptions"])


def test_the_api_key_is_read_by_the_server_but_never_an_editor_setting():
    properties = contributes_configuration(builtin_targets())["properties"]
    assert "speedpatch.llm.apiKey" not in properties
    assert to_overrides({"llm": {"apiKey": "sk-7"}}) == {"llm": {"api_key": "sk-7"}}


def test_every_setting_the_server_reads_lands_on_its_speedpatch_toml_key(tmp_path):
    config = load_config(tmp_path, to_overrides(_sample_settings()))
    read = [s for s in SETTINGS if s.toml]
    assert len(read) >= 10
    for setting in read:
        section, _, key = setting.toml.rpartition(".")
        value = getattr(getattr(config, section) if section else config, key)
        kinds = setting.type if isinstance(setting.type, tuple) else (setting.type,)
        assert value == SAMPLE[kinds[0]], setting.key


def test_unset_values_leave_speedpatch_toml_in_charge():
    unset = {"llm": {"baseUrl": "", "models": []}, "search": {"beam": None}, "offline": None, "backends": {"nki": ""}}
    assert to_overrides(unset) == {}


def test_backend_choices_pass_through_for_any_target_name():
    assert to_overrides({"backends": {"toy": "toy-turbo", "cuda": ""}}) == {"backends": {"toy": "toy-turbo"}}


def test_a_configuration_error_names_the_editor_setting_only_when_the_editor_sent_that_value():
    error = "--iterations/-T (search.iterations): expected an integer, got 'many'"
    named = name_setting(error, {"search": {"iterations": "many"}})
    assert named == f"{error} (the editor setting speedpatch.search.iterations)"
    assert name_setting(error, {"search": {"beam": 2}}) == error  # speedpatch.toml's value, not the editor's
    assert name_setting("offline: expected true or false, got 'y'", {"offline": "y"}).endswith("speedpatch.offline)")
