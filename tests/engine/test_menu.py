"""Optimization menus (speedpatch.menu): shipped menus/<target>.toml and workspace overrides."""

from __future__ import annotations

import pytest
from speedpatch.errors import ConfigError
from speedpatch.menu import OTHER, load_menu, shipped_menu_text

MENU_TOML = '''
knowledge = "The systolic array is 16x16."
optimizations = ["Tile the loops.", "Double-buffer the scratchpad."]
plan_rules = ["Respect the 256 KB scratchpad."]
code_rules = ["Keep the fence instructions."]
'''


def workspace_menu(tmp_path, target: str = "toy", text: str = MENU_TOML):
    folder = tmp_path / ".speedpatch" / "menus"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{target}.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("target", ["gemmini", "cuda", "nki"])
def test_the_shipped_menu_of_a_builtin_target_loads(target):
    if shipped_menu_text(target) is None:
        pytest.skip(f"menus/{target}.toml is not shipped yet")
    menu = load_menu(target)
    assert menu.source == f"menus/{target}.toml"
    assert menu.knowledge.strip()
    assert len(menu.optimizations) >= 5
    assert OTHER not in menu.optimizations  # the prompt adds it after dropout


def test_a_target_without_any_menu_gets_an_empty_one(tmp_path):
    menu = load_menu("no-such-target", tmp_path)
    assert (menu.knowledge, menu.optimizations, menu.plan_rules, menu.code_rules) == ("", [], [], [])


def test_the_workspace_menu_in_dot_speedpatch_is_used(tmp_path):
    path = workspace_menu(tmp_path)
    menu = load_menu("toy", tmp_path)
    assert menu.knowledge == "The systolic array is 16x16."
    assert menu.optimizations == ["Tile the loops.", "Double-buffer the scratchpad."]
    assert menu.plan_rules == ["Respect the 256 KB scratchpad."]
    assert menu.code_rules == ["Keep the fence instructions."]
    assert menu.source == str(path)


def test_the_menus_override_path_is_relative_to_the_workspace(tmp_path):
    (tmp_path / "my-menu.toml").write_text(MENU_TOML)
    workspace_menu(tmp_path, text='optimizations = ["not this one"]')
    menu = load_menu("toy", tmp_path, override="my-menu.toml")
    assert menu.optimizations == ["Tile the loops.", "Double-buffer the scratchpad."]


def test_an_absolute_override_path_is_used_as_is(tmp_path):
    path = tmp_path / "elsewhere.toml"
    path.write_text(MENU_TOML)
    assert load_menu("toy", tmp_path / "ws", override=str(path)).source == str(path)


def test_a_missing_override_file_is_an_error_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"menus\.toy: menu file .*missing\.toml does not exist"):
        load_menu("toy", tmp_path, override="missing.toml")


def test_extra_optimizations_append_to_the_menu(tmp_path):
    workspace_menu(tmp_path, text='optimizations = ["A."]\nextra_optimizations = ["B."]')
    assert load_menu("toy", tmp_path).optimizations == ["A.", "B."]


def test_other_methods_in_a_menu_file_is_not_duplicated(tmp_path):
    workspace_menu(tmp_path, text=f'optimizations = ["A.", "{OTHER}"]')
    assert load_menu("toy", tmp_path).optimizations == ["A."]


def test_a_workspace_menu_replaces_only_the_keys_it_sets_on_a_shipped_menu(tmp_path):
    if shipped_menu_text("gemmini") is None:
        pytest.skip("menus/gemmini.toml is not shipped yet")
    shipped = load_menu("gemmini")
    workspace_menu(tmp_path, "gemmini", 'extra_optimizations = ["My own trick."]\nplan_rules = ["Mine."]')
    menu = load_menu("gemmini", tmp_path)
    assert menu.optimizations == shipped.optimizations + ["My own trick."]
    assert menu.plan_rules == ["Mine."]
    assert menu.knowledge == shipped.knowledge
    assert menu.code_rules == shipped.code_rules


@pytest.mark.parametrize(("text", "complaint"), [
    ('optimizations = "Tile."', "optimizations must be a list of strings"),
    ("optimizations = [1, 2]", "optimizations must be a list of strings"),
    ('plan_rules = "one"', "plan_rules must be a list of strings"),
    ("code_rules = [true]", "code_rules must be a list of strings"),
    ("extra_optimizations = [3]", "extra_optimizations must be a list of strings"),
    ("knowledge = 3", "knowledge must be a string"),
    ("optimizations = [", "not valid TOML"),
])
def test_an_invalid_menu_is_refused_naming_the_file_and_the_problem(tmp_path, text, complaint):
    workspace_menu(tmp_path, text=text)
    with pytest.raises(ConfigError, match=r"toy\.toml: " + complaint):
        load_menu("toy", tmp_path)
