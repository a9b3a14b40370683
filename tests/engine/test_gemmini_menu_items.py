"""The Gemmini menu holds the reference's items that were missing, each with a one-line rationale."""

from __future__ import annotations

import pytest
from speedpatch.menu import load_menu

MISSING_BEFORE = ("split loops", "spread data across the scratchpad", "if-gated redundant loads",
                  "substitute faster equivalent operations")


@pytest.mark.parametrize("name", MISSING_BEFORE)
def test_the_reference_item_is_offered_with_its_rationale(name):
    items = [i for i in load_menu("gemmini").optimizations if i.startswith(name + ":")]
    assert len(items) == 1
    rationale = items[0].split(":", 1)[1].strip()
    assert len(rationale.split()) >= 8 and "\n" not in rationale
