"""Code extraction from LLM replies (speedpatch.engine.extract): the LAST fenced block is the code."""

from __future__ import annotations

from speedpatch.engine.extract import last_code_block


def test_takes_the_last_fenced_block():
    reply = "The old code:\n```c\nold();\n```\nThe new code:\n```c\nnew();\n```\nDone."
    assert last_code_block(reply) == "new();"


def test_keeps_the_code_exactly_including_indentation_and_blank_lines():
    code = "def f(x):\n    y = x\n\n    return y"
    assert last_code_block(f"```python\n{code}\n```") == code


def test_language_tags_are_accepted():
    for tag in ("python", "c", "cuda", "c++", "objective-c", "py3.11", ""):
        assert last_code_block(f"```{tag}\nx = 1\n```") == "x = 1", tag


def test_info_string_after_the_language_is_ignored():
    assert last_code_block('```python title="k.py"\nx = 1\n```') == "x = 1"


def test_tilde_fences_are_accepted():
    assert last_code_block("~~~python\nx = 1\n~~~") == "x = 1"


def test_a_backtick_fence_inside_a_tilde_block_stays_code():
    reply = "~~~markdown\nSee:\n```\ninner\n```\n~~~"
    assert last_code_block(reply) == "See:\n```\ninner\n```"


def test_longer_fences_are_accepted():
    assert last_code_block("````c\nint a;\n````") == "int a;"


def test_no_fenced_block_gives_none():
    assert last_code_block("I would tile the loop by 16, then unroll it.") is None


def test_empty_reply_gives_none():
    assert last_code_block("") is None


def test_inline_backticks_are_not_a_block():
    assert last_code_block("Use ```x = 1``` here.") is None


def test_unterminated_block_gives_none():
    assert last_code_block("```c\nint main() {\n  return 0;") is None


def test_unterminated_last_block_after_a_complete_one_gives_none():
    reply = "The original:\n```c\nold();\n```\nThe optimized version:\n```c\nnew_part_one();\nnew_part"
    assert last_code_block(reply) is None


def test_empty_block_gives_none():
    assert last_code_block("```python\n```") is None
    assert last_code_block("```python\n\n   \n```") is None


def test_empty_last_block_gives_none_even_after_a_full_one():
    assert last_code_block("```c\nold();\n```\nNew:\n```c\n```") is None


def test_a_reply_with_windows_line_endings_still_gives_its_code():
    assert last_code_block("Here:\r\n```c\r\nint a;\r\n```\r\n") == "int a;"
