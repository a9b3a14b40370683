"""The server's pure helpers: settings mapping, edit computation, number formatting, folder lookup."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from speedpatch.lsp import settings
from speedpatch.lsp.folders import Folder, Folders, config_error_messages
from speedpatch.lsp.formatting import faster_text, value_text
from speedpatch.lsp.positions import line_end, line_start, minimal_edit, position_at


def test_client_settings_map_onto_toml_shaped_overrides():
    given = {
        "llm": {"baseUrl": "http://x/v1", "models": ["a", "b"], "apiKey": "k"},
        "budget": {"maxLlmCalls": 5, "maxEvaluations": 7, "maxSeconds": 60},
        "search": {"iterations": 2, "beam": 1, "plans": 3, "codes": 1},
        "backends": {"gemmini": "gemmini-spike", "nki": ""},
        "offline": True,
        "somethingElse": 1,
    }
    assert settings.to_overrides(given) == {
        "llm": {"base_url": "http://x/v1", "models": ["a", "b"], "api_key": "k"},
        "budget": {"max_llm_calls": 5, "max_evaluations": 7, "max_seconds": 60},
        "search": {"iterations": 2, "beam": 1, "plans": 3, "codes": 1},
        "backends": {"gemmini": "gemmini-spike"},
        "offline": True,
    }


def test_empty_settings_leave_speedpatch_toml_in_charge():
    assert settings.to_overrides({"llm": {"baseUrl": "", "models": []}, "backends": {}}) == {}


def test_settings_may_come_wrapped_in_the_section_name():
    assert settings.unwrap({"speedpatch": {"offline": True}}) == {"offline": True}
    assert settings.unwrap({"offline": True}) == {"offline": True}
    assert settings.unwrap(None) == {}


def test_quick_overrides_win_over_client_settings():
    merged = settings.merge(
        {"search": {"iterations": 8, "beam": 4}, "offline": True}, settings.QUICK_OVERRIDES
    )
    assert merged["search"]["iterations"] == 1 and merged["offline"] is True


def test_minimal_edit_replaces_only_the_changed_lines():
    old = "a\nb\nc\nd\n"
    new = "a\nB\nC\nd\n"
    edit = minimal_edit(old, new, types.PositionEncodingKind.Utf16)
    assert (edit.range.start.line, edit.range.start.character) == (1, 0)
    assert edit.new_text == "B\nC" and (edit.range.end.line, edit.range.end.character) == (2, 1)


def test_positions_count_utf16_units():
    text = "x = '\U0001f600'\ny"
    assert position_at(text, text.index("'", 5) + 1).character == 8  # the emoji is two UTF-16 units
    assert position_at(text, len(text), types.PositionEncodingKind.Utf32) == types.Position(
        line=1, character=1
    )
    assert line_end(text, 0, types.PositionEncodingKind.Utf8).character == 10  # 5 + 4 bytes + 1


def test_line_start_is_the_first_non_blank_character_in_the_negotiated_encoding():
    text = "x\n\t  def k(a):\r\n   \n"
    assert line_start(text, 1) == types.Position(line=1, character=3)
    assert line_start(text, 2) == types.Position(line=2, character=3)  # a blank line: its end
    assert line_start("\u00e9\n  y", 1, types.PositionEncodingKind.Utf8) == types.Position(line=1, character=2)


def test_measurements_read_with_unit_and_backend():
    assert value_text(1204992.0, "cycles") == "1,204,992 cycles"
    assert value_text(0.0123, "ms") == "0.0123 ms"
    assert faster_text(3.1214, 1204992, 386048, "cycles", "gemmini-native") == (
        "3.12x faster: 1,204,992 -> 386,048 cycles (gemmini-native)"
    )


def test_figures_not_from_hardware_say_where_they_come_from():
    assert faster_text(1.2379, 24119, 19484, "cycles", "gemmini-native", "model") == (
        "1.24x faster on the cycle model: 24,119 -> 19,484 cycles (gemmini-native)"
    )
    assert value_text(12.5, "us") == "12.5 µs"


def _folders(*roots: Path) -> Folders:
    found = Folders()
    for root in roots:
        root.mkdir(parents=True, exist_ok=True)
        found.add(Folder(root.resolve(), "", warn=lambda message: None))
    return found


def test_a_file_belongs_to_the_deepest_folder_containing_it(tmp_path):
    folders = _folders(tmp_path / "outer", tmp_path / "outer" / "inner")
    assert folders.owner(str(tmp_path.resolve() / "outer" / "inner" / "k.c")).name == "inner"
    assert folders.owner(str(tmp_path.resolve() / "outer" / "k.c")).name == "outer"


def test_a_file_outside_every_folder_belongs_to_the_first(tmp_path):
    folders = _folders(tmp_path / "b", tmp_path / "a")
    # "a-side" starts with "a" but is not inside it
    assert folders.owner(str(tmp_path.resolve() / "a-side" / "k.c")).name == "b"


def test_a_settings_error_shared_by_folders_is_reported_once_naming_them(tmp_path):
    a, b, c = _folders(tmp_path / "a", tmp_path / "b", tmp_path / "c").all()
    a.config_error = b.config_error = "overrides: search.iterations must be an integer"
    c.config_error = "c/speedpatch.toml: not valid TOML"
    assert config_error_messages([a, b, c], named=True) == [
        "speedpatch: configuration error in a, b: overrides: search.iterations must be an integer",
        "speedpatch: configuration error in c: c/speedpatch.toml: not valid TOML",
    ]
    assert config_error_messages([a], named=False) == [
        "speedpatch: configuration error: overrides: search.iterations must be an integer"
    ]


def test_elapsed_time_reads_in_seconds_then_minutes():
    from speedpatch.lsp.progress import elapsed_text

    assert elapsed_text(12.7) == "12 s" and elapsed_text(185) == "3 min 05 s"


def test_a_job_says_it_is_re_verifying_its_winner_until_the_run_ends():
    from speedpatch.engine import events as ev
    from speedpatch.lsp.runs import Job
    from speedpatch.model import Kernel, Problem

    kernel = Kernel("k", "toy", 0, 1, 0, 1, 0, "k")
    job = Job("r1", "file:///x", "/x", Problem(path="/x", source="k", kernel=kernel, target="toy", backend="b"),
              config=None)  # type: ignore[arg-type]
    job.absorb(ev.Event(ev.REVERIFYING, "r1", {"backend": "gemmini-spike", "candidate": "c1"}))
    assert job.reverifying == "gemmini-spike"
    job.absorb(ev.Event(ev.RUN_FINISHED, "r1", {"status": "finished"}))
    assert job.reverifying == ""
