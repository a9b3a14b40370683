"""What the shipped menus offer beyond the optimization list: a compact API listing per target that names
only what our headers / emulator provide, larger NKI and CUDA menus with a rationale per new item, and a
Gemmini in-context example that really is correct and faster."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from speedpatch.errors import ConfigError
from speedpatch.menu import load_menu
from speedpatch.model import OK
from speedpatch.targets import get_target
from speedpatch.targets.base import EvalContext

ROOT = Path(__file__).resolve().parents[2]
LISTING_BUDGET = 5000  # characters: the listing is sent with every plan prompt


@pytest.mark.parametrize("target", ["gemmini", "nki", "cuda"])
def test_the_api_listing_is_compact_one_meaning_per_line(target):
    listing = load_menu(target).api
    lines = listing.strip().splitlines()
    assert 10 <= len(lines) and len(listing) <= LISTING_BUDGET
    assert all(":" in line and line.strip() == line for line in lines)


def test_the_gemmini_listing_names_only_what_our_headers_define():
    headers = "\n".join(p.read_text() for p in (ROOT / "targets" / "gemmini" / "include").glob("*.h"))
    defined = set(re.findall(r"#define\s+(\w+)", headers)) | set(re.findall(r"\b(\w+)\s*\(", headers))
    named = set(re.findall(r"\b(gemmini_\w+|tiled_\w+|GEMMINI_\w+)", load_menu("gemmini").api))
    assert len(named) > 25
    assert sorted(named - defined) == []


def test_the_nki_listing_names_only_what_the_emulator_runs():
    from speedpatch.targets.nki.emulator import isa, language

    usable = load_menu("nki").api.split("Not available")[0]
    for module, prefix in ((language, "nl"), (isa, "nisa")):
        named = set(re.findall(prefix + r"\.(\w+)", usable))
        assert named and sorted(n for n in named if not hasattr(module, n)) == []


@pytest.mark.parametrize(("target", "at_least"), [("nki", 30), ("cuda", 35)])
def test_the_nki_and_cuda_menus_grew_and_every_new_item_carries_its_rationale(target, at_least):
    items = load_menu(target).optimizations
    assert len(items) >= at_least and len(set(items)) == len(items)
    named = [i for i in items if re.match(r"^[\w ./()-]+: ", i)]
    assert len(named) >= 15
    for item in named:
        rationale = item.split(": ", 1)[1]
        assert "\n" not in item and len(rationale.split()) >= 8, item


# menu files: api and examples keys ------------------------------------------------------------------

def workspace_menu(tmp_path, text: str) -> None:
    folder = tmp_path / ".speedpatch" / "menus"
    folder.mkdir(parents=True)
    (folder / "gemmini.toml").write_text(text)


def test_a_workspace_menu_may_replace_or_drop_the_listing_and_the_examples(tmp_path):
    workspace_menu(tmp_path, 'api = ""\nexamples = []\n')
    menu = load_menu("gemmini", tmp_path)
    assert menu.api == "" and menu.examples == []
    assert menu.optimizations == load_menu("gemmini").optimizations


def test_a_workspace_menu_may_bring_its_own_examples(tmp_path):
    workspace_menu(tmp_path, '[[examples]]\ntitle = "t"\nbefore = "int f();"\nafter = "int g();"\n')
    (example,) = load_menu("gemmini", tmp_path).examples
    assert (example.title, example.before, example.after) == ("t", "int f();", "int g();")
    assert load_menu("gemmini", tmp_path).api == load_menu("gemmini").api  # not set: the shipped one stays


@pytest.mark.parametrize(("text", "complaint"), [
    ('examples = "x"', "examples must be"),
    ('[[examples]]\ntitle = "t"\nbefore = "a"\n', r"examples\[1\] must have exactly title, before and after"),
    ('[[examples]]\ntitle = "t"\nbefore = "a"\nafter = ""\n', r"examples\[1\] must have exactly"),
    ("api = 3", "api must be a string"),
])
def test_a_bad_examples_or_api_key_is_refused_naming_the_file(tmp_path, text, complaint):
    workspace_menu(tmp_path, text)
    with pytest.raises(ConfigError, match=r"gemmini\.toml: " + complaint):
        load_menu("gemmini", tmp_path)


# the Gemmini example is real ----------------------------------------------------------------------

def example_problem(kernel: str) -> str:
    """examples/gemmini/matmul_128.c at 64x64x64 without bias (what the example's kernels assume), with
    `kernel` in place of its kernel."""
    text = (ROOT / "examples" / "gemmini" / "matmul_128.c").read_text()
    for axis in "IJK":
        text = text.replace(f"#define MAT_DIM_{axis} 128", f"#define MAT_DIM_{axis} 64")
    text = text.replace("MAT_DIM_K, true, MATMUL_ACT", "MAT_DIM_K, false, MATMUL_ACT")
    (found,) = get_target("gemmini").find_kernels(text)
    return text[: found.start] + kernel.strip() + "\n" + text[found.end:]


def before_and_after(tmp_path: Path, target_name: str, backend: str, problem: Path, source_of,
                     timeout: float) -> dict:
    """The target's menu example, each version spliced into `problem` by source_of(kernel) and evaluated."""
    target = get_target(target_name)
    (example,) = load_menu(target_name).examples
    results = {}
    for name in ("before", "after"):
        source = source_of(getattr(example, name))
        (kernel,) = target.find_kernels(source)
        ctx = EvalContext(kernel=kernel, path=str(problem), workdir=tmp_path / name, timeout=timeout, seed=5)
        ctx.workdir.mkdir()
        results[name] = target.backend(backend).evaluate(source, ctx)
    assert [r.status for r in results.values()] == [OK, OK], [r.message for r in results.values()]
    return results


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_the_gemmini_example_is_correct_before_and_after_and_after_is_faster(tmp_path):
    results = before_and_after(tmp_path, "gemmini", "gemmini-native", ROOT / "examples" / "gemmini" / "matmul_64.c",
                               example_problem, timeout=120)
    assert results["after"].value < 0.8 * results["before"].value  # 6,848 vs 22,402 modeled cycles today


# the NKI example is real -----------------------------------------------------------------------------

def test_the_nki_example_is_correct_before_and_after_and_after_is_faster(tmp_path):
    path = ROOT / "examples" / "nki" / "rmsnorm.py"
    problem = path.read_text()
    (found,) = get_target("nki").find_kernels(problem)
    results = before_and_after(tmp_path, "nki", "nki-emulator", path,
                               lambda kernel: problem[: found.start] + kernel.strip() + "\n" + problem[found.end:],
                               timeout=300)
    assert results["after"].value < 0.8 * results["before"].value  # 31.83 vs 43.89 modeled us when written
