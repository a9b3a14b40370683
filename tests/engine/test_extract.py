"""Code extraction from LLM replies (speedpatch.engine.extract): the block that defines the kernel, by name."""

from __future__ import annotations

import json

import toy_target
from speedpatch.engine.extract import code_blocks, edited_kernel, kernel_code

TARGET = toy_target.ToyTarget()
KERNEL = next(k for k in TARGET.find_kernels(toy_target.EXAMPLE) if k.name == "kernel_sum")
FAST = "def kernel_sum(xs):\n    return sum(xs)"


def codes(reply: str) -> list[str]:
    return [b.code for b in code_blocks(reply)[0]]


def extract(reply: str):
    return kernel_code(reply, TARGET, KERNEL, KERNEL.text)


# --- fenced blocks ---------------------------------------------------------------------------------------


def test_blocks_are_listed_in_order():
    assert codes("The old code:\n```c\nold();\n```\nThe new code:\n```c\nnew();\n```\nDone.") == ["old();", "new();"]


def test_keeps_the_code_exactly_including_indentation_and_blank_lines():
    code = "def f(x):\n    y = x\n\n    return y"
    assert codes(f"```python\n{code}\n```") == [code]


def test_language_tags_are_accepted():
    for tag in ("python", "c", "cuda", "c++", "objective-c", "py3.11", ""):
        assert codes(f"```{tag}\nx = 1\n```") == ["x = 1"], tag


def test_info_string_after_the_language_is_ignored():
    assert codes('```python title="k.py"\nx = 1\n```') == ["x = 1"]


def test_tilde_fences_are_accepted():
    assert codes("~~~python\nx = 1\n~~~") == ["x = 1"]


def test_a_backtick_fence_inside_a_tilde_block_stays_code():
    assert codes("~~~markdown\nSee:\n```\ninner\n```\n~~~") == ["See:\n```\ninner\n```"]


def test_longer_fences_are_accepted():
    assert codes("````c\nint a;\n````") == ["int a;"]


def test_inline_backticks_are_not_a_block():
    assert codes("Use ```x = 1``` here.") == []


def test_empty_blocks_are_not_code():
    assert codes("```python\n```\n```python\n\n   \n```") == []


def test_a_block_left_open_is_reported_as_cut_off():
    blocks, cut = code_blocks("The original:\n```c\nold();\n```\nThe optimized version:\n```c\nnew_part")
    assert [b.code for b in blocks] == ["old();"] and cut


def test_a_reply_with_windows_line_endings_still_gives_its_code():
    assert codes("Here:\r\n```c\r\nint a;\r\n```\r\n") == ["int a;"]


# --- which code is the kernel ----------------------------------------------------------------------------


def test_the_block_that_defines_the_kernel_wins_over_a_later_usage_snippet():
    reply = f"```python\n{FAST}\n```\nUse it like this:\n```python\nprint(kernel_sum([1, 2]))\n```"
    assert extract(reply).code == FAST


def test_of_several_blocks_defining_the_kernel_the_last_one_is_taken():
    reply = f"Before:\n```python\n{KERNEL.text}```\nAfter:\n```python\n{FAST}\n```"
    assert extract(reply).code == FAST


def test_a_sketch_block_without_the_kernel_is_skipped():
    reply = f"Sketch:\n```python\nfor x in xs: ...\n```\nCode:\n```python\n{FAST}\n```\nThat is all."
    assert extract(reply).code == FAST


def test_unfenced_code_that_parses_is_taken():
    assert extract(FAST + "\n").code == FAST


def test_prose_around_unfenced_code_is_dropped():
    reply = f"Here is the faster kernel:\n\n{FAST}\n\nIt calls the builtin, which runs in C."
    assert extract(reply).code == FAST


def test_prose_only_says_no_code_was_found():
    found = extract("I would tile the loop by 16, then unroll it.")
    assert found.code is None and "no fenced code block" in found.error and "`kernel_sum`" in found.error


def test_blocks_without_the_kernel_say_so_with_its_name():
    found = extract("```python\ndef helper(x):\n    return x\n```")
    assert found.code is None and found.error == "none of the reply's 1 code block(s) defines `kernel_sum`"


def test_a_block_that_does_not_parse_says_where():
    found = extract("```python\ndef kernel_sum(xs):\n    return sum(xs\n```")
    assert found.code is None and "does not parse" in found.error and "line 2" in found.error


def test_a_reply_cut_off_inside_its_block_is_unusable_even_after_a_quoted_original():
    found = extract(f"Original:\n```python\n{KERNEL.text}```\nNew:\n```python\ndef kernel_sum(xs):\n    ret")
    assert found.code is None and "cut off" in found.error


def test_an_empty_reply_is_unusable():
    assert extract("").code is None


# --- edits mode: a JSON list of old/new replacements of the parent's kernel region -----------------------


def edit(reply: str):
    return edited_kernel(reply, TARGET, KERNEL, KERNEL.text)


def edits_reply(*pairs: tuple[str, str]) -> str:
    return "Two changes:\n```json\n" + json.dumps([{"old": o, "new": n} for o, n in pairs]) + "\n```\n"


def test_edits_are_applied_in_order_to_the_kernel_region():
    reply = edits_reply(("    total = 0\n    i = 0\n", ""),
                        ("    while i < len(xs):\n        total = total + xs[i]\n        i = i + 1\n    return total",
                         "    return sum(xs)"))
    assert edit(reply).code == "def kernel_sum(xs):\n    return sum(xs)\n"


def test_a_reply_without_a_json_block_is_left_to_the_whole_rewrite_extraction():
    assert edit(f"```python\n{FAST}\n```") is None


def test_an_edit_whose_old_text_is_not_in_the_kernel_is_unusable_and_says_which():
    got = edit(edits_reply(("total = 0", "total = 0.0"), ("return totl", "return sum(xs)")))
    assert got.code is None and 'the "old" text of edit 2 is not in the current code' in got.error


def test_an_edit_whose_old_text_occurs_twice_is_unusable():
    got = edit(edits_reply(("    i = ", "    j = ")))  # i = 0 and i = i + 1
    assert got.code is None and 'the "old" text of edit 1 occurs 2 times' in got.error


def test_an_edits_block_that_is_not_a_list_of_old_new_objects_is_unusable():
    for block in ('{"old": "a", "new": "b"}', "[]", '[{"old": "total = 0"}]', "[not json"):
        got = edit(f"```json\n{block}\n```")
        assert got.code is None and "edits block" in got.error, block


def test_edits_that_remove_the_kernel_definition_are_unusable():
    got = edit(edits_reply(("def kernel_sum(xs):", "def kernel_total(xs):")))
    assert got.code is None and "no longer defines `kernel_sum`" in got.error
