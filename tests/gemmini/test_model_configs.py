"""Another hardware configuration is another gemmini_params.h, not a code change."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from speedpatch.targets.gemmini.build import INCLUDE_DIR, model_key
from test_model_isa import (
    ACC,
    COMPUTE_PRELOADED,
    DRIVER_SOURCE,
    FULL,
    GARBAGE,
    MVIN,
    MVOUT,
    PRELOAD,
    WS,
    Script,
    config_ex,
    config_ld,
    config_st,
    loop_ws,
    operand,
    parse_reads,
)


def _params_dir(tmp_path: Path, dim: int, acc_rows: int = 1024) -> Path:
    text = (INCLUDE_DIR / "gemmini_params.h").read_text()
    assert "#define DIM 16 " in text and "#define ACC_ROWS 1024 " in text
    text = text.replace("#define DIM 16 ", f"#define DIM {dim} ").replace("#define ACC_ROWS 1024 ", f"#define ACC_ROWS {acc_rows} ")
    d = tmp_path / f"dim{dim}"
    d.mkdir()
    (d / "gemmini_params.h").write_text(text)
    return d


def test_a_different_params_file_gives_a_different_model_build(tmp_path):
    assert model_key(_params_dir(tmp_path, 8)) != model_key(None)


@pytest.fixture
def dim8_driver(gemmini_c, tmp_path):
    return gemmini_c(DRIVER_SOURCE, params_dir=_params_dir(tmp_path, 8, acc_rows=512))


def test_dim8_config_computes_an_8x8_matmul_and_reports_its_sizes(dim8_driver):
    dim = 8
    rng = np.random.default_rng(8)
    A, B = (rng.integers(-128, 128, (dim, dim), dtype=np.int8) for _ in range(2))
    s = Script()
    pa, pb, out = s.put(A), s.put(B), s.alloc(dim * dim * 4)
    s.issue(config_ex(WS))
    s.issue(config_ld(dim, block_stride=dim))
    s.issue(config_st(dim * 4))
    s.rocc(MVIN, pa, operand(0, dim, dim))
    s.rocc(MVIN, pb, operand(dim, dim, dim))
    s.rocc(PRELOAD, operand(dim, dim, dim), operand(ACC | 0, dim, dim))
    s.rocc(COMPUTE_PRELOADED, operand(0, dim, dim), operand(GARBAGE, dim, dim))
    s.rocc(MVOUT, out, operand(ACC | FULL | 0, dim, dim))
    s.read(out, dim * dim * 4)
    res = dim8_driver(s.text())
    assert res.returncode == 0, res.output
    got = np.frombuffer(parse_reads(res.output)[0], np.int32).reshape(dim, dim)
    assert (got == A.astype(np.int64) @ B).all()
    assert res.stats["dim"] == 8
    assert res.stats["spad_kib_total"] == 4 * 4096 * 8 / 1024
    assert res.stats["acc_kib_total"] == 512 * 8 * 4 / 1024
    assert res.stats["macs"] == dim**3


def test_dim8_config_runs_loop_ws_in_8x8_tiles(dim8_driver):
    dim, n = 8, 20
    rng = np.random.default_rng(9)
    A, B = (rng.integers(-128, 128, (n, n), dtype=np.int8) for _ in range(2))
    s = Script()
    pa, pb, pc = s.put(A), s.put(B), s.alloc(n * n * 4)
    s.issue(config_ex(WS))
    s.issue(config_ld(n, slot=0, block_stride=dim))
    s.issue(config_ld(n, slot=1, block_stride=dim))
    s.issue(config_st(n * 4))
    t, pad = (n + dim - 1) // dim, ((n + dim - 1) // dim) * dim - n
    loop_ws(s, t, t, t, pad, pad, pad, pa, pb, 0, pc, n, n, 0, n, full_C=1)
    s.fence()
    s.read(pc, n * n * 4)
    res = dim8_driver(s.text())
    assert res.returncode == 0, res.output
    got = np.frombuffer(parse_reads(res.output)[0], np.int32).reshape(n, n)
    assert (got == A.astype(np.int64) @ B).all()
    assert res.stats["executed_instructions"]["PRELOAD"] == t**3


def test_dim8_config_rejects_a_16_row_operand(dim8_driver):
    s = Script()
    s.rocc(COMPUTE_PRELOADED, operand(0, 16, 16), operand(GARBAGE, 8, 8))
    res = dim8_driver(s.text())
    assert res.returncode == 3
    assert "exceeds the 8x8 array" in res.output
