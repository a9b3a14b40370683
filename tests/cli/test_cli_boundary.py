"""The trust boundary through the real `speedpatch optimize` on a real Gemmini example (gemmini-native),
with hostile replies from a scripted OpenAI-compatible endpoint: a reply contributes its kernel only."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from speedpatch.store import Store
from support.fake_openai import FakeOpenAI, phase_of

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gemmini" / "matmul_128.c"
SOURCE = EXAMPLE.read_text()
KERNEL = SOURCE[SOURCE.index("void matmul_kernel("): SOURCE.index("int main(void)")].rstrip()
# A schedule the search itself finds for this problem (LOOP_WS per 4x8x8-block tile, alternating halves).
FASTER = """#define SP_HALF(tile) (((tile) & 1) ? 2 : 1)

void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st((MAT_DIM_J) * sizeof(elem_t), MATMUL_ACT, MATMUL_SCALE);
  gemmini_extended3_config_ld((MAT_DIM_K) * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, 0);
  gemmini_extended3_config_ld((MAT_DIM_J) * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, 1);
  gemmini_extended3_config_ld(0, MVIN_SCALE_IDENTITY, false, 2);
  unsigned tile = 0;
  for (size_t i0 = 0; i0 < 8; i0 += 4, tile++) {
    const int half = SP_HALF(tile);
    const elem_t *a = A + i0 * DIM * MAT_DIM_K;
    const elem_t *b = tile >= 2 ? NULL : B;
    gemmini_loop_ws(4, 8, 8, 0, 0, 0, a, b, bias, NULL, MAT_DIM_K, MAT_DIM_J, 0, MAT_DIM_J, false,
                    false, false, false, true, MATMUL_ACT, half, half, false);
    for (size_t i = 0; i < 4; i++)
      for (size_t j = 0; j < 8; j += 4)
        gemmini_extended_mvout(C + (i0 + i) * DIM * MAT_DIM_J + j * DIM,
                               GEMMINI_ACC_ADDR | (uint32_t)((i * 8 + j) * DIM), 4 * DIM, DIM);
  }
}"""

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gemmini-native needs gcc")


def optimize(tmp_path: Path, code_reply: str, *args: str) -> dict:
    shutil.copy(EXAMPLE, tmp_path / EXAMPLE.name)

    def script(request: dict) -> str:
        return "Rewrite the kernel." if phase_of(request) == "plan" else code_reply

    env = {k: v for k, v in os.environ.items() if k not in ("SPEEDPATCH_API_KEY", "OPENAI_API_KEY")}
    with FakeOpenAI(script) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "speedpatch.cli.main", "optimize", EXAMPLE.name, "-B", "1", "-N", "1", "-K", "1",
             "--model", "m", "--base-url", server.base_url, "--json", *args],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def fenced(code: str) -> str:
    return f"Here is the complete file:\n```c\n{code}\n```\n"


def test_a_whole_file_reply_that_shrinks_the_problem_reports_no_speedup(tmp_path):
    data = optimize(tmp_path, fenced(SOURCE.replace("#define MAT_DIM_I 128", "#define MAT_DIM_I 32")), "-T", "1")
    assert data["best"]["value"] == data["baseline"]["value"]
    for cand in Store(tmp_path).candidates(data["run_id"]):
        assert cand.source.count("#define MAT_DIM_I") == 1 and "#define MAT_DIM_I 128" in cand.source


def test_a_kernel_that_redefines_a_problem_constant_is_rejected_naming_it(tmp_path):
    body = KERNEL.replace("{\n", "{\n#undef MAT_DIM_I\n#define MAT_DIM_I 32\n", 1)
    data = optimize(tmp_path, fenced(body), "-T", "1")
    children = [c for c in Store(tmp_path).candidates(data["run_id"]) if c.iteration == 1]
    assert children and all(c.evaluation.status == "rejected" for c in children)
    assert "redefines MAT_DIM_I" in children[0].evaluation.message
    assert data["best"]["value"] == data["baseline"]["value"]


def test_apply_writes_only_the_kernel_region_and_defines_do_not_pile_up(tmp_path):
    hostile = SOURCE.replace("#define MAT_DIM_I 128", "#define MAT_DIM_I 32").replace(KERNEL, FASTER)
    data = optimize(tmp_path, fenced(hostile), "-T", "2")
    assert data["speedup"] > 1
    path = tmp_path / EXAMPLE.name
    applied = subprocess.run([sys.executable, "-m", "speedpatch.cli.main", "apply", data["run_id"]], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
    assert applied.returncode == 0, applied.stderr
    assert path.read_text() == SOURCE.replace(KERNEL, FASTER)
