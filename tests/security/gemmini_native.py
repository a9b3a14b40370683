"""What the gemmini-native red-team tests share: the example problem, its honest kernel (the library call), one
native evaluation of a kernel region, and re-verification of a winner on gemmini-spike."""

from __future__ import annotations

from pathlib import Path

from speedpatch.engine.reverify import Reverifier, reverify
from speedpatch.model import Candidate, Evaluation
from speedpatch.targets.base import EvalContext, Target

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "gemmini" / "matmul_128.c"
SIGNATURE = "void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C)"
LIBRARY_CALL = ("tiled_matmul_auto(MAT_DIM_I, MAT_DIM_J, MAT_DIM_K, A, B, bias, C, MAT_DIM_K, MAT_DIM_J, MAT_DIM_J, "
                "MAT_DIM_J, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, 1, MATMUL_ACT, MATMUL_SCALE, 0, true, false, "
                "false, false, false, 0, WS);")
HONEST = f"{SIGNATURE} {{\n  {LIBRARY_CALL}\n}}"


def evaluate(target: Target, work: Path, region: str, backend: str = "gemmini-native",
             timeout: float = 120) -> Evaluation:
    """The example with `region` as its kernel, evaluated on `backend` in `work` (created here)."""
    original = EXAMPLE.read_text()
    (kernel,) = target.find_kernels(original)
    work.mkdir()
    ctx = EvalContext(kernel=kernel, path=str(EXAMPLE), workdir=work, timeout=timeout, baseline_source=original,
                      seed=1)
    return target.backend(backend).evaluate(target.splice(original, kernel, region), ctx)


def reverified_on_spike(target: Target, tmp_path: Path, honest: Evaluation, region: str,
                        evaluation: Evaluation) -> tuple[Candidate | None, list[Candidate]]:
    """A search whose winner is `region` (natively `evaluation`) over the honest kernel, re-verified on
    gemmini-spike as the engine does: (the best after re-verification, the candidates it changed)."""
    original = EXAMPLE.read_text()
    (kernel,) = target.find_kernels(original)

    def on_spike(source: str) -> Evaluation:
        work = tmp_path / f"spike{len(list(tmp_path.glob('spike*')))}"
        work.mkdir()
        ctx = EvalContext(kernel=kernel, path=str(EXAMPLE), workdir=work, timeout=240, baseline_source=original)
        return target.backend("gemmini-spike").evaluate(source, ctx)

    def candidate(name: str, text: str, ev: Evaluation) -> Candidate:
        return Candidate(id=name, run_id="r", parent_id=None, iteration=1, plan=name,
                         source=target.splice(original, kernel, text), source_hash=name, evaluation=ev)

    outcome, changed = reverify(Reverifier("gemmini-spike", on_spike), candidate("base", kernel.text, honest),
                                [candidate("winner", region, evaluation)], lambda: False)
    return outcome.best, changed
