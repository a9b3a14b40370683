"""The physics and required-work checks of an emulated NKI figure (isolation/physics.py), on their own."""

from __future__ import annotations

import numpy as np
from speedpatch.targets.nki.isolation import physics

RNG = np.random.default_rng(3)
A = RNG.standard_normal((128, 64)).astype(np.float32)
B = RNG.standard_normal((128, 256)).astype(np.float32)


class _Trace:
    def __init__(self, macs: int) -> None:
        self.macs = macs


def report(latency: float, dma_bytes: int = 10**6) -> dict:
    return {"latency_us": latency, "dma_bytes": dma_bytes, "engines": {"tensor": {"instructions": 4}}}


def test_a_zero_or_missing_latency_is_never_a_figure():
    for latency in (0.0, -1.0, None, float("nan")):
        why = physics.check_physics(report(latency), _Trace(0), 1000, 0)
        assert "never a result" in why, (latency, why)


def test_a_latency_below_the_dma_roofline_is_rejected_with_the_numbers():
    bandwidth, _ = physics.peak_rates()
    required = 4_000_000
    floor_us = required / bandwidth / 1000.0
    why = physics.check_physics(report(floor_us / 2, dma_bytes=required), _Trace(0), required, 0)
    assert "below the DMA roofline" in why and str(required) in why
    assert physics.check_physics(report(floor_us * 1.01, dma_bytes=required), _Trace(0), required, 0) == ""


def test_a_latency_below_the_tensor_engine_roofline_is_rejected():
    macs = 128 * 128 * 512 * 64
    _, ghz = physics.peak_rates()
    floor_us = macs / (128 * 128) / ghz / 1000.0
    why = physics.check_physics(report(floor_us / 3), _Trace(macs), 1000, macs)
    assert "below the Tensor engine roofline" in why and str(macs) in why


def test_fewer_dma_bytes_than_the_inputs_and_outputs_is_missing_work():
    why = physics.check_physics(report(50.0, dma_bytes=1000), _Trace(0), 4096, 0)
    assert "moved 1000 bytes" in why and "4096" in why


def test_fewer_tensor_engine_macs_than_the_reference_matmul_is_missing_work():
    why = physics.check_physics(report(500.0), _Trace(100), 1000, 128 * 64 * 256)
    assert "did 100 multiply-accumulates" in why and str(128 * 64 * 256) in why


def test_the_required_macs_of_a_matmul_shaped_reference():
    expected, macs = physics.reference_work(lambda a, b: a.T @ b, [A, B])
    assert macs == 64 * 256 * 128
    np.testing.assert_allclose(expected, A.T @ B)
    assert type(expected) is np.ndarray  # the counting wrapper never leaks into the comparison


def test_np_dot_counts_like_the_matmul_operator():
    _, macs = physics.reference_work(lambda a, b: np.dot(a.T, b), [A, B])
    assert macs == 64 * 256 * 128


def test_a_reference_that_is_not_a_bare_matmul_of_the_inputs_requires_no_tensor_work():
    # Softmax after the matmul: a kernel may legitimately skip work the reference does (causal blocks).
    _, macs = physics.reference_work(lambda a, b: np.exp(a.T @ b), [A, B])
    assert macs == 0
    _, macs = physics.reference_work(lambda a, b: a + 1.0, [A, A])
    assert macs == 0


def test_a_reference_that_concatenates_slices_of_its_inputs_runs():
    # Rotary embeddings' reference: np.concatenate / np.stack of input slices held in a list. The counting
    # wrapper must unwrap them there too (it used to dispatch back to itself until RecursionError).
    def rotate_half(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        h = a.shape[1] // 2
        return np.stack([np.concatenate([-a[:, h:], a[:, :h]], axis=1), b[:, :2 * h]])

    expected, macs = physics.reference_work(rotate_half, [A, B])
    h = A.shape[1] // 2
    np.testing.assert_array_equal(expected[0], np.concatenate([-A[:, h:], A[:, :h]], axis=1))
    assert type(expected) is np.ndarray and macs == 0


def hbm_copy_report(latency: float, dma_bytes: int, hbm_to_hbm: int) -> dict:
    return {**report(latency, dma_bytes), "dma_hbm_to_hbm_bytes": hbm_to_hbm}


def test_an_hbm_to_hbm_dma_counts_for_the_input_it_reads_and_the_output_it_writes():
    # nisa.dma_copy(dst=out, src=a), the AWS example: 1024 bytes moved once serve a 1024-byte input and output
    assert physics.check_physics(hbm_copy_report(50.0, 1024, 1024), _Trace(0), 2048, 0, shared_bytes=1024) == ""


def test_hbm_to_hbm_bytes_count_twice_only_up_to_the_smaller_of_inputs_and_outputs():
    # 3072 input bytes and 1024 output bytes: any honest kernel moves at least 3072; HBM-to-HBM traffic beyond
    # the 1024 an output can take (say between scratch tensors) buys nothing
    why = physics.check_physics(hbm_copy_report(50.0, 3000, 3000), _Trace(0), 4096, 0, shared_bytes=1024)
    assert "moved 3000 bytes by DMA (1024 of them HBM to HBM, counted twice)" in why


def test_the_dma_roofline_of_a_kernel_copying_hbm_to_hbm_is_the_larger_side_not_the_sum():
    bandwidth, _ = physics.peak_rates()
    side = 4_000_000
    floor_us = side / bandwidth / 1000.0
    ok = hbm_copy_report(floor_us * 1.01, side, side)
    assert physics.check_physics(ok, _Trace(0), 2 * side, 0, shared_bytes=side) == ""
    below = hbm_copy_report(floor_us * 0.99, side, side)
    assert "below the DMA roofline" in physics.check_physics(below, _Trace(0), 2 * side, 0, shared_bytes=side)
