"""The engine's offline search over a CUDA problem, end to end through speedpatch.api, with cuda-ssh on
a fake host whose `bench` reports a time derived from the candidate's BLOCK constant (a deterministic
stand-in for a GPU): moves are proposed, spliced, built remotely, parsed, and the best is kept."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from speedpatch import api
from speedpatch.config import load_config
from speedpatch.store import Store

from .conftest import MATMUL

FAKE_NVCC = r"""#!/bin/bash
# time = 64 / BLOCK ms: a bigger block is "faster"; the baseline side keeps BLOCK 16 (4 ms)
block=$(grep -o '#define BLOCK [0-9]*' candidate.cu | awk '{print $3}')
ms=$(awk -v b="$block" 'BEGIN { printf "%.6f", 64 / b }')
ratio=$(awk -v m="$ms" 'BEGIN { printf "%.6f", 4 / m }')
cat > result.txt <<JSON
SPEEDPATCH_RESULT {"status":"ok","message":"fake","seeds":3,"seed0":0,"warmup":3,"trials":10,"flush_bytes":1,"device":{"name":"Fake GPU","cc":"9.0"},"baseline_ms":{"median":4.0,"low":3.99,"high":4.01},"candidate_ms":{"median":$ms,"low":$ms,"high":$ms},"speedup":{"median":$ratio,"low":$ratio,"high":$ratio}}
JSON
# the result file is the verdict, sealed with the secret the backend writes to stdin
printf '#!/bin/bash\nread -r nonce\ncat result.txt\nsed "s/^SPEEDPATCH_RESULT {/SPEEDPATCH_RESULT {\\"nonce\\":\\"$nonce\\",/" result.txt > "${@: -1}"\n' > bench
chmod +x bench
"""


def _script(path: Path, body: str) -> str:
    path.write_text(body if body.startswith("#!") else "#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.mark.slow  # a whole (small) search: a few seconds
def test_offline_search_keeps_the_fastest_block_size(tmp_path: Path) -> None:
    ssh = _script(tmp_path / "ssh", 'shift; exec bash -c "$*"\n')
    scp = _script(tmp_path / "scp", 'args=("$@"); dest="${args[-1]}"; unset "args[${#args[@]}-1]"\n'
                                    'files=(); for a in "${args[@]}"; do [ "$a" != -q ] && files+=("${a#*:}"); done\n'
                                    'exec cp "${files[@]}" "${dest#*:}"\n')
    settings = {"host": "fake", "ssh": ssh, "scp": scp, "remote_dir": str(tmp_path / "remote"),
                "nvcc": _script(tmp_path / "nvcc", FAKE_NVCC), "cache_dir": str(tmp_path / "cache"),
                "inspect": "off"}  # no local object check: the fake host is what this test is about
    config = load_config(None, {"offline": True, "search": {"iterations": 1, "beam": 2, "workers": 2},
                                "backend": {"cuda-ssh": settings}})
    text = MATMUL.read_text()
    problem = api.make_problem(str(MATMUL), text, None, config, backend="cuda-ssh")
    assert problem.kernel.name == "launch"
    record = api.optimize(problem, config, Store(tmp_path / "ws"))
    assert record.status == "finished", record.message
    assert record.best is not None and "#define BLOCK 32" in record.best.source
    assert record.best.source.startswith(text[: problem.kernel.start])  # the harness is untouched
    assert record.speedup == 2.0
    assert json.loads(json.dumps(record.best.evaluation.receipt))["backend"] == "cuda-ssh"
    edited = text.replace("// Naive single-precision", "// Edited: naive single-precision")  # unrelated edit
    applied = api.apply_text(record, edited)
    assert "#define BLOCK 32" in applied and "// Edited: naive" in applied
