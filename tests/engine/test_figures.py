"""How figures read (speedpatch.figures): the one formatter the CLI, the server and the verdict share."""

from __future__ import annotations

from speedpatch.figures import speedup_text, value_text


def test_large_counts_get_thousands_separators():
    assert value_text(1204992.0, "cycles") == "1,204,992 cycles"


def test_large_fractional_values_read_as_whole_numbers_not_exponents():
    assert value_text(12345.6, "us") == "12,346 µs"


def test_small_values_keep_four_significant_digits():
    assert value_text(0.0123, "ms") == "0.0123 ms"
    assert value_text(12.5, "us") == "12.5 µs"


def test_whole_values_under_a_thousand_have_no_decimals():
    assert value_text(512.0, "lines") == "512 lines"


def test_a_missing_value_reads_as_the_callers_placeholder():
    assert value_text(None, "cycles") == "?"
    assert value_text(None, "cycles", missing="-") == "-"


def test_a_value_without_a_unit_has_no_trailing_space():
    assert value_text(200.0) == "200"


def test_a_speedup_has_two_decimals_and_an_x():
    assert speedup_text(100 / 60) == "1.67x"
    assert speedup_text(None) == "?" and speedup_text(None, missing="-") == "-"
