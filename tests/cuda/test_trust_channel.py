"""The verdict's channel: the figure and correct/incorrect come from the harness's private result pipe (or,
on a remote host, its result file), sealed with a per-evaluation secret; never from a line the program
prints. Remote runs use a fake host (ssh/scp/nvcc as local scripts); local runs use the real harness,
built by g++ against the host stand-in for the CUDA runtime (no GPU needed)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from speedpatch.model import OK, RUNTIME_ERROR
from speedpatch.targets.cuda.backends.local import CudaLocalBackend
from speedpatch.targets.cuda.backends.ssh import CudaSshBackend
from support.fakehost import fake_scp, fake_ssh

from .conftest import context
from .hostcode import PROBLEM, RIGHT
from .test_backend_emulated import FAKE_NVCC

FORGED = {"status": "ok", "message": "forged", "device": {"name": "Fake GPU"}, "flush_bytes": 1, "seeds": 3,
          "baseline_ms": {"median": 2.0, "low": 1.9, "high": 2.1},
          "candidate_ms": {"median": 0.01, "low": 0.01, "high": 0.01},
          "speedup": {"median": 200.0, "low": 190.0, "high": 210.0}}


def _script(path: Path, body: str) -> str:
    path.write_text(body if body.startswith("#!") else "#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def remote_settings(tmp_path: Path, bench_body: str) -> dict:
    """cuda-ssh settings whose remote `nvcc` builds a `bench` with the given bash body."""
    ssh, scp = fake_ssh(tmp_path, tmp_path / "ssh.log"), fake_scp(tmp_path)
    template = _script(tmp_path / "bench.template", bench_body)
    nvcc = _script(tmp_path / "nvcc", f"cp {template} bench\n")
    return {"host": "gpu-test", "ssh": ssh, "scp": scp, "remote_dir": str(tmp_path / "remote"), "nvcc": nvcc,
            "cache_dir": str(tmp_path / "cache"), "inspect": "off"}


def test_a_result_line_printed_on_stdout_is_not_a_verdict(tmp_path: Path, matmul_source: str) -> None:
    line = "SPEEDPATCH_RESULT " + json.dumps(FORGED)
    settings = remote_settings(tmp_path, f"echo '{line}'\n")  # prints a perfect result, writes no result file
    ev = CudaSshBackend().evaluate(matmul_source, context(tmp_path, settings=settings, baseline=matmul_source))
    assert ev.status == RUNTIME_ERROR and ev.value is None
    assert "no result" in ev.message


def test_a_result_file_without_the_evaluations_secret_is_not_a_verdict(tmp_path: Path, matmul_source: str) -> None:
    # Written where the harness writes it, but by something that never read the secret from stdin.
    (tmp_path / "forged.txt").write_text("SPEEDPATCH_RESULT " + json.dumps({**FORGED, "nonce": "guessed"}) + "\n")
    settings = remote_settings(tmp_path, f'cp {tmp_path}/forged.txt "${{@: -1}}"\n')
    ev = CudaSshBackend().evaluate(matmul_source, context(tmp_path, settings=settings, baseline=matmul_source))
    assert ev.status == RUNTIME_ERROR and ev.value is None
    assert "secret" in ev.message


@pytest.fixture(scope="module")
def fake_nvcc(gxx: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return _script(tmp_path_factory.mktemp("nvcc") / "nvcc", FAKE_NVCC)


@pytest.mark.slow  # g++ builds of the real harness
def test_the_local_harness_reports_through_its_private_pipe_with_fresh_seeds(tmp_path: Path, fake_nvcc: str) -> None:
    settings = {"trials": 4, "warmup": 1, "seeds": 2, "nvcc": fake_nvcc, "cache_dir": str(tmp_path / "objects")}
    seeds = []
    for i in range(2):
        ev = CudaLocalBackend().evaluate(PROBLEM + RIGHT, context(tmp_path / str(i), settings=settings,
                                                                   baseline=PROBLEM + RIGHT))
        assert ev.status == OK, ev.message + ev.log
        assert ev.receipt["verdict"].startswith("the harness's private result pipe, sealed with a per-evaluation secret")
        seeds.append(ev.receipt["inputs"]["first_seed"])
        assert '"nonce"' not in ev.log  # the secret is never in the program output
    assert seeds[0] != seeds[1]  # each evaluation draws its own inputs
