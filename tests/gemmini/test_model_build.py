"""The native build driver: cached model archive, instrumented user compile, run with statistics."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from speedpatch.targets.gemmini.build import build_native, model_archive, read_stats, run_native

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


@pytest.mark.slow
def test_the_model_archive_is_built_once_then_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first, path = model_archive()
    assert path is not None and path.is_file(), first.output
    assert path.is_relative_to(tmp_path / "cache" / "speedpatch")
    mtime = path.stat().st_mtime_ns
    again, path2 = model_archive()
    assert path2 == path and path.stat().st_mtime_ns == mtime
    assert "cached" in again.output


@pytest.mark.slow
def test_concurrent_builds_publish_one_complete_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    results: list[Path | None] = []
    threads = [threading.Thread(target=lambda: results.append(model_archive()[1])) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2 and results[0] == results[1] and results[0] is not None
    leftovers = [p.name for p in results[0].parent.iterdir() if p.name != "libgemmini_model.a"]
    assert leftovers == []  # temporary build directories are cleaned up


def test_a_compile_error_gives_the_compiler_output_and_no_executable(tmp_path):
    src = tmp_path / "bad.c"
    src.write_text("int main(void) { return undefined_name; }\n")
    res, exe = build_native(src, tmp_path / "w")
    assert exe is None
    assert res.returncode not in (0, None)
    assert "undefined_name" in res.output


NATIVE_PROBE = r"""
#include <stdio.h>
#include "xcustom.h"
int main(void) {
#if SPEEDPATCH_NATIVE == 1
  puts("native build");
#endif
  gemmini_model_fence();
  return 5;
}
"""


def test_native_builds_define_speedpatch_native_and_charge_host_blocks(tmp_path):
    src = tmp_path / "probe.c"
    src.write_text(NATIVE_PROBE)
    res, exe = build_native(src, tmp_path / "w")
    assert exe is not None, res.output
    stats_path = tmp_path / "stats.json"
    run = run_native(exe, tmp_path / "w", timeout=30, stats_path=stats_path)
    assert run.returncode == 5  # the program's own exit status comes through
    assert "native build" in run.output
    stats = read_stats(stats_path)
    assert stats is not None and stats["host_blocks"] >= 1 and stats["fences"] == 1


def test_read_stats_of_a_missing_file_is_none(tmp_path):
    assert read_stats(tmp_path / "nothing.json") is None


def test_relative_source_and_work_paths_are_accepted(tmp_path, monkeypatch):
    (tmp_path / "rel.c").write_text('#include "xcustom.h"\nint main(void) { gemmini_model_fence(); return 0; }\n')
    monkeypatch.chdir(tmp_path)
    res, exe = build_native(Path("rel.c"), Path("work"))
    assert exe is not None, res.output
    assert run_native(exe, Path("work"), timeout=30).returncode == 0
