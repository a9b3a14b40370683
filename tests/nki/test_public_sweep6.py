"""API forms of public NKI kernels the sixth sweep found refused or wrong (3 December): an HBM-to-HBM
nisa.dma_copy (the AWS example of nki.isa.dma_copy copies its input tensor straight into the output). Our own
minimal kernels, values against NumPy, through the isolated backend where the trust checks decide."""

from __future__ import annotations

from pathlib import Path

from speedpatch.model import OK
from speedpatch.targets.base import EvalContext
from speedpatch.targets.nki.target import NkiTarget


def _isolated(source: str, tmp_path: Path):
    target = NkiTarget()
    (kernel,) = target.find_kernels(source)
    ctx = EvalContext(kernel=kernel, path=str(tmp_path / "problem.py"), workdir=tmp_path, timeout=120,
                      baseline_source=source)
    return target.backend("nki-emulator").evaluate(source, ctx)


HBM_COPY = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def copy_hbm(a):
    b = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=b, src=a)
    return b


INPUTS = {"a": ((256, 1), "float32")}


def reference(a):
    return a.copy()
'''


def test_a_dma_copy_from_the_input_tensor_into_the_output_tensor_is_a_correct_kernel(tmp_path: Path):
    # one DMA reads every input byte and writes every output byte: the required work, done once (it was
    # rejected for moving 1,024 bytes where inputs plus outputs are 2,048)
    ev = _isolated(HBM_COPY, tmp_path)
    assert ev.status == OK and ev.correct, ev.message + ev.log
