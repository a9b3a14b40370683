"""nki-simulate and nki-neuron against stand-ins: a fake `nki` package (the emulator's API plus
simulate_kernel / benchmark, as the Neuron SDK provides them), a fake SSH command, and the PyPI
placeholder packages whose import raises 'WRONG PACKAGE'."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from speedpatch.model import INCORRECT, INFRA_ERROR, NOT_MEASURED, OK
from speedpatch.targets.nki.backends import remote
from support.fakehost import fake_ssh, ssh_calls

from .conftest import EXAMPLES

FAKE_NKI = '''"""Stand-in for the Neuron SDK's nki in tests (not the emulator: no SPEEDPATCH_EMULATOR flag)."""
from speedpatch.targets.nki.emulator.jit import jit, baremetal, benchmark, simulate_kernel
from . import language, isa
__version__ = "9.9-fake"
'''
PLACEHOLDER = 'raise ImportError("WRONG PACKAGE: this is a placeholder; install nki from the AWS Neuron repository")\n'


def make_fake_nki(root: Path, placeholder: bool = False) -> Path:
    pkg = root / "nki"
    pkg.mkdir(parents=True)
    if placeholder:
        (pkg / "__init__.py").write_text(PLACEHOLDER)
        legacy = root / "neuronxcc"
        legacy.mkdir()
        (legacy / "__init__.py").write_text(PLACEHOLDER)
        return root
    (pkg / "__init__.py").write_text(FAKE_NKI)
    (pkg / "language.py").write_text("from speedpatch.targets.nki.emulator.language import *  # noqa\n"
                                     "from speedpatch.targets.nki.emulator.language import sum, max, min, abs  # noqa\n")
    (pkg / "isa.py").write_text("from speedpatch.targets.nki.emulator.isa import *  # noqa\n")
    return root


@pytest.fixture
def fake_nki(tmp_path: Path) -> Path:
    return make_fake_nki(tmp_path / "fake")


def local_settings(pythonpath: Path) -> dict:
    return {"python": sys.executable, "env": {"PYTHONPATH": str(pythonpath)}}


def test_simulate_is_available_with_a_real_looking_nki(fake_nki, target):
    availability = target.backend("nki-simulate").availability(local_settings(fake_nki))
    assert availability.usable, availability.reason
    assert "9.9-fake" in availability.reason


def test_simulate_checks_correctness_without_timing(fake_nki, evaluate):
    ev = evaluate((EXAMPLES / "tensor_add.py").read_text(), backend="nki-simulate", settings=local_settings(fake_nki))
    assert ev.status == NOT_MEASURED, ev.message
    assert ev.value is None and ev.score == float("inf")


def test_simulate_reports_wrong_kernels_as_incorrect(fake_nki, evaluate):
    source = (EXAMPLES / "tensor_add.py").read_text().replace("nl.add(a_tile, b_tile)", "nl.subtract(a_tile, b_tile)")
    ev = evaluate(source, backend="nki-simulate", settings=local_settings(fake_nki))
    assert ev.status == INCORRECT


def test_emulator_on_sys_path_does_not_count_as_a_real_installation(target):
    from speedpatch.targets.nki.emulator import PKGS_DIR

    availability = target.backend("nki-simulate").availability(local_settings(Path(PKGS_DIR)))
    assert not availability.usable


def test_placeholder_packages_are_detected_and_explained(tmp_path, target):
    fake = make_fake_nki(tmp_path / "placeholder", placeholder=True)
    for name in ("nki-simulate", "nki-neuron"):
        availability = target.backend(name).availability(local_settings(fake))
        assert not availability.usable
        assert "placeholder" in availability.reason and "WRONG PACKAGE" in availability.reason
        assert "pip.repos.neuron.amazonaws.com" in availability.reason


def test_evaluating_with_only_placeholders_is_an_infra_error(tmp_path, evaluate):
    fake = make_fake_nki(tmp_path / "placeholder", placeholder=True)
    ev = evaluate((EXAMPLES / "tensor_add.py").read_text(), backend="nki-simulate", settings=local_settings(fake))
    assert ev.status == INFRA_ERROR and "placeholder" in ev.message


def test_missing_nki_is_reported_with_what_to_do(tmp_path, target):
    availability = target.backend("nki-simulate").availability({"python": sys.executable})
    assert not availability.usable and "nki" in availability.reason


def test_neuron_without_device_says_so_locally(fake_nki, target):
    availability = target.backend("nki-neuron").availability(local_settings(fake_nki))
    if not availability.usable:  # this machine has no /dev/neuron*
        assert "no Neuron device" in availability.reason and "host" in availability.reason


def test_neuron_over_ssh_checks_and_times_with_nki_benchmark(fake_nki, tmp_path, evaluate):
    log = tmp_path / "ssh.log"
    settings = {"host": "trn1-test", "ssh": fake_ssh(tmp_path, log), "python": f"env PYTHONPATH={fake_nki} {sys.executable}",
                "warmup": 1, "iters": 3}
    ev = evaluate((EXAMPLES / "tensor_add.py").read_text(), backend="nki-neuron", settings=settings)
    assert ev.status == OK, ev.message + ev.log
    assert ev.unit == "us" and ev.value > 0
    assert ev.receipt["statistic"].startswith("median") and ev.receipt["trials"] == 3
    assert ev.spread == 0.0  # the stand-in reports the same latency at every percentile
    assert "9.9-fake" in ev.receipt["compiler"] and "trn1-test" in ev.receipt["device"]
    assert [host for host, _ in ssh_calls(log)] == ["trn1-test"]


def test_neuron_over_ssh_with_unreachable_python_is_explained(tmp_path, target):
    availability = target.backend("nki-neuron").availability(
        {"host": "trn1-test", "ssh": fake_ssh(tmp_path, tmp_path / "ssh.log"), "python": "/no/such/python"})
    assert not availability.usable and "trn1-test" in availability.reason


def test_remote_python_is_sent_as_written_and_the_program_quoted_for_the_remote_shell(tmp_path):
    log = tmp_path / "ssh.log"
    python = f"env SPEEDPATCH_TEST_MARK=x {sys.executable}"  # a shell command line, not one path
    program = "import os; print('a b', os.environ['SPEEDPATCH_TEST_MARK'])"
    done = remote.run_python({"host": "h", "ssh": fake_ssh(tmp_path, log), "python": python}, program, tmp_path, 30)
    assert done.output.strip() == "a b x"  # the remote shell read the program back whole
    assert ssh_calls(log) == [("h", f"{python} -c {shlex.quote(program)}")]
