"""cuda-ssh builds and runs on a remote host; its object check runs here first, on the same translation units
compiled with this machine's nvcc. A fake host (ssh/scp/nvcc as local scripts) records what reached it."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.model import OK, REJECTED
from speedpatch.targets.cuda.backends.ssh import CudaSshBackend
from support.fakehost import fake_scp, fake_ssh, script, ssh_calls

from .conftest import MATMUL, context, needs_nvcc

pytestmark = [pytest.mark.slow, needs_nvcc]


def test_a_hostile_candidate_is_rejected_here_before_anything_reaches_the_host(tmp_path: Path,
                                                                                compile_cache: Path) -> None:
    log = tmp_path / "ssh.log"
    scp_log = tmp_path / "scp.log"
    settings = {"host": "gpu-test", "ssh": fake_ssh(tmp_path, log),
                "scp": script(tmp_path / "scp", f'echo scp >> {scp_log}\n'), "remote_dir": str(tmp_path / "remote"),
                "nvcc": "/remote/only/nvcc", "arch": "native", "cache_dir": str(compile_cache)}
    source = MATMUL.read_text()
    hostile = source.replace("void launch(const float* const* inputs, float* output) {",
                             '#include <dlfcn.h>\nvoid launch(const float* const* inputs, float* output) {\n'
                             '  (void)dlopen("libcu" "blas.so", 2);')
    ev = CudaSshBackend().evaluate(hostile, context(tmp_path, settings=settings, baseline=source))
    assert ev.status == REJECTED, ev.message + ev.log
    assert "`dlopen`" in ev.message and "object check on this machine, sm_90" in ev.message
    assert ssh_calls(log) == [] and not scp_log.exists()  # no ssh, no scp: the host never saw it


def test_an_honest_candidate_passes_here_and_the_receipt_says_where_it_was_checked(tmp_path: Path,
                                                                                    compile_cache: Path) -> None:
    result = ('SPEEDPATCH_RESULT {"status":"ok","message":"fake","device":{"name":"Fake GPU"},"flush_bytes":1,'
              '"baseline_ms":{"median":4.0,"low":3.9,"high":4.1},"candidate_ms":{"median":2.0,"low":1.9,"high":2.1},'
              '"speedup":{"median":2.0,"low":1.8,"high":2.2}}')
    (tmp_path / "result.txt").write_text(result + "\n")
    bench = script(tmp_path / "bench.template", 'read -r nonce\n'
                    f'sed "s/^SPEEDPATCH_RESULT {{/SPEEDPATCH_RESULT {{\\"nonce\\":\\"$nonce\\",/" {tmp_path}/result.txt'
                    ' > "${@: -1}"\n')
    settings = {"host": "gpu-test", "ssh": fake_ssh(tmp_path, tmp_path / "ssh.log"), "scp": fake_scp(tmp_path),
                "remote_dir": str(tmp_path / "remote"), "nvcc": script(tmp_path / "nvcc", f"cp {bench} bench\n"),
                "arch": "sm_90", "cache_dir": str(compile_cache)}
    source = MATMUL.read_text()
    ev = CudaSshBackend().evaluate(source.replace("#define BLOCK 16", "#define BLOCK 32"),
                                   context(tmp_path, settings=settings, baseline=source))
    assert ev.status == OK, ev.message + ev.log
    assert ev.receipt["object_check"].startswith("passed on this machine (nvcc ")
