"""The CUDA object cache stays bounded: least recently used objects go first, with what belongs to them."""

from __future__ import annotations

import os
from pathlib import Path

from speedpatch.targets.cuda import localbuild


def _entry(cache: Path, stem: str, when: float) -> None:
    """A cached object as _compile_object leaves it: object, compiler output and dependency list."""
    for suffix in (".o", ".log", ".deps"):
        path = cache / f"{stem}{suffix}"
        path.write_text(stem)
        os.utime(path, (when, when))


def test_objects_beyond_the_bound_go_least_recently_used_first(tmp_path: Path) -> None:
    for i in range(5):
        _entry(tmp_path, f"obj{i}", 1_000_000 + i)
    assert localbuild.prune(tmp_path, keep=3) == 2
    assert sorted(p.name for p in tmp_path.glob("*.o")) == ["obj2.o", "obj3.o", "obj4.o"]
    # their compiler output and dependency lists go with them; the kept ones' stay
    assert sorted(p.name for p in tmp_path.glob("*.log")) == ["obj2.log", "obj3.log", "obj4.log"]
    assert sorted(p.name for p in tmp_path.glob("*.deps")) == ["obj2.deps", "obj3.deps", "obj4.deps"]


def test_a_cache_within_the_bound_is_left_alone(tmp_path: Path) -> None:
    for i in range(3):
        _entry(tmp_path, f"obj{i}", 1_000_000 + i)
    assert localbuild.prune(tmp_path, keep=3) == 0
    assert len(list(tmp_path.iterdir())) == 9


def test_an_object_used_again_outlives_newer_unused_ones(tmp_path: Path) -> None:
    for i in range(4):
        _entry(tmp_path, f"obj{i}", 1_000_000 + i)
    localbuild._touch(tmp_path / "obj0.o", tmp_path / "obj0.log", tmp_path / "obj0.deps")  # a cache hit
    localbuild.prune(tmp_path, keep=2)
    assert sorted(p.name for p in tmp_path.glob("*.o")) == ["obj0.o", "obj3.o"]

