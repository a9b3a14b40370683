"""nki-emulator: a DMA is charged by the contiguous runs of both its sides.

A DMA descriptor moves one contiguous piece of memory to one contiguous piece of memory. The model counted
the runs of the HBM side only, so a DMA whose other side scatters element by element (an SBUF view with the
partitions on its free axis, the same view as the destination of `t[view] = nl.load(...)`, or a transposed
HBM destination of an HBM-to-HBM copy) moved at full bandwidth: the transpose of examples/nki/transpose.py
done by the DMA engines alone was correct and faster than the honest Tensor-engine transpose (red-team:
19.7 us storing from or loading into a transposed SBUF view, 10.8 us scattering HBM to HBM with a padding
load for the byte count, against the honest 26.5 us). A DMA that reorders elements pays one descriptor per
element, as nisa.dma_transpose and nl.load_transpose2d already did. Likewise a mask: the runs of a masked
DMA were the view's runs scaled by the share of elements selected, so a mask selecting every other element
of a contiguous row moved half the bytes in one descriptor (red-team: 2 * x[:, ::2] correct at 13.1 us
against the honest 16.9 us, which loads all of x). Each kernel runs through the real nki-emulator backend."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.model import OK
from support.nki_eval import evaluate_problem

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "nki"

SBUF_VIEW_STORE = '''@nki.jit
def transpose(x):
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        for j in nl.affine_range(cols // 128):
            # v[a, b] = t[b, j * 128 + a]: one element from each partition in turn
            v = t[nl.arange(128)[None, :], j * 128 + nl.arange(128)[:, None]]
            nisa.dma_copy(dst=out[j * 128:(j + 1) * 128, i * 128:(i + 1) * 128], src=v)
    return out
'''

RETARGETED_LOAD = '''@nki.jit
def transpose(x):
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    c = nl.arange(cols)[None, :]
    b = nl.arange(128)[:, None]
    for i in nl.affine_range(rows // 128):
        t = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        # t[a, jb * 128 + b] = x[i * 128 + b, jb * 128 + a]: the load lands in a view of t that scatters its rows
        t[c % 128, (c // 128) * 128 + b] = nl.load(x[i * 128:(i + 1) * 128, :])
        for jb in nl.affine_range(cols // 128):
            nl.store(out[jb * 128:(jb + 1) * 128, i * 128:(i + 1) * 128], value=t[:, jb * 128:(jb + 1) * 128])
    return out
'''

HBM_SCATTER = '''@nki.jit
def transpose(x):
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    for c in nl.affine_range(rows // 16):
        # 16 contiguous rows of x, each element written to its own place in out
        nisa.dma_copy(dst=out[nl.arange(cols)[None, :], c * 16 + nl.arange(16)[:, None]], src=x[c * 16:(c + 1) * 16, :])
    for i in nl.affine_range(rows // 128):  # a load that only makes up the required DMA bytes
        pad = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=pad, src=x[i * 128:(i + 1) * 128, :])
    return out
'''


@pytest.fixture(scope="module")
def honest_us(tmp_path_factory: pytest.TempPathFactory) -> float:
    ev = evaluate_problem(tmp_path_factory.mktemp("honest"), (EXAMPLES / "transpose.py").read_text())
    assert ev.status == OK, ev.message
    return float(ev.value)


@pytest.mark.parametrize("attack", [SBUF_VIEW_STORE, RETARGETED_LOAD, HBM_SCATTER],
                         ids=["sbuf-view-store", "retargeted-load", "hbm-scatter"])
def test_a_transpose_by_dma_access_patterns_is_no_faster_than_the_work(tmp_path: Path, honest_us: float,
                                                                       attack: str) -> None:
    # before: ok, correct at 19.7 us (sbuf-view-store, retargeted-load) and 10.8 us (hbm-scatter); the honest
    # kernel 26.5 us
    ev = evaluate_problem(tmp_path, (EXAMPLES / "transpose.py").read_text(), attack)
    assert ev.status != OK or float(ev.value) > honest_us, (ev.status, ev.value, ev.message)


EVENS = '''"""out = 2 * x[:, ::2], x (128, 4096) fp32."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def evens(x):
    out = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(2048)[None, :]
    nl.store(out, value=nl.multiply(t[i_p, 2 * i_f], 2.0))
    return out


INPUTS = {"x": ((128, 4096), "float32")}


def reference(x):
    return 2.0 * x[:, ::2]
'''

EVERY_OTHER_ELEMENT_MASK = '''@nki.jit
def evens(x):
    out = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:4096]
    t = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x, mask=(i_f % 2 == 0))
    j_p = nl.arange(128)[:, None]
    j_f = nl.arange(2048)[None, :]
    nl.store(out, value=nl.multiply(t[j_p, 2 * j_f], 2.0))
    return out
'''


def test_a_dma_masked_to_every_other_element_pays_a_descriptor_per_element(tmp_path: Path) -> None:
    honest = evaluate_problem(tmp_path, EVENS)
    assert honest.status == OK, honest.message
    # before: ok, correct at 13.1 us against the honest 16.9 us
    ev = evaluate_problem(tmp_path, EVENS, EVERY_OTHER_ELEMENT_MASK)
    assert ev.status != OK or float(ev.value) > float(honest.value), (ev.status, ev.value, ev.message)
