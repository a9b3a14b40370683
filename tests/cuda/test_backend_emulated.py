"""The timed backends' whole path without a GPU: cuda-local and cuda-ssh build the real A/B translation units,
run the real harness, read its result file and turn it into an Evaluation with a receipt. Only two things
are stood in for: the CUDA runtime (host_cuda/cuda_runtime.h, "device" memory is host memory) and nvcc (a
wrapper that hands the units to g++). So the result keys the harness prints and the keys the backend reads
are checked against each other here, not only on a GPU."""

from __future__ import annotations

import json
import re
import stat
import sys
from pathlib import Path

import pytest
from speedpatch.model import INCORRECT, OK
from speedpatch.targets.cuda.backends.local import CudaLocalBackend
from speedpatch.targets.cuda.backends.ssh import CudaSshBackend

from .conftest import context
from .hostcode import HOST_CUDA, PROBLEM, RIGHT, WRONG

pytestmark = pytest.mark.slow  # several g++ builds

BASELINE = PROBLEM + RIGHT
UNROLLED = PROBLEM + "void launch(const float* const* in, float* out) {\n" \
                     "  for (int i = 0; i < N; i += 2) {\n" \
                     "    out[i] = 2.0f * in[0][i] + in[1][i];\n" \
                     "    out[i + 1] = 2.0f * in[0][i + 1] + in[1][i + 1];\n  }\n}\n"
QUICK = {"trials": 6, "warmup": 1, "seeds": 2}

# nvcc's command line as the backends write it, handed to g++: sources compiled as C++ against the host
# stand-in, device-only flags dropped, `--version` answered like nvcc so the receipt has a compiler.
FAKE_NVCC = f"""#!{sys.executable}
import subprocess, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("Cuda compilation tools, release 13.0, V13.0.48 (host stand-in: g++)")
    sys.exit(0)
keep, i = [], 0
while i < len(args):
    a = args[i]
    if a == "-Xptxas":
        i += 2
        continue
    if a.startswith(("-arch", "-O")) or a == "-lineinfo":  # -O0 below: these builds are only run, never timed
        i += 1
        continue
    keep.append(a)
    i += 1
sources = [a for a in keep if a.endswith(".cu")]
rest = [a for a in keep if not a.endswith(".cu")]
cmd = ["g++", "-O0", "-std=c++17", "-I{HOST_CUDA}", *rest]
if sources:
    cmd += ["-x", "c++", *sources, "-x", "none"]
sys.exit(subprocess.call(cmd))
"""


def _script(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture(scope="module")
def fake_nvcc(gxx: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return _script(tmp_path_factory.mktemp("nvcc") / "nvcc", FAKE_NVCC)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("objects"))


def test_cuda_local_times_a_correct_candidate_and_writes_a_full_receipt(tmp_path: Path, fake_nvcc: str,
                                                                       cache: str) -> None:
    ev = CudaLocalBackend().evaluate(UNROLLED, context(tmp_path, settings={**QUICK, "nvcc": fake_nvcc,
                                                                            "cache_dir": cache}, baseline=BASELINE))
    assert ev.status == OK, ev.message + ev.log
    assert ev.unit == "ms" and ev.value > 0 and ev.spread is not None
    r = ev.receipt
    assert r["backend"] == "cuda-local" and r["compiler_version"] == "nvcc 13.0.48"
    assert (r["trials"], r["warmups"], r["inputs"]["seeds"]) == (6, 1, 2)
    assert r["inputs"]["problem"] == "axpy" and r["inputs"]["shapes"] == "x 4096, y 4096"
    assert r["device"]["name"] == "Host stand-in" and r["device"]["l2_bytes"] == 1 << 20
    assert r["ci"]["low_ms"] <= ev.value <= r["ci"]["high_ms"]
    assert "L2 flushed before every trial" in r["statistic"]
    fb = ev.feedback
    assert fb["median_ms"] == ev.value and fb["baseline_median_ms"] > 0
    assert len(fb["speedup_ci"]) == 2 and fb["verdict"] in ("faster", "slower", "no measurable difference")
    assert fb["achieved_gflops"] > 0 and fb["achieved_gbps"] > 0


def test_cuda_local_reports_a_wrong_candidate_as_incorrect_with_the_harness_message(tmp_path: Path, fake_nvcc: str,
                                                                                  cache: str) -> None:
    ev = CudaLocalBackend().evaluate(PROBLEM + WRONG, context(tmp_path, settings={**QUICK, "nvcc": fake_nvcc,
                                                                         "cache_dir": cache}, baseline=BASELINE))
    assert ev.status == INCORRECT
    # seeds are drawn per evaluation (a candidate cannot special-case its inputs): any seed number
    assert re.search(r"candidate is wrong on seed \d+: ", ev.message) and "differ from the reference" in ev.message


def test_cuda_ssh_builds_and_times_on_the_host_and_reads_the_result_file(tmp_path: Path, fake_nvcc: str,
                                                                         cache: str) -> None:
    log = tmp_path / "ssh.log"
    ssh = _script(tmp_path / "ssh", f'#!/bin/bash\nhost="$1"; shift; echo "$host|$*" >> {log}\nexec bash -c "$*"\n')
    scp = _script(tmp_path / "scp", '#!/bin/bash\nargs=("$@"); dest="${args[-1]}"; unset "args[${#args[@]}-1]"\n'
                                    'files=(); for a in "${args[@]}"; do [ "$a" != -q ] && files+=("${a#*:}"); done\n'
                                    'exec cp -r "${files[@]}" "${dest#*:}"\n')
    settings = {**QUICK, "host": "gpu-box", "ssh": ssh, "scp": scp, "nvcc": fake_nvcc, "cache_dir": cache,
                "local_nvcc": fake_nvcc,  # the object check here builds the host-code units the same way
                "remote_dir": str(tmp_path / "remote")}
    ev = CudaSshBackend().evaluate(UNROLLED, context(tmp_path, settings=settings, baseline=BASELINE))
    assert ev.status == OK, ev.message + ev.log
    assert ev.receipt["backend"] == "cuda-ssh" and ev.receipt["device"]["name"] == "Host stand-in"
    assert json.dumps(ev.receipt["speedup"])  # the paired ratio travelled back whole
    assert any("bench" in line for line in log.read_text().splitlines())
