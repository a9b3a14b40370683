"""The target registry loads only the targets a command needs."""

from __future__ import annotations

import subprocess
import sys

import pytest
from speedpatch import targets
from speedpatch.errors import NotFoundError


def loaded_after(code: str) -> set[str]:
    probe = f"import sys\nfrom speedpatch import targets\n{code}\nprint(','.join(sorted(m for m in sys.modules if m.startswith('speedpatch.targets.') and m.count('.') == 2)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    return set(filter(None, out.stdout.strip().split(",")))


def test_a_gemmini_file_loads_only_the_gemmini_target():
    assert "speedpatch.targets.nki" not in loaded_after("targets.targets_for_path('kernel.c')")
    assert "speedpatch.targets.cuda" not in loaded_after("targets.get_target('gemmini')")


def test_a_python_file_loads_both_targets_that_read_python():
    found = loaded_after("targets.targets_for_path('kernel.py')")
    assert {"speedpatch.targets.nki", "speedpatch.targets.cuda"} <= found


@pytest.mark.parametrize("name", sorted(targets.BUILTIN))
def test_the_registry_table_states_the_extensions_each_target_declares(name):
    assert set(targets.BUILTIN[name][1]) == set(targets.get_target(name).extensions)


def test_an_unknown_target_lists_the_known_ones():
    with pytest.raises(KeyError, match="known targets: .*cuda.*gemmini.*nki"):
        targets.get_target("hip")


def test_an_unknown_target_or_backend_is_a_user_error_worded_without_quotes():
    with pytest.raises(NotFoundError) as target:
        targets.get_target("hip")
    with pytest.raises(NotFoundError) as backend:
        targets.get_target("gemmini").backend("gemmini-nope")
    assert str(target.value).startswith("unknown target 'hip'")
    assert str(backend.value).startswith("unknown backend 'gemmini-nope' for target gemmini; known: gemmini-native")
