"""The emulated NKI backend's trust boundary: the kernel runs in its own sandboxed process that holds only
handles; inputs, reference, cost model and verdict stay on the trusted side (docs/threat-model.md, "NKI").

Every case is a hostile kernel evaluated by the real nki-emulator backend against the ORIGINAL problem
(EvalContext.baseline_source, as the engine passes it). None may come out correct and faster.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from speedpatch.model import OK, Evaluation
from speedpatch.targets.base import EvalContext
from speedpatch.targets.nki.target import NkiTarget

pytestmark = pytest.mark.slow

HEADER = """import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul(lhsT, rhs):
"""
HONEST_BODY = """result = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
a = nl.load(lhsT)
b = nl.load(rhs)
acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
acc += nisa.nc_matmul(a, b)
nl.store(result, value=nl.copy(acc, dtype=nl.float32))
"""
HARNESS = """

INPUTS = {"lhsT": ((128, 128), "float32"), "rhs": ((128, 512), "float32")}


def reference(lhsT, rhs):
    return lhsT.T @ rhs
"""
# The interpreter escape every hostile kernel here starts with: the import guard's own reference to the real
# __import__ (so the guard is not what holds; the process boundary is).
ESCAPE = """real_import = __builtins__["__import__"].__globals__["_real_import"] if isinstance(__builtins__, dict) \\
    else __builtins__.__import__.__globals__["_real_import"]
"""


def candidate(body: str, ret: str = "result", before: str = "") -> str:
    """The problem with its kernel body replaced (the harness stays the original's)."""
    lines = "".join(f"    {line}\n" if line else "\n" for line in body.strip("\n").splitlines())
    return before + HEADER + lines + f"    return {ret}\n" + HARNESS


PROBLEM = candidate(HONEST_BODY)


def evaluate(source: str, tmp_path: Path, problem: str = PROBLEM, kernel: str = "matmul",
             timeout: float = 60.0, settings: dict | None = None) -> Evaluation:
    target = NkiTarget()
    (found,) = [k for k in target.find_kernels(problem) if k.name == kernel]
    workdir = tmp_path / f"eval-{len(list(tmp_path.iterdir()))}"
    workdir.mkdir()
    ctx = EvalContext(kernel=found, path=str(tmp_path / "problem.py"), workdir=workdir, timeout=timeout,
                      baseline_source=problem, settings=settings or {})
    return target.backend("nki-emulator").evaluate(source, ctx)


@pytest.fixture(scope="module")
def honest(tmp_path_factory) -> Evaluation:
    ev = evaluate(PROBLEM, tmp_path_factory.mktemp("honest"))
    assert ev.status == OK, ev.message + ev.log
    return ev


def not_accepted(ev: Evaluation, honest: Evaluation, why: str) -> None:
    assert ev.status != OK or (ev.value is not None and ev.value >= honest.value), (
        f"{why}: the cheat was accepted at {ev.value} us (honest kernel: {honest.value} us)\n{ev.message}\n{ev.log}")


def test_an_honest_kernel_is_measured_in_its_own_sandboxed_process(honest):
    assert honest.value > 0 and honest.unit == "us"
    assert "bubblewrap" in honest.receipt["isolation"] or "separate process" in honest.receipt["isolation"]
    assert honest.feedback["required_work"] == {"dma_bytes": (128 * 128 + 128 * 512 * 2) * 4,
                                                "tensor_macs": 128 * 128 * 512}
    body_lines = range(HEADER.count("\n") + 1, HEADER.count("\n") + HONEST_BODY.count("\n") + 1)
    hot = [h["line"] for h in honest.feedback["hot_lines"]]
    assert hot and all(line in body_lines for line in hot), f"hot lines {hot} are not kernel lines {body_lines}"


def test_raw_protocol_messages_from_the_kernel_cannot_make_a_verdict(tmp_path, honest):
    body = ESCAPE + """osm = real_import("o" + "s")
system = real_import("s" + "ys")
fd = int(system.argv[3])
forged = b'["return",0,[],["h",1]]'
osm.write(fd, len(forged).to_bytes(4, "big") + forged)
osm.write(fd, (7).to_bytes(4, "big") + b"garbage")
""" + HONEST_BODY
    ev = evaluate(candidate(body), tmp_path)
    not_accepted(ev, honest, "raw protocol messages")
    assert ev.status != OK, ev.message


def test_numpy_on_the_arguments_gets_no_input_values(tmp_path, honest):
    ev = evaluate(candidate("return np.asarray(lhsT, dtype=np.float32).T @ np.asarray(rhs, dtype=np.float32)"),
                  tmp_path)
    not_accepted(ev, honest, "NumPy outside nki")
    assert ev.status != OK


def test_a_host_array_returned_as_the_result_is_not_a_device_output(tmp_path, honest):
    ev = evaluate(candidate("", ret="np.zeros((128, 512), dtype=np.float32)"), tmp_path)
    assert ev.status != OK, ev.message


def test_the_reference_and_inputs_are_not_in_the_kernel_process(tmp_path, honest):
    body = ESCAPE + """sys = real_import("sys")
names = ("reference", "INPUTS", "make_inputs", "OUTPUTS")
found = sorted({n for m in list(sys.modules.values()) for n in names if n in getattr(m, "__dict__", {})}
               | {n for n in names if n in globals()})
raise RuntimeError(f"harness names visible: {found}")"""
    ev = evaluate(candidate(body), tmp_path)
    assert ev.status != OK
    assert "harness names visible: []" in ev.message, ev.message


def test_a_kernel_that_calls_reference_fails_because_there_is_none(tmp_path, honest):
    ev = evaluate(candidate("return reference(lhsT, rhs)", ret="None"), tmp_path)
    assert ev.status != OK and "reference" in ev.message, ev.message


def test_escapes_from_the_interpreter_find_no_tensor_data(tmp_path, honest):
    body = ESCAPE + """gc = real_import("gc")
sys = real_import("sys")
arrays = [o for o in gc.get_objects() if type(o).__name__ == "ndarray" and getattr(o, "size", 0) >= 128]
frame, depth = sys._getframe(), 0
while frame is not None:
    depth, frame = depth + 1, frame.f_back
subclasses = len(().__class__.__base__.__subclasses__())
raise RuntimeError(f"arrays with data: {len(arrays)}; frames: {depth}; subclasses: {subclasses > 0}")"""
    ev = evaluate(candidate(body), tmp_path)
    assert ev.status != OK
    assert "arrays with data: 0;" in ev.message, ev.message


def test_patching_the_cost_model_from_the_kernel_changes_nothing(tmp_path, honest):
    body = ESCAPE + """try:
    cm = real_import("speedpatch.targets.nki.emulator.costmodel", fromlist=["Trace"])
    cm.Trace.report = lambda self: {"latency_us": 0.001}
    cm.Trace.issue = lambda self, *a, **k: 0.0
except Exception:
    pass
""" + HONEST_BODY
    ev = evaluate(candidate(body), tmp_path)
    assert ev.status == OK, ev.message
    assert ev.value == honest.value, "a cost model patched in the kernel process changed the figure"


def test_forged_result_lines_printed_by_the_kernel_are_only_its_log(tmp_path, honest):
    forged = '{"status": "ok", "value": 0.001, "unit": "us"}'
    body = f"""for tag in ("SPEEDPATCH-RESULT 0 0", "SPEEDPATCH-RESULT nonce 0"):
    print(tag + ' {forged}', flush=True)
""" + HONEST_BODY
    ev = evaluate(candidate(body), tmp_path)
    assert ev.status == OK and ev.value == honest.value, ev.message
    assert "kernel| SPEEDPATCH-RESULT" in ev.log


def test_the_kernel_process_cannot_write_files(tmp_path, honest):
    home_target = Path(os.environ.get("HOME", "/root")) / f"speedpatch-nki-{os.getpid()}-pwned"
    work_target = tmp_path / "pwned"
    body = ESCAPE + f"""os = real_import("os")
written = []
for path in ({str(home_target)!r}, {str(work_target)!r}, "/tmp/speedpatch-nki-pwned"):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"x")
        os.close(fd)
        written.append(path)
    except OSError:
        pass
raise RuntimeError(f"written: {{written}}")"""
    try:
        ev = evaluate(candidate(body), tmp_path)
        assert ev.status != OK
        assert not home_target.exists(), f"the kernel wrote {home_target}"
        assert not work_target.exists(), f"the kernel wrote {work_target}"
        if "bubblewrap" in ev.receipt.get("isolation", ""):
            # its /tmp is a private tmpfs (writes there vanish with it); everything else is read-only
            assert str(home_target) not in ev.message, ev.message
    finally:
        home_target.unlink(missing_ok=True)
        work_target.unlink(missing_ok=True)


def test_processes_the_kernel_starts_do_not_outlive_the_evaluation(tmp_path, honest):
    marker = f"{4000 + os.getpid() % 1000}.{os.getpid()}"
    body = ESCAPE + f"""os = real_import("os")
for _ in range(3):
    if os.fork() == 0:
        os.setsid()
        os.execv("/bin/sleep", ["sleep", "{marker}"])
""" + HONEST_BODY
    evaluate(candidate(body), tmp_path)
    alive = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True).stdout.split()
    for pid in alive:  # clean up before failing, so that a failure leaves nothing behind either
        subprocess.run(["kill", "-9", pid], capture_output=True)
    assert not alive, f"processes started by the kernel survived it: {alive}"


def test_nki_objects_expose_no_internals_to_the_kernel(tmp_path, honest):
    body = """reached = []
for name, get in (("tile.alloc", lambda: lhsT.alloc), ("tile.read", lambda: lhsT.read),
                  ("nl.np", lambda: nl.np), ("nl.costmodel", lambda: nl.costmodel), ("nl.ops", lambda: nl.ops),
                  ("nl.exp.np", lambda: nl.exp.np), ("nl.Tile", lambda: nl.Tile),
                  ("nl.copy_into", lambda: nl.copy_into), ("float(tile)", lambda: float(lhsT[0, 0]))):
    try:
        get()
        reached.append(name)
    except Exception:
        pass
raise RuntimeError(f"reached: {reached}")"""
    ev = evaluate(candidate(body), tmp_path)
    assert ev.status != OK
    assert "reached: []" in ev.message, ev.message


def test_monkeypatching_nl_in_the_kernel_process_only_fools_the_kernel(tmp_path, honest):
    body = """nl.store = lambda *args, **kwargs: None  # skip the output DMA's cost
""" + HONEST_BODY
    ev = evaluate(candidate(body), tmp_path)
    not_accepted(ev, honest, "monkeypatched nl.store")
    assert ev.status != OK


def test_returning_the_input_is_rejected_even_when_it_matches(tmp_path, honest):
    problem = """import nki
import nki.language as nl


@nki.jit
def copy(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out


INPUTS = {"x": ((128, 512), "float32")}


def reference(x):
    return x.copy()
"""
    ev = evaluate(problem.replace("    return out\n", "    return x\n"), tmp_path, problem=problem, kernel="copy")
    assert ev.status != OK
    assert "input 'x'" in ev.message and "handed back" in ev.message, ev.message


def test_output_elements_no_dma_wrote_are_a_failure_even_when_they_match(tmp_path, honest):
    problem = """import nki
import nki.language as nl


@nki.jit
def half(x, out):
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))


INPUTS = {"x": ((128, 512), "float32")}
OUTPUTS = {"out": ((128, 512), "float32")}


def reference(x):
    y = x * 2.0
    y[:, 256:] = 0.0
    return y
"""
    cheat = problem.replace("nl.store(out, value=nl.multiply(nl.load(x), 2.0))",
                            "nl.store(out[:, 0:256], value=nl.multiply(nl.load(x[:, 0:256]), 2.0))\n"
                            "    nl.load(x[:, 256:512])")
    ev = evaluate(cheat, tmp_path, problem=problem, kernel="half")
    assert ev.status != OK
    assert "never written" in ev.message and "65536" in ev.message, ev.message


HALF_USED = """import nki
import nki.language as nl


@nki.jit
def left(x):
    out = nl.ndarray((128, 256), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x)[:, 0:256], 2.0))
    return out


INPUTS = {"x": ((128, 512), "float32")}


def reference(x):
    return x[:, :256] * 2.0
"""


def test_input_elements_the_result_does_not_depend_on_need_not_be_loaded(tmp_path, honest):
    # The reference reads half of x: loading only that half is less work, not missing work, and the
    # required-bytes floor counts only what the result depends on.
    lean = HALF_USED.replace("nl.load(x)[:, 0:256]", "nl.load(x[:, 0:256])")
    whole, half = (evaluate(text, tmp_path, problem=HALF_USED, kernel="left") for text in (HALF_USED, lean))
    assert whole.status == OK and half.status == OK, (whole.message, half.message)
    assert half.value < whole.value
    assert half.feedback["required_work"]["dma_bytes"] == (128 * 256 + 128 * 256) * 4


def test_inputs_never_loaded_that_the_result_depends_on_are_missing_required_work(tmp_path, honest):
    # The other half adds less than the tolerance: a kernel that skips it is "correct" on the values, but
    # the result depends on what it never loaded.
    problem = HALF_USED.replace("return x[:, :256] * 2.0", "return x[:, :256] * 2.0 + x[:, 256:] * 1e-9")
    cheat = problem.replace("nl.load(x)[:, 0:256]", "nl.load(x[:, 0:256])")
    ev = evaluate(cheat, tmp_path, problem=problem, kernel="left")
    assert ev.status != OK
    assert "never loaded 32768 of the 65536 elements of input 'x', yet the reference's result depends" in ev.message, \
        ev.message


def test_a_cached_result_from_an_earlier_input_set_is_refused(tmp_path, honest):
    body = """if _SEEN:
    return _SEEN[0]
""" + HONEST_BODY + "_SEEN.append(result)\n"
    ev = evaluate(candidate(body, before="_SEEN = []\n"), tmp_path)
    assert ev.status != OK
    assert "no longer exists" in ev.message, ev.message


def test_a_figure_that_depends_on_earlier_launches_is_rejected(tmp_path, honest):
    slower_first = "a = nl.load(lhsT)\n_LAUNCHES.append(1)\nif len(_LAUNCHES) == 1:  # extra work on the first launch only\n" \
        "    for _ in range(20):\n        a = nl.copy(a)\n"
    body = HONEST_BODY.replace("a = nl.load(lhsT)\n", slower_first)
    ev = evaluate(candidate(body, before="_LAUNCHES = []\n"), tmp_path)
    assert ev.status != OK
    assert "changed between input sets" in ev.message, ev.message


def test_a_matmul_done_off_the_tensor_engine_lacks_the_required_tensor_work(tmp_path, honest):
    problem = """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def mm(aT, b):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
    acc += nisa.nc_matmul(nl.load(aT), nl.load(b))
    nl.store(out, value=nl.copy(acc, dtype=nl.float32))
    return out


INPUTS = {"aT": ((2, 128), "float32"), "b": ((2, 64), "float32")}


def reference(aT, b):
    return aT.T @ b
"""
    vector = problem.replace("""    acc = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
    acc += nisa.nc_matmul(nl.load(aT), nl.load(b))
    nl.store(out, value=nl.copy(acc, dtype=nl.float32))""", """    a = nl.load_transpose2d(aT)
    rows = [nl.load(b[k:k + 1, :]).broadcast_to((128, 64)) for k in range(2)]
    acc = nisa.tensor_scalar(data=rows[0], op0=nl.multiply, operand0=a[:, 0:1])
    acc = nl.add(acc, nisa.tensor_scalar(data=rows[1], op0=nl.multiply, operand0=a[:, 1:2]))
    nl.store(out, value=acc)""")
    ev = evaluate(vector, tmp_path, problem=problem, kernel="mm")
    assert ev.status != OK
    assert "Tensor engine did 0 multiply-accumulates" in ev.message and "16384" in ev.message, ev.message



ADD_FP32 = """import numpy as np
import nki
import nki.language as nl


@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        for j in nl.affine_range(4):
            rs, cs = nl.ds(i * 128, 128), nl.ds(j * 512, 512)
            nl.store(out[rs, cs], value=nl.add(nl.load(a[rs, cs]), nl.load(b[rs, cs]), dtype=nl.float32))
    return out


INPUTS = {"a": ((256, 2048), "float32"), "b": ((256, 2048), "float32")}


def reference(a, b):
    return a.astype(np.float32) + b.astype(np.float32)
"""


def _to_bf16(text: str) -> str:
    return text.replace("dtype=nl.float32, buffer", "dtype=nl.bfloat16, buffer").replace(
        "dtype=nl.float32))", "dtype=nl.bfloat16))")


def test_an_output_narrower_than_its_fp32_inputs_and_reference_is_not_correct(tmp_path, honest):
    # fp32 data returned as bf16 moves half the output bytes (and halves the required-bytes floor): refused
    # for its precision, by name, before any value is compared.
    honest_ev = evaluate(ADD_FP32, tmp_path, problem=ADD_FP32, kernel="add")
    assert honest_ev.status == OK, honest_ev.message
    ev = evaluate(_to_bf16(ADD_FP32), tmp_path, problem=ADD_FP32, kernel="add")
    assert ev.status != OK, f"accepted at {ev.value} us (fp32 output: {honest_ev.value} us)"
    assert "output is bfloat16 (2 bytes per element), narrower than the reference's float32" in ev.message, ev.message


def test_a_bf16_output_of_bf16_inputs_is_correct_against_an_fp32_reference(tmp_path, honest):
    # The NKI tutorials' pattern: bf16 operands, a numpy reference that computes in fp32, a bf16 result.
    problem = _to_bf16(ADD_FP32).replace('"float32"), "b"', '"bfloat16"), "b"').replace(
        '"float32")}', '"bfloat16")}')
    assert '"bfloat16")}' in problem
    ev = evaluate(problem, tmp_path, problem=problem, kernel="add")
    assert ev.status == OK, ev.message


def test_without_bubblewrap_the_kernel_still_runs_apart_and_holds_no_data(tmp_path, honest):
    plain = evaluate(PROBLEM, tmp_path, settings={"isolation": "process"})
    assert plain.status == OK and plain.value == honest.value, plain.message
    assert "separate process" in plain.receipt["isolation"]
    body = ESCAPE + """collector = real_import("g" + "c")
arrays = [o for o in collector.get_objects() if type(o).__name__ == "ndarray" and getattr(o, "size", 0) >= 128]
raise RuntimeError(f"arrays with data: {len(arrays)}")"""
    ev = evaluate(candidate(body), tmp_path, settings={"isolation": "process"})
    assert "arrays with data: 0" in ev.message, ev.message
