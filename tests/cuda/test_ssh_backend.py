"""cuda-ssh against a fake ssh/scp pair that runs everything locally, and a fake remote nvcc whose
`bench` prints a fixed result line: the test covers copying, building, running, parsing and cleanup."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from speedpatch.model import COMPILE_ERROR, INFRA_ERROR, OK, REJECTED, TIMEOUT
from speedpatch.targets.cuda.backends.ssh import CudaSshBackend
from speedpatch.targets.cuda.gpulock import gpu_lock
from support.fakehost import fake_scp, fake_ssh, script, ssh_calls

from .conftest import EXAMPLES, MATMUL, context

RESULT = {
    "status": "ok", "message": "correct on 3 seeds", "seeds": 3, "seed0": 0, "warmup": 3, "trials": 7,
    "device": {"name": "Fake GPU"}, "flush_bytes": 1,
    "baseline_ms": {"median": 2.0, "low": 1.9, "high": 2.1},
    "candidate_ms": {"median": 1.0, "low": 0.95, "high": 1.05},
    "speedup": {"median": 2.0, "low": 1.8, "high": 2.2},
    "shapes": "x" * 600,  # a result line longer than the per-line output limit: only the result file is whole
}


@pytest.fixture()
def fake_host(tmp_path: Path) -> dict:
    """settings for cuda-ssh whose ssh/scp/nvcc are local scripts; the log records every ssh command."""
    log = tmp_path / "ssh.log"
    remote = tmp_path / "remote"
    ssh, scp = fake_ssh(tmp_path, log), fake_scp(tmp_path)
    (tmp_path / "result.txt").write_text("SPEEDPATCH_RESULT " + json.dumps(RESULT) + "\n")
    # The "built program": records its arguments, prints the result and writes it to --result (last arg).
    # It reads the evaluation's secret from stdin and seals the result file with it, as the kit harness does.
    bench = script(tmp_path / "bench.template", f'echo "$@" > {tmp_path}/bench.args\nread -r nonce\n'
                                                 f'cat {tmp_path}/result.txt\n'
                                                 f'sed "s/^SPEEDPATCH_RESULT {{/SPEEDPATCH_RESULT {{\\"nonce\\":\\"$nonce\\",/" '
                                                 f'{tmp_path}/result.txt > "${{@: -1}}"\n')
    nvcc = script(tmp_path / "nvcc", 'echo "$@" > nvcc.args; ls > nvcc.files; cp nvcc.args nvcc.files ' + str(tmp_path) + '/\n'
                   'if grep -q BROKEN candidate.cu; then echo "candidate.cu(40): error: expected a ;"; exit 1; fi\n'
                   "echo \"ptxas info    : Compiling entry function '_ZN12sp_candidate13matmul_kernelEPKfS1_Pfi' for 'sm_90'\"\n"
                   "echo 'ptxas info    : Used 40 registers, used 0 barriers'\n"
                   f"cp {bench} bench\n")
    return {"settings": {"host": "gpu-test", "ssh": ssh, "scp": scp, "remote_dir": str(remote), "nvcc": nvcc,
                         "arch": "sm_90", "trials": 7, "cache_dir": str(tmp_path / "cache"),
                         "inspect": "off"},  # the local object check is tested in test_trust_ssh.py
            "log": log, "remote": remote, "dir": tmp_path}


def test_availability_needs_a_host() -> None:
    assert not CudaSshBackend().availability({}).usable
    assert "host" in CudaSshBackend().availability({}).reason


def test_evaluate_without_a_host_refuses_with_availabilitys_reason_and_contacts_nobody(
        tmp_path: Path, matmul_source: str) -> None:
    ev = CudaSshBackend().evaluate(matmul_source, context(tmp_path, settings={}))
    assert ev.status == INFRA_ERROR and ev.message == CudaSshBackend().availability({}).reason
    assert list((tmp_path / "work").iterdir()) == []


def test_availability_with_host_and_commands(fake_host: dict) -> None:
    found = CudaSshBackend().availability(fake_host["settings"])
    assert found.usable and "gpu-test" in found.reason


def test_evaluation_copies_builds_runs_and_cleans_up(fake_host: dict, matmul_source: str) -> None:
    candidate = matmul_source.replace("#define BLOCK 16", "#define BLOCK 8")
    ctx = context(fake_host["dir"], settings=fake_host["settings"], baseline=matmul_source)
    ev = CudaSshBackend().evaluate(candidate, ctx)
    assert ev.status == OK, ev.message + ev.log
    assert ev.value == 1.0 and ev.receipt["backend"] == "cuda-ssh" and ev.receipt["host"] == "gpu-test"
    assert ev.receipt["where"] == "host gpu-test" and "-arch=sm_90" in ev.receipt["flags"]
    files = (fake_host["dir"] / "nvcc.files").read_text().split()
    assert {"main.cu", "baseline.cu", "candidate.cu", "harness.cuh", "speedpatch_timing.cuh",
            "speedpatch_stats.h"} <= set(files)
    args = (fake_host["dir"] / "nvcc.args").read_text()
    assert "main.cu baseline.cu candidate.cu -o bench" in args
    assert "--trials 7" in (fake_host["dir"] / "bench.args").read_text()
    assert ev.receipt["inputs"]["shapes"] == "x" * 600  # read whole from the fetched result file
    kernel = ev.feedback["kernels"]["matmul_kernel"]  # from the remote compiler's -Xptxas -v output
    assert kernel["registers"] == 40 and kernel["occupancy"]["threads_per_block"] == 64  # BLOCK 8 x 8
    calls = ssh_calls(fake_host["log"])
    assert {host for host, _ in calls} == {"gpu-test"} and calls[-1][1].startswith("rm -rf ")
    assert list(fake_host["remote"].iterdir()) == []  # the remote build folder is gone


def test_compile_error_on_the_host_is_a_compile_error(fake_host: dict, matmul_source: str) -> None:
    broken = matmul_source.replace("float acc = 0.0f;", "float acc = 0.0f BROKEN")
    ev = CudaSshBackend().evaluate(broken, context(fake_host["dir"], settings=fake_host["settings"],
                                                   baseline=matmul_source))
    assert ev.status == COMPILE_ERROR and "expected a ;" in ev.log


def test_unreachable_host_is_an_infrastructure_error(fake_host: dict, matmul_source: str) -> None:
    settings = dict(fake_host["settings"], ssh=script(fake_host["dir"] / "down", "echo 'connection refused' >&2; exit 255\n"))
    ev = CudaSshBackend().evaluate(matmul_source, context(fake_host["dir"], settings=settings))
    assert ev.status == INFRA_ERROR and "gpu-test" in ev.message and "connection refused" in ev.log


def test_cheating_candidate_is_rejected_before_anything_is_copied(fake_host: dict, matmul_source: str) -> None:
    cheat = matmul_source.replace("matmul_kernel<<<grid, block>>>", "cudaStream_t s; cudaStreamCreate(&s);\n"
                                  "  matmul_kernel<<<grid, block, 0, s>>>")
    ev = CudaSshBackend().evaluate(cheat, context(fake_host["dir"], settings=fake_host["settings"],
                                                  baseline=matmul_source))
    assert ev.status == REJECTED and "stream" in ev.message
    assert ssh_calls(fake_host["log"]) == []


def test_harness_comes_from_the_original_file_when_no_baseline_is_given(fake_host: dict, matmul_source: str) -> None:
    tampered = matmul_source.replace("s.atol = 1e-3;", "s.atol = 10.0;")
    ev = CudaSshBackend().evaluate(tampered, context(fake_host["dir"], source_path=MATMUL,
                                                     settings=fake_host["settings"]))
    assert ev.status == REJECTED and "harness" in ev.message
    assert os.path.exists(MATMUL)


def test_gpu_lock_lets_one_timing_run_at_a_time(tmp_path: Path) -> None:
    with gpu_lock(tmp_path, "gpu-test", timeout=1) as first:
        assert first
        with gpu_lock(tmp_path, "gpu-test", timeout=0.1) as second:
            assert not second  # the same GPU is busy
        with gpu_lock(tmp_path, "other-host", timeout=0.1) as other:
            assert other  # another GPU is not
    with gpu_lock(tmp_path, "gpu-test", timeout=0.1) as again:
        assert again


def test_hanging_program_on_the_host_times_out(fake_host: dict, matmul_source: str) -> None:
    nvcc = script(fake_host["dir"] / "nvcc-hang", "printf '#!/bin/bash\\nsleep 30\\n' > bench; chmod +x bench\n")
    settings = dict(fake_host["settings"], nvcc=nvcc)
    ev = CudaSshBackend().evaluate(matmul_source, context(fake_host["dir"], settings=settings, baseline=matmul_source,
                                                          timeout=3))
    assert ev.status == TIMEOUT and "gpu-test" in ev.message


def test_kernelbench_problem_is_staged_with_the_trusted_runner(fake_host: dict) -> None:
    problem = (EXAMPLES / "kernelbench_relu.py").read_text()
    python = script(fake_host["dir"] / "python", f'ls > {fake_host["dir"]}/kb.files; echo "$@" > {fake_host["dir"]}/kb.args\n'
                                                  f'read -r nonce\nsed "s/^SPEEDPATCH_RESULT {{/SPEEDPATCH_RESULT '
                                                  f'{{\\"nonce\\":\\"$nonce\\",/" {fake_host["dir"]}/result.txt > "${{@: -1}}"\n')
    settings = dict(fake_host["settings"], python=python)
    ev = CudaSshBackend().evaluate(problem, context(fake_host["dir"], source_path=EXAMPLES / "kernelbench_relu.py",
                                                    settings=settings, baseline=problem))
    assert ev.status == OK, ev.message + ev.log
    assert {"problem.py", "candidate.py", "kernelbench_runner.py"} <= set((fake_host["dir"] / "kb.files").read_text().split())
    assert "kernelbench_runner.py --problem problem.py --candidate candidate.py --trials 7" in (
        fake_host["dir"] / "kb.args").read_text()
