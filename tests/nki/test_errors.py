"""Bad kernels become clear evaluation errors that name the kernel's source line."""

from __future__ import annotations

import pytest
from speedpatch.model import COMPILE_ERROR, INCORRECT, REJECTED, RUNTIME_ERROR, TIMEOUT

HEADER = """import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
"""
HARNESS = """    return out


INPUTS = {"x": ((256, 512), "float32")}


def reference(x):
    return x * 2.0
"""
BODY_LINE = 10  # the first body line after HEADER


def kernel_file(*body: str) -> str:
    return HEADER + "".join(f"    {line}\n" for line in body) + HARNESS


CASES = {
    "partition dim over 128": (
        ["t = nl.load(x[0:256, :])"], "partition dimension", RUNTIME_ERROR, BODY_LINE),
    "out of bounds tile access": (
        ["t = nl.load(x[0:128, 256:768])"], "out-of-bounds", RUNTIME_ERROR, BODY_LINE),
    "moving free size over 512": (
        ["a = nl.load(x[0:128, 0:128])", "b = nl.load(x[0:128, 0:512])", "c = nl.load(x[128:256, 0:512])",
         "nl.store(out[0:128, 0:1024], value=nisa.nc_matmul(a, nl.ndarray((128, 1024), nl.float32)))"],
        "moving free size 1024", RUNTIME_ERROR, BODY_LINE + 3),
    "psum overflow": (  # nine banks live at once: the first is used again after the ninth took its bank
        ["banks = [nl.zeros((128, 512), nl.float32, buffer=nl.psum) for _ in range(9)]",
         "copies = [nl.copy(b) for b in banks]"],
        "PSUM overflow", RUNTIME_ERROR, BODY_LINE + 1),
    "psum tile bigger than a bank": (
        ["acc = nl.zeros((128, 1024), nl.float32, buffer=nl.psum)"], "one PSUM bank", RUNTIME_ERROR, BODY_LINE),
    "matmul dtype mismatch": (
        ["a = nl.load(x[0:128, 0:128], dtype=nl.bfloat16)", "b = nl.load(x[0:128, 0:512])", "r = nisa.nc_matmul(a, b)"],
        "same dtype", RUNTIME_ERROR, BODY_LINE + 2),
    "compute on an HBM operand": (["t = nl.exp(x)"], "is in HBM", RUNTIME_ERROR, BODY_LINE),
    "DMA from PSUM": (
        ["acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)", "nisa.dma_copy(dst=out[0:128, :], src=acc)"],
        "DMA cannot access PSUM", RUNTIME_ERROR, BODY_LINE + 1),
    "unavailable import": (["import torch"], "torch", RUNTIME_ERROR, BODY_LINE),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_constraint_violation_is_an_error_naming_the_line(case, evaluate):
    body, needle, status, line = CASES[case]
    ev = evaluate(kernel_file(*body))
    assert ev.status == status, ev.message
    assert needle in ev.message
    assert f"line {line}:" in ev.message


def test_syntax_error_is_a_compile_error_with_its_line(evaluate):
    ev = evaluate(kernel_file("t = nl.load(x[0:128, :])", "y = t +"))
    assert ev.status == COMPILE_ERROR
    assert f"line {BODY_LINE + 1}" in ev.message


def test_module_level_import_of_a_missing_package_is_a_compile_error(evaluate):
    ev = evaluate("import no_such_package_xyz\n" + kernel_file("pass"))
    assert ev.status == COMPILE_ERROR
    assert "line 1:" in ev.message and "no_such_package_xyz" in ev.message


def test_infinite_loop_times_out_and_names_the_line(evaluate):
    # 8 s: the trusted process and the kernel's own sandboxed process both start within it
    ev = evaluate(kernel_file("while True:", "    pass"), timeout=8)
    assert ev.status == TIMEOUT
    assert f"line {BODY_LINE + 1}" in ev.message or f"line {BODY_LINE}" in ev.message


def test_wrong_result_is_incorrect_with_the_first_mismatch(evaluate):
    body = ["for i in nl.affine_range(2):",
            "    t = nl.load(x[i * 128:(i + 1) * 128, :])",
            "    nl.store(out[i * 128:(i + 1) * 128, :], value=nl.multiply(t, 3.0))"]
    ev = evaluate(kernel_file(*body))
    assert ev.status == INCORRECT
    assert "differs at" in ev.message and "input set 1 (seed " in ev.message


def test_constant_output_is_rejected_even_within_tolerance(evaluate):
    source = kernel_file(
        "for i in nl.affine_range(2):",
        "    nl.store(out[i * 128:(i + 1) * 128, :], value=nl.zeros((128, 512), nl.float32))",
    ).replace("return x * 2.0", "return x * 1e-6").replace('INPUTS = {', 'TOLERANCE = {"atol": 1e-3}\nINPUTS = {')
    ev = evaluate(source)
    assert ev.status in (INCORRECT, RUNTIME_ERROR)
    assert "constant" in ev.message or "~0" in ev.message


def test_uninitialised_output_is_incorrect_with_nan(evaluate):
    ev = evaluate(kernel_file("pass"))
    assert ev.status == INCORRECT
    assert "NaN" in ev.message


def test_result_forged_by_candidate_output_is_ignored(evaluate):
    forged = 'print("SPEEDPATCH-RESULT 0 0 {\\"status\\": \\"ok\\", \\"value\\": 0.001}")'
    ev = evaluate(kernel_file(forged, "pass"))
    assert ev.status == INCORRECT


def test_missing_kernel_is_rejected(target, evaluate, tmp_path):
    from speedpatch.targets.base import EvalContext

    source = kernel_file("pass")
    kernel = target.find_kernels(source)[0]
    ctx = EvalContext(kernel=kernel, path=str(tmp_path / "k.py"), workdir=tmp_path)
    ev = target.backend("nki-emulator").evaluate(source.replace("def kernel(", "def other("), ctx)
    assert ev.status == REJECTED


LEGACY = '''import numpy as np
from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.baremetal(save_neff_name="file.neff")
def scaled_exp(in_tensor, out_tensor):
    i_p, i_f = nl.mgrid[0:128, 0:256]
    for t in nl.affine_range(in_tensor.shape[0] // 128):
        tile = nl.load(in_tensor[t * 128 + i_p, i_f])
        result = nisa.activation(op=nl.exp, data=tile, scale=0.5)
        nl.store(out_tensor[t * 128 + i_p, i_f], value=result)


INPUTS = {"in_tensor": ((256, 256), "float32")}
OUTPUTS = {"out_tensor": ((256, 256), "float32")}


def reference(in_tensor):
    return np.exp(0.5 * in_tensor)
'''


def test_legacy_neuronxcc_kernel_with_output_arguments_runs_in_the_emulator(evaluate):
    from speedpatch.model import OK

    ev = evaluate(LEGACY)
    assert ev.status == OK, ev.message
    assert ev.feedback["engines"]["scalar"]["instructions"] == 2

