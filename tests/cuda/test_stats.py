"""The host-side statistics and checks of the harness kit (speedpatch_stats.h), compiled with g++ and run,
and the KernelBench runner's copy of the same statistic."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from speedpatch.targets.cuda import kernelbench_runner
from speedpatch.targets.cuda.build import INCLUDE_DIR

pytestmark = pytest.mark.slow  # one g++ build (a few seconds) shared by the module

DRIVER = r"""
#include "speedpatch_stats.h"
#include <cstdio>
using namespace spd;
int main() {
  std::vector<double> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);  // 1..100, unsorted
  Summary s = summarize(hundred);
  Summary small = summarize({3.0, 1.0, 2.0});
  Summary even = summarize({4.0, 1.0, 3.0, 2.0});
  float want[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  float close[4] = {1.00001f, 2.0f, 3.0f, 4.0f};
  float off[4] = {1.0f, 2.5f, 3.0f, NAN};
  float constant[5] = {0.5f, 0.5f, 0.50001f, 0.5f, 0.49999f};
  float tiny[3] = {1e-6f, -1e-6f, 2e-6f};
  float a[4], b[4], c[4];
  fill_uniform(a, 4, 7, -1, 1);
  fill_uniform(b, 4, 7, -1, 1);
  fill_uniform(c, 4, 8, -1, 1);
  Check ok = compare(close, want, 4, 1e-4, 1e-4);
  Check bad = compare(off, want, 4, 1e-4, 1e-4);
  std::printf("{\"hundred\":%s,\"small\":%s,\"even\":%s,", json_summary(s).c_str(), json_summary(small).c_str(),
              json_summary(even).c_str());
  std::printf("\"ok\":%d,\"bad\":%d,\"bad_count\":%zu,\"first_bad\":%zu,", ok.ok, bad.ok, bad.mismatches, bad.first_bad);
  std::printf("\"degenerate_constant\":%d,\"degenerate_tiny\":%d,\"degenerate_ramp\":%d,",
              is_degenerate(constant, 5, 1e-4, 1e-4), is_degenerate(tiny, 3, 1e-4, 1e-4), is_degenerate(want, 4, 1e-4, 1e-4));
  std::printf("\"same_seed_same_data\":%d,\"other_seed_differs\":%d,\"in_range\":%d,",
              a[0] == b[0] && a[3] == b[3], a[0] != c[0], a[0] >= -1 && a[0] < 1);
  std::printf("\"escaped\":\"%s\"}\n", json_escape("a\"b\\c\nd").c_str());
}
"""


@pytest.fixture(scope="module")
def stats(gxx: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp: Path = tmp_path_factory.mktemp("stats")
    (tmp / "driver.cc").write_text(DRIVER)
    subprocess.run([gxx, "-std=c++17", "-O1", f"-I{INCLUDE_DIR}", "driver.cc", "-o", "driver"], cwd=tmp, check=True)
    out = subprocess.run([str(tmp / "driver")], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_median_ci_of_100_samples_uses_the_40th_and_61st_order_statistics(stats: dict) -> None:
    s = stats["hundred"]
    assert s["median"] == 50.5
    assert (s["low"], s["high"]) == (40, 61)
    assert 0.95 <= s["coverage"] < 0.97
    assert s["min"] == 1 and s["n"] == 100


def test_too_few_samples_give_the_whole_range_as_interval(stats: dict) -> None:
    assert stats["small"]["median"] == 2
    assert (stats["small"]["low"], stats["small"]["high"]) == (1, 3)
    assert stats["small"]["coverage"] == pytest.approx(0.75)
    assert stats["even"]["median"] == 2.5


def test_python_runner_statistic_matches_the_header(stats: dict) -> None:
    for key, samples in (("hundred", list(range(100, 0, -1))), ("small", [3, 1, 2]), ("even", [4, 1, 3, 2])):
        py = kernelbench_runner.summarize([float(x) for x in samples])
        for field in ("median", "low", "high", "min", "n"):
            assert py[field] == stats[key][field], (key, field)
        assert py["coverage"] == pytest.approx(stats[key]["coverage"], rel=1e-6)


def test_compare_accepts_within_tolerance_and_counts_mismatches_and_nan(stats: dict) -> None:
    assert stats["ok"] == 1
    assert stats["bad"] == 0 and stats["bad_count"] == 2 and stats["first_bad"] == 1


def test_a_reference_matched_by_a_constant_is_degenerate(stats: dict) -> None:
    assert stats["degenerate_constant"] == 1
    assert stats["degenerate_tiny"] == 1  # all within atol of zero: a kernel writing zeros would pass
    assert stats["degenerate_ramp"] == 0


def test_inputs_are_a_deterministic_function_of_the_seed(stats: dict) -> None:
    assert stats["same_seed_same_data"] == 1 and stats["other_seed_differs"] == 1 and stats["in_range"] == 1


def test_result_json_strings_are_escaped(stats: dict) -> None:
    assert stats["escaped"] == 'a"b\\c\nd'
