"""A kernel must be correct on the inputs the problem declares, and the examples declare the inputs their
operation really sees. A softmax that skips the row max (exp(x) straight away) is cheaper and matches on
normal(0, 1) values, but exp overflows fp32 past 88: on logits it returns inf/inf. The example problems draw
logits and attention scores wide enough that such a kernel is incorrect instead of a faster winner."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.model import INCORRECT, OK
from support.nki_eval import evaluate_problem

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "nki"

UNSTABLE_SOFTMAX = '''@nki.jit
def softmax(x):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.sequential_range(rows // 128):
        tile = nl.load(x[i * 128:(i + 1) * 128, :])
        exps = nl.exp(tile)
        inv = nl.reciprocal(nl.sum(exps, axis=1, keepdims=True))
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.multiply(exps, inv))
    return out'''


def unstable_attention(source: str) -> str:
    return source.replace("probs = nl.exp(nl.subtract(scaled, row_max))", "probs = nl.exp(scaled)")


def test_the_stable_softmax_example_is_correct_on_its_logits(tmp_path):
    ev = evaluate_problem(tmp_path, (EXAMPLES / "softmax.py").read_text())
    assert ev.status == OK, ev.message + ev.log


def test_a_softmax_that_skips_the_row_max_is_incorrect_on_the_examples_logits(tmp_path):
    ev = evaluate_problem(tmp_path, (EXAMPLES / "softmax.py").read_text(), UNSTABLE_SOFTMAX)
    assert ev.status == INCORRECT, f"{ev.status}: {ev.message}"


def test_an_attention_that_skips_the_row_max_is_incorrect_on_the_examples_scores(tmp_path):
    problem = (EXAMPLES / "attention.py").read_text()
    target_kernel = problem.split("\n\n\nINPUTS", 1)[0].split("\n\n\n", 1)[1]
    assert "nl.exp(nl.subtract(scaled, row_max))" in target_kernel
    ev = evaluate_problem(tmp_path, problem, unstable_attention(target_kernel))
    assert ev.status == INCORRECT, f"{ev.status}: {ev.message}"
