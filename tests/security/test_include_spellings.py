"""A candidate may not read a file through the preprocessor, however it spells the directive: the compiler
quotes a file it cannot parse in its error, and that log goes back to the LLM in the repair prompt. Each
spelling below is first shown to be a real file read (gcc's preprocessor copies the file's text into its
output), then shown to be refused by the target's boundary check. Red-team: all five passed the CUDA check
(a line reader that took a string's `/*` for a comment and knew only `#` after spaces and tabs, and a
backslash right before LF), the two splices the Gemmini check too."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from speedpatch.engine import boundary
from speedpatch.targets import get_target
from support.replies import problem_of

ROOT = Path(__file__).resolve().parents[2]
CUDA_EXAMPLE = ROOT / "examples" / "cuda" / "matmul.cu"
GEMMINI_EXAMPLE = ROOT / "examples" / "gemmini" / "matmul_128.c"
CUDA_MARKER = "// speedpatch: solution\n"

# name -> (code around `{f}`, the file's path; the languages where gcc reads it)
SPELLINGS = {
    "a string holding /* before it": ('const char *a = "/*";\n#include "{f}"\nconst char *b = "*/";\n', ("c", "c++")),
    "a form feed before the #": ('\f#include "{f}"\n', ("c", "c++")),
    "a blank between the splice and the line end": ('#inc\\ \nlude "{f}"\n', ("c", "c++")),
    "a C++ digit separator before a quote": ("int x = 1'0; int y = '/*';\n#include \"{f}\"\n// */\n", ("c++",)),
    "a CRLF splice": ('#inc\\\r\nlude "{f}"\r\n', ("c", "c++")),
}


def gcc_reads(code: str, language: str, secret: Path) -> bool:
    std = "-std=c++17" if language == "c++" else "-std=gnu11"
    out = subprocess.run(["gcc", "-x", language, std, "-E", "-P", "-"], input=code.replace("{f}", str(secret)),
                         capture_output=True, text=True)
    return "speedpatch_secret_text" in out.stdout


@pytest.fixture(scope="module")
def secret(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("secret") / "secret.h"
    path.write_text("speedpatch_secret_text\n")
    return path


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc's preprocessor to show the spelling is real")
@pytest.mark.parametrize("name", list(SPELLINGS))
def test_a_file_read_in_any_spelling_the_preprocessor_accepts_is_refused_in_a_cuda_solution(secret, name) -> None:
    code, languages = SPELLINGS[name]
    assert gcc_reads(code, "c++", secret), "the spelling no longer reads a file: the test shows nothing"
    problem = problem_of(CUDA_EXAMPLE, "launch")
    candidate = problem.source.replace(CUDA_MARKER, CUDA_MARKER + code.replace("{f}", str(secret)))
    assert any("a path outside the include folders" in m
               for m in boundary.check(get_target("cuda"), problem, candidate)), name


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc's preprocessor to show the spelling is real")
@pytest.mark.parametrize("name", [n for n, (_, languages) in SPELLINGS.items() if "c" in languages])
def test_a_file_read_in_any_spelling_the_preprocessor_accepts_is_refused_in_a_gemmini_kernel(secret, name) -> None:
    code, _ = SPELLINGS[name]
    assert gcc_reads(code, "c", secret), "the spelling no longer reads a file: the test shows nothing"
    problem = problem_of(GEMMINI_EXAMPLE, "matmul_kernel")
    body = problem.kernel.text.index("{") + 1
    kernel = problem.kernel.text[:body] + "\n" + code.replace("{f}", str(secret)) + problem.kernel.text[body:]
    candidate = problem.source.replace(problem.kernel.text, kernel)
    assert any("includes come from the problem file" in m
               for m in boundary.check(get_target("gemmini"), problem, candidate)), name


def test_a_line_that_only_looks_like_an_include_inside_a_comment_or_string_is_not_a_file_read() -> None:
    from speedpatch.targets import cfamily

    code = '/* #include "x.h" */\nconst char *s = "#include <y.h>";\n// #include "z.h"\n'
    assert cfamily.file_reads(code) == []


def test_embed_reads_a_file_and_is_refused_like_include() -> None:
    problem = problem_of(CUDA_EXAMPLE, "launch")
    candidate = problem.source.replace(CUDA_MARKER, CUDA_MARKER + '#embed "/etc/passwd"\n')
    assert any("`#embed`" in m for m in boundary.check(get_target("cuda"), problem, candidate))


def test_a_line_directive_spelled_across_a_splice_with_a_blank_is_refused_in_a_gemmini_kernel() -> None:
    from speedpatch.targets.gemmini import build

    assert build.region_directive_problems('#li\\ \nne 7 "elsewhere.c"\n')
