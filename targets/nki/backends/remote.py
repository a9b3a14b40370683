"""Running runner.py with a real Neuron installation, locally or on a Trainium host over SSH.

One process per evaluation: `<python> -c BOOTSTRAP`, with runner.py, the candidate and the nonce sent as
JSON on stdin; over SSH that is `<ssh> <host> '<python> -c BOOTSTRAP'`, so nothing has to be installed on
the host beyond the Neuron SDK's Python. Settings (the backend's table in speedpatch.toml, e.g.
[backend.nki-neuron] or [backend.nki-simulate]):
    host = "trn1-box"      # omit to run locally
    ssh = "ssh -o BatchMode=yes"
    python = "/opt/aws_neuronx_venv_pytorch/bin/python"   # default: python3 (remote) / this Python (local)
    env = {NAME = "value"}  # extra environment for local runs
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from pathlib import Path
from typing import Any

from speedpatch.targets import hosts
from speedpatch.targets.base import ProcResult
from speedpatch.targets.nki.backends.common import RUNNER
from speedpatch.targets.sandbox import DEVICES

BOOTSTRAP = (
    "import json,os,sys,tempfile,shutil,importlib.util as u\n"
    "job=json.loads(sys.stdin.read())\n"
    "d=tempfile.mkdtemp(prefix='speedpatch-nki-')\n"
    "try:\n"
    " open(os.path.join(d,'runner.py'),'w').write(job['runner'])\n"
    " c=os.path.join(d,'candidate.py'); open(c,'w').write(job['candidate'])\n"
    " if job.get('problem') is not None:\n"
    "  p=os.path.join(d,'problem.py'); open(p,'w').write(job['problem']); job['argv']+=['--problem',p]\n"
    " s=u.spec_from_file_location('speedpatch_runner',os.path.join(d,'runner.py')); m=u.module_from_spec(s)\n"
    " s.loader.exec_module(m); m.main([c]+job['argv'],job['nonce'])\n"
    "finally:\n"
    " shutil.rmtree(d,ignore_errors=True)\n"
)

PROBE = (
    "import json,glob\n"
    "out={'devices':len(glob.glob('/dev/neuron*'))}\n"
    "for n in ('nki','neuronxcc.nki'):\n"
    " try:\n"
    "  m=__import__(n,fromlist=['_'])\n"
    "  out[n]={'ok':True,'version':str(getattr(m,'__version__','')),"
    "'simulate':hasattr(m,'simulate_kernel') or hasattr(m,'simulate'),'benchmark':hasattr(m,'benchmark'),"
    "'emulator':bool(getattr(m,'SPEEDPATCH_EMULATOR',False))}\n"
    " except Exception as e:\n"
    "  t=type(e).__name__+': '+str(e)\n"
    "  out[n]={'ok':False,'error':t[:300],'placeholder':'WRONG PACKAGE' in t.upper()}\n"
    "print('SPEEDPATCH-PROBE '+json.dumps(out))\n"
)


# the keys of a backend that runs Python where the settings say: the host, its Python and environment
SETTINGS_KEYS = hosts.REMOTE_KEYS | {"python", "env"}


def environment(settings: dict[str, Any]) -> dict[str, str]:
    env = dict(os.environ)
    env.update({str(k): str(v) for k, v in (settings.get("env") or {}).items()})
    return env


def run_python(settings: dict[str, Any], program: str, cwd: Path, timeout: float,
               stdin: str | None = None) -> ProcResult:
    """`<python> -c program` where the settings say (targets/hosts.py): locally in the sandbox with the Neuron
    devices, or on the Trainium host over ssh, where the python setting is a shell command line as written."""
    host = hosts.host_for(settings, cwd, env=environment(settings), devices=DEVICES["neuron"])
    if host.address is None:
        return host.run([*shlex.split(settings.get("python") or host.default_python), "-c", program], timeout, stdin)
    return host.shell(f"{settings.get('python', host.default_python)} -c {shlex.quote(program)}", timeout, stdin)


def probe(settings: dict[str, Any], cwd: Path, timeout: float = 20.0) -> tuple[dict[str, Any] | None, str]:
    """What the Python that would run candidates can import: ({"nki": {...}, ...}, '') or (None, why)."""
    proc = run_python(settings, PROBE, cwd, timeout)
    for line in proc.output.splitlines():
        if line.startswith("SPEEDPATCH-PROBE "):
            return json.loads(line[len("SPEEDPATCH-PROBE ") :]), ""
    if proc.timed_out:
        return None, f"no answer from {hosts.where(settings)} within {timeout:.0f} s"
    return None, f"cannot run Python on {hosts.where(settings)}: {proc.output.strip()[-300:] or f'exit {proc.returncode}'}"


def real_nki(info: dict[str, Any], backend: str) -> tuple[dict[str, Any] | None, str]:
    """The usable real installation from a probe, or why there is none (placeholder packages named)."""
    found = [info.get(n, {}) for n in ("nki", "neuronxcc.nki")]
    for entry in found:
        if entry.get("ok") and not entry.get("emulator"):
            return entry, ""
    if any(e.get("placeholder") for e in found):
        return None, ("only the PyPI placeholder packages (nki / neuronx-cc raise 'WRONG PACKAGE') are installed; "
                      "install the Neuron SDK from AWS's pip index (pip install --extra-index-url "
                      "https://pip.repos.neuron.amazonaws.com neuronx-cc nki) in the Python this backend uses")
    errors = "; ".join(e.get("error", "") for e in found if e.get("error"))
    return None, (f"no Neuron nki installation importable ({errors or 'not installed'}); install the Neuron SDK "
                  f"(pip install --extra-index-url https://pip.repos.neuron.amazonaws.com neuronx-cc) or set "
                  f"python = \"/path/to/neuron-venv/bin/python\" (and host = \"...\" for a remote Trainium host) "
                  f"in [backend.{backend}] of speedpatch.toml")


def installation(settings: dict[str, Any], backend: str,
                 hint: str = "") -> tuple[dict[str, Any], dict[str, Any]] | str:
    """(the probe's answer, its real nki entry) for the Python this backend would run, or why there is
    none (`hint` follows a failed probe: what to set)."""
    with tempfile.TemporaryDirectory() as tmp:
        info, why = probe(settings, Path(tmp))
    if info is None:
        return why + hint
    entry, why = real_nki(info, backend)
    return why if entry is None else (info, entry)


def run_runner(settings: dict[str, Any], source: str, argv: list[str], nonce: str, cwd: Path, timeout: float,
               problem: str | None = None) -> ProcResult:
    """runner.py on the candidate; the harness is taken from `problem` (the original file) when given."""
    job = {"runner": RUNNER.read_text(encoding="utf-8"), "candidate": source, "argv": argv, "nonce": nonce,
           "problem": problem}
    return run_python(settings, BOOTSTRAP, cwd, timeout, stdin=json.dumps(job))
