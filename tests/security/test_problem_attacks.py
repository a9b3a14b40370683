"""Attacks on the problem itself, through the real optimize path: a candidate is the kernel and nothing else."""

from __future__ import annotations

from attack import EXAMPLES, run_attack


def test_a_whole_file_reply_that_shrinks_the_problem_is_not_a_speedup(tmp_path):
    cheat = (EXAMPLES / "gemmini" / "matmul_128.c").read_text().replace("#define MAT_DIM_I 128", "#define MAT_DIM_I 32")
    out = run_attack(tmp_path, "gemmini/matmul_128.c", cheat)
    out.assert_not_faster()
    out.assert_contained()
    out.assert_no_secret()
