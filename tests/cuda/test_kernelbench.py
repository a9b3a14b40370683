"""KernelBench-style problems where torch is missing: the trusted runner says so in its result line,
and cuda-local turns that into an infrastructure error instead of a crash or a fake result."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from speedpatch.model import INFRA_ERROR, REJECTED
from speedpatch.targets.cuda.backends.local import CudaLocalBackend
from speedpatch.targets.cuda.evaluate import KB_RUNNER
from speedpatch.targets.cuda.results import parse_result

from .conftest import EXAMPLES, context

no_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed here")


@no_torch
def test_runner_without_torch_reports_no_device(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(KB_RUNNER), "--problem", "p.py", "--candidate", "c.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    result = parse_result(done.stdout)
    assert done.returncode == 3 and result is not None
    assert result["status"] == "no_device" and "torch" in result["message"]


@no_torch
def test_local_backend_stages_the_runner_and_reports_missing_torch(tmp_path: Path) -> None:
    path = EXAMPLES / "kernelbench_relu.py"
    ev = CudaLocalBackend().evaluate(path.read_text(), context(tmp_path, source_path=path,
                                                               settings={"cache_dir": str(tmp_path / "cache")}))
    assert ev.status == INFRA_ERROR and "torch" in ev.message
    staged = tmp_path / "work" / "build"
    assert {"problem.py", "candidate.py", "kernelbench_runner.py"} <= {p.name for p in staged.iterdir()}


def test_kernelbench_candidate_calling_the_reference_op_is_rejected(tmp_path: Path) -> None:
    path = EXAMPLES / "kernelbench_relu.py"
    text = path.read_text()
    cheat = text.replace("return relu.relu_cuda(x.contiguous())", "return torch.relu(x)")
    ev = CudaLocalBackend().evaluate(cheat, context(tmp_path, source_path=path, baseline=text,
                                                    settings={"cache_dir": str(tmp_path / "cache")}))
    assert ev.status == REJECTED and "torch" in ev.message
