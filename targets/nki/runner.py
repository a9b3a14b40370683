"""Trusted evaluation runner for NKI kernel files (standalone: stdlib + NumPy, so it can be shipped to a
Trainium host). Usage:

    python runner.py CANDIDATE.py --kernel NAME [--problem PROBLEM.py] [--mode emulate|simulate|benchmark]
                     [--seeds 0,1,2] [--pkgs DIR] [--deadline SECONDS] [--warmup 2] [--iters 10]
                     [--isolation auto|bwrap|process]

The first stdin line is a nonce; the result is JSON split over lines "SPEEDPATCH-RESULT <nonce> <index>
<piece>", written to the pipe named by $SPEEDPATCH_RESULT_FD when speedpatch's sandbox opened one (the
verdict then never shares a channel with anything the candidate prints), else printed on stdout, where
the nonce keeps output printed by the candidate from passing for a result.

Who owns what: the harness (INPUTS / make_inputs / reference / OUTPUTS / TOLERANCE / SEEDS) is taken from
PROBLEM.py, the original problem file (default: the candidate itself, for standalone use); from the
candidate only its kernel module runs, with every harness definition removed. Input values come from
fresh random seeds drawn here for every evaluation (plus any --seeds given), so nothing can be prepared
for them. In emulate mode the kernel module runs in a separate, sandboxed process that only holds handles
(isolation/, docs/threat-model.md "NKI"); inputs, reference, cost model, checks and this verdict stay in
this process. On a real Neuron host (simulate / benchmark) the Neuron SDK runs the kernel in-process.

The harness kit -- what a kernel file defines at module level to be a complete problem:
    INPUTS = {"a": ((256, 512), "float32"), "b": {"shape": (256, 512), "dtype": "float32",
              "low": -1.0, "high": 1.0}}        # kernel arguments in order; normal(0, 1) unless low/high
    def reference(a, b): return a + b           # NumPy; same positional order; array or tuple of arrays
optional:
    INPUTS = {..., "eps": 1e-5, "pool": {"value": (2, 2)}}  # non-tensor arguments (numbers, strings,
                                                # tuples/lists of them) passed as they are, to both
    GRID = (4, 2)                               # SPMD launch grid: kernel[4, 2](...) runs all 8 programs
                                                # (nl.program_id / nl.num_programs); entries may be
                                                # nl.nc(2) / nl.spmd_dim(nl.nc(2), 2) of the problem's nki
    def make_inputs(rng): return {"a": ...}     # instead of INPUTS, for structured inputs
    OUTPUTS = {"out": ((256, 512), "float32")}  # output arguments the kernel writes (baremetal style)
    TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}    # default 1e-4; 2e-2 with fp16/bf16/fp8 outputs or inputs
    SEEDS = (0, 1, 2)                           # how many input sets (values drawn afresh per evaluation)
"""

from __future__ import annotations

import argparse
import ast
import faulthandler
import importlib.util
import inspect
import json
import os
import secrets
import sys
import time
import traceback
from typing import Any


class _LazyNumPy:
    """NumPy, imported on first use: in emulate mode the kernel process is started before this process
    spends its first few hundred milliseconds importing NumPy and the emulator (they then boot together)."""

    def __getattr__(self, name: str) -> Any:
        import numpy

        globals()["np"] = numpy
        return getattr(numpy, name)


np: Any = _LazyNumPy()

RESULT_TAG = "SPEEDPATCH-RESULT"
RESULT_FD_ENV = "SPEEDPATCH_RESULT_FD"  # set by speedpatch's sandbox (targets/sandbox.py): the verdict's own pipe
CHUNK = 300


HARNESS_NAMES = ("INPUTS", "OUTPUTS", "TOLERANCE", "SEEDS", "GRID", "make_inputs", "reference")
MAX_PROGRAMS = 4096  # SPMD programs in one launch grid: more is taken for a mistaken declaration
MAX_GRID_DIMS = 8
SCALAR_TYPES = (bool, int, float, str, type(None))
KERNEL_LOG_PREFIX = "kernel| "  # every line the kernel process printed; never mistaken for a result line


class HarnessError(Exception):
    pass


def strip_harness(source: str) -> str:
    """The candidate's kernel module: its text with every top-level harness definition blanked out (line
    numbers kept, so errors still name the candidate's lines). Unparsable text is left for the kernel
    process to report with its line."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source
    lines = source.splitlines(keepends=True)
    for node in tree.body:
        names: list[str] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [(a.asname or a.name).split(".")[0] for a in node.names]
        if any(n in HARNESS_NAMES for n in names):
            first = min([node.lineno, *[d.lineno for d in getattr(node, "decorator_list", [])]])
            for i in range(first - 1, (node.end_lineno or node.lineno)):
                lines[i] = "\n"
    return "".join(lines)


def random_seeds(problem: Any, given: str) -> list[int]:
    """Fresh seeds for this evaluation: as many as the problem's SEEDS (3 by default), plus any given."""
    count = len(getattr(problem, "SEEDS", (0, 1, 2))) or 3
    fixed = [int(x) for x in given.split(",") if x.strip()] if given else []
    return fixed + [secrets.randbelow(2**31) for _ in range(1 if fixed else count)]


def kernel_line(exc: BaseException, path: str) -> tuple[int, str]:
    """The deepest line of the candidate file in the exception's traceback, and its text."""
    if isinstance(exc, SyntaxError) and exc.filename and os.path.abspath(exc.filename) == path:
        return exc.lineno or 0, (exc.text or "").strip()
    found = (0, "")
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == path:
            found = (frame.lineno or 0, (frame.line or "").strip())
    return found


def describe(exc: BaseException, path: str, what: str) -> dict[str, Any]:
    line, text = kernel_line(exc, path)
    name = type(exc).__name__
    where = f"line {line}: " if line else ""
    message = f"{where}{name}: {exc}" if name != "NkiError" else f"{where}{exc}"
    if text:
        message += f"  [{text[:160]}]"
    return {"status": what, "message": message, "line": line,
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]}


def _spec(spec: Any) -> dict[str, Any]:
    if isinstance(spec, dict):
        return spec
    shape, dtype = spec
    return {"shape": tuple(shape), "dtype": dtype}


def _dtype(name: Any) -> np.dtype:
    """A NumPy dtype by name, including the ones NumPy lacks (bfloat16, float8_*) through ml_dtypes."""
    try:
        return np.dtype(name)
    except TypeError:
        try:
            import ml_dtypes
        except ImportError as exc:
            raise HarnessError(f"dtype {name!r} needs the ml_dtypes package (pip install ml_dtypes)") from exc
        found = getattr(ml_dtypes, str(name), None)
        if found is None:
            raise HarnessError(f"unknown dtype {name!r} in INPUTS") from None
        return np.dtype(found)


def argument_value(name: str, value: Any, depth: int = 0) -> Any:
    """A non-tensor kernel argument as declared (a number, string, None, or a tuple/list of them), checked:
    it travels to the kernel process as plain data, so nothing else (objects, arrays, deep nesting) may."""
    if isinstance(value, SCALAR_TYPES):
        if isinstance(value, float) and not np.isfinite(value):
            raise HarnessError(f"non-tensor argument {name!r} is {value!r}; give a finite number")
        if isinstance(value, str) and len(value) > 200:
            raise HarnessError(f"non-tensor argument {name!r} is a string of {len(value)} characters (at most 200)")
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return argument_value(name, value.item(), depth)
    if isinstance(value, (tuple, list)) and depth < 4 and len(value) <= 64:
        items = [argument_value(name, v, depth + 1) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    raise HarnessError(
        f"non-tensor argument {name!r} is a {type(value).__name__} ({str(value)[:80]}); kernel arguments are NumPy "
        f"arrays, or numbers, strings and tuples/lists of them (at most 64 items, nested 4 deep)")


def _is_argument_spec(raw: Any) -> bool:
    """An INPUTS entry that declares a non-tensor argument: {"value": ...} or a bare number / string."""
    return (isinstance(raw, dict) and "value" in raw) or isinstance(raw, SCALAR_TYPES)


def make_inputs(module: Any, seed: int) -> dict[str, Any]:
    """The kernel arguments for `seed` by name, in order: NumPy arrays and non-tensor values."""
    rng = np.random.default_rng(seed)
    if hasattr(module, "make_inputs"):
        arrays = module.make_inputs(rng)
        if not isinstance(arrays, dict):
            raise HarnessError("make_inputs(rng) must return a dict of name -> NumPy array (or non-tensor value)")
        return {k: np.ascontiguousarray(v) if isinstance(v, np.ndarray) else argument_value(str(k), v)
                for k, v in arrays.items()}
    specs = getattr(module, "INPUTS", None)
    if not isinstance(specs, dict):
        raise HarnessError("the file defines neither INPUTS = {name: (shape, dtype)} nor make_inputs(rng)")
    out: dict[str, Any] = {}
    for name, raw in specs.items():
        if _is_argument_spec(raw):
            out[name] = argument_value(name, raw["value"] if isinstance(raw, dict) else raw)
            continue
        if isinstance(raw, (tuple, list)) and not (len(raw) == 2 and isinstance(raw[0], (tuple, list))):
            raise HarnessError(
                f"INPUTS[{name!r}] = {str(raw)[:80]} is neither a tensor (shape, dtype) nor a non-tensor argument; "
                f"declare a tuple argument as {{\"value\": {str(raw)[:40]}}}")
        spec = _spec(raw)
        dtype = _dtype(spec.get("dtype", "float32"))
        shape = tuple(spec["shape"])
        # ml_dtypes' bfloat16 / float8 types are floats with NumPy kind "V": by their name
        if dtype.kind == "f" or dtype.name.startswith(("bfloat", "float")):
            if "low" in spec or "high" in spec:
                values = rng.uniform(spec.get("low", 0.0), spec.get("high", 1.0), size=shape)
            else:
                values = rng.standard_normal(shape)
        else:
            values = rng.integers(spec.get("low", -8), spec.get("high", 8), size=shape)
        out[name] = values.astype(dtype)
    return out


def launch_grid(module: Any) -> tuple[int, ...]:
    """The problem's SPMD launch grid (GRID), checked: () when it declares none. Entries are positive ints,
    or the int-valued nl.nc(n) / nl.spmd_dim(...) of the problem's own nki, kept as they are (the launcher
    reads which programs go to which NeuronCore from them)."""
    raw = getattr(module, "GRID", None)
    if raw is None:
        return ()
    dims = raw if isinstance(raw, (tuple, list)) else (raw,)
    if not dims or len(dims) > MAX_GRID_DIMS:
        raise HarnessError(f"GRID = {str(raw)[:80]}: give 1 to {MAX_GRID_DIMS} dimensions, e.g. GRID = (4, 2)")
    total = 1
    for d in dims:
        if _sdk_dimension(d):  # the real SDK's nl.nc / nl.spmd_dim object (not an int there): its own check
            continue
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise HarnessError(f"GRID = {str(raw)[:80]}: {d!r} is not a whole number of programs (GRID = (4, 2), "
                               f"or nl.nc(2) / nl.spmd_dim(nl.nc(2), 2) entries)")
        if int(d) < 1:
            raise HarnessError(f"GRID = {str(raw)[:80]}: every dimension needs at least one program, not {int(d)}")
        total *= int(d)
    if total > MAX_PROGRAMS:
        raise HarnessError(f"GRID = {str(raw)[:80]} launches {total} programs; at most {MAX_PROGRAMS} (tile the work "
                           f"inside each program instead)")
    return tuple(dims)


def harness_failure(exc: BaseException) -> dict[str, Any]:
    """The verdict when the trusted harness itself fails: its own message for a declaration error."""
    if isinstance(exc, HarnessError):
        return {"status": "harness_error", "message": str(exc)}
    return {"status": "harness_error", "message": f"harness failed: {type(exc).__name__}: {exc}"}


def _sdk_dimension(dim: Any) -> bool:
    """A launch-grid dimension object of the real Neuron SDK (neuronxcc.nki / nki), on a Neuron host."""
    module = type(dim).__module__ or ""
    return not isinstance(dim, int) and module.split(".")[0] in ("neuronxcc", "nki")


def describe_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    """The receipt's view of the arguments: [shape, dtype] of each array, {"value": v} of the others."""
    return {k: [list(v.shape), str(v.dtype)] if isinstance(v, np.ndarray) else {"value": v} for k, v in inputs.items()}


def output_buffers(module: Any) -> dict[str, np.ndarray]:
    specs = getattr(module, "OUTPUTS", None) or {}
    return {k: np.zeros(tuple(_spec(v)["shape"]), dtype=_spec(v).get("dtype", "float32")) for k, v in specs.items()}


def as_list(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [np.asarray(v) for v in value]
    return [np.asarray(value)]


def tolerance(module: Any, expected: list[np.ndarray], inputs: Any = ()) -> tuple[float, float]:
    """(rtol, atol): the problem's TOLERANCE, else by precision. Low precision when the reference returns
    fp16/bf16/fp8, or when the problem's own inputs are such (a bf16 matmul whose NumPy reference computes
    in fp32: the kernel's bf16 output cannot meet 1e-4). Never by the kernel's output dtype: a candidate
    must not loosen its own check by returning lower precision."""
    tol = getattr(module, "TOLERANCE", None) or {}
    arrays = [*expected, *[v for v in (inputs.values() if isinstance(inputs, dict) else inputs)
                           if isinstance(v, np.ndarray)]]
    low_precision = any(a.dtype.kind in "fV" and a.dtype.itemsize <= 2 for a in arrays)  # fp16, bf16, fp8
    default = 2e-2 if low_precision else 1e-4
    return float(tol.get("rtol", default)), float(tol.get("atol", default))


def _widest_input(inputs: dict[str, Any] | None) -> int:
    """Bytes per element of the widest array input (4 when there is none to go by)."""
    sizes = [v.dtype.itemsize for v in (inputs or {}).values() if isinstance(v, np.ndarray)]
    return max(sizes, default=4)


def compare(actual: Any, expected: Any, rtol: float, atol: float, inputs: dict[str, Any] | None = None) -> str:
    """'' when correct, else why not."""
    acts, exps = as_list(actual), as_list(expected)
    if actual is None:
        return "the kernel returned nothing (return the output tensor, or declare OUTPUTS)"
    if len(acts) != len(exps):
        return f"the kernel returned {len(acts)} outputs, the reference {len(exps)}"
    for i, (a, e) in enumerate(zip(acts, exps, strict=False)):
        label = f"output {i}" if len(exps) > 1 else "output"
        if a.shape != e.shape:
            return f"{label} has shape {a.shape}, expected {e.shape}"
        # An output narrower than both the reference's result and the widest input is lower precision than
        # the problem's (fp32 data returned as bf16 halves the output's DMA and the required-bytes floor).
        # Capped at the widest input: a numpy reference computes bf16 data in fp32, and a kernel returning
        # bf16 for bf16 inputs (the NKI tutorials' matmul) is the problem as written, not a narrowing.
        floor = min(e.dtype.itemsize, 4, _widest_input(inputs))
        if a.dtype.itemsize < floor:
            return (f"{label} is {a.dtype} ({a.dtype.itemsize} bytes per element), narrower than the reference's "
                    f"{e.dtype} and the inputs ({floor} bytes): lower precision than the problem's (return "
                    f"{floor}-byte elements)")
        a64, e64 = a.astype(np.float64), e.astype(np.float64)
        if np.max(np.abs(e64), initial=0.0) <= atol:
            raise HarnessError(f"the reference {label} is all ~0 (<= atol {atol}); such a check proves nothing")
        bad_values = ~np.isfinite(a64) & np.isfinite(e64)
        if bad_values.any():
            idx = tuple(int(x) for x in np.argwhere(bad_values)[0])
            return f"{label} has NaN/inf at {idx} (uninitialised memory read or overflow)"
        if np.ptp(e64) > atol and np.ptp(a64) <= atol * 1e-3:
            return f"{label} is constant ({a64.flat[0]:.6g}) but the reference is not"
        close = np.isclose(a64, e64, rtol=rtol, atol=atol)
        if not close.all():
            idx = tuple(int(x) for x in np.argwhere(~close)[0])
            err = np.abs(a64 - e64)
            return (f"{label} differs at {idx}: got {a64[idx]:.6g}, expected {e64[idx]:.6g}; "
                    f"{int((~close).sum())} of {close.size} elements off; max abs error {err.max():.3g} "
                    f"(rtol={rtol}, atol={atol})")
    return ""


def import_nki() -> tuple[Any, str]:
    """The real nki (or the emulator when it is first on sys.path); legacy neuronxcc.nki as a fallback."""
    errors = []
    for name in ("nki", "neuronxcc.nki"):
        try:
            return importlib.import_module(name), ""
        except ImportError as exc:
            errors.append(f"{name}: {exc}")
    text = "; ".join(errors)
    if "WRONG PACKAGE" in text.upper():
        return None, f"only the PyPI placeholder packages are installed ({text[:300]})"
    return None, f"cannot import nki ({text[:300]})"


def _kernel_params(kernel: Any) -> list[str] | None:
    """The kernel function's parameter names, when its wrapper lets inspect see them."""
    for obj in (kernel, getattr(kernel, "fn", None), getattr(kernel, "__wrapped__", None)):
        if obj is None:
            continue
        try:
            return list(inspect.signature(obj).parameters)
        except (TypeError, ValueError):
            continue
    return None


def call_arguments(kernel: Any, args: list[Any], outs: dict[str, Any],
                   names: list[str] | tuple[str, ...] = ()) -> tuple[list[Any], dict[str, Any]]:
    """Positional INPUTS and keyword OUTPUTS, as always -- unless an OUTPUTS parameter comes before an INPUTS one
    in the kernel's signature (the doc example tensor_maxpool_kernel_(in_tensor, out_tensor, pool_size)), where
    positional inputs would fill the output's place: then every argument goes by name."""
    params = _kernel_params(kernel) if names and outs else None
    if not params or not set(names) <= set(params) or not set(outs) <= set(params):
        return args, outs
    first_input_after_output = any(params.index(o) < params.index(n) for o in outs for n in names)
    if not first_input_after_output:
        return args, outs
    return [], {**dict(zip(names, args, strict=True)), **outs}


def run_kernel(mode: str, nki: Any, kernel: Any, args: list[Any], outs: dict[str, np.ndarray],
               grid: tuple[int, ...] = (), names: list[str] | tuple[str, ...] = ()) -> Any:
    args, kwargs = call_arguments(kernel, args, outs, names)
    if grid:
        kernel = kernel[grid]  # every program of the grid: kernel[4, 2](...)
    if mode == "simulate":
        if hasattr(nki, "simulate_kernel"):
            result = nki.simulate_kernel(kernel, *args, **kwargs)
        else:
            result = nki.simulate(kernel)(*args, **kwargs)
    else:
        result = kernel(*args, **kwargs)
    if outs and result is None:
        result = tuple(outs.values()) if len(outs) > 1 else next(iter(outs.values()))
    return result


def benchmark(nki: Any, kernel: Any, args: list[Any], outs: dict[str, np.ndarray], warmup: int,
              iters: int, grid: tuple[int, ...] = ()) -> dict[str, float]:
    """Median and P99 latency in microseconds from nki.benchmark (of the whole launch grid)."""
    fn = getattr(kernel, "func", None) or getattr(kernel, "__wrapped__", None) or kernel
    bench = nki.benchmark(warmup=warmup, iters=iters)(fn)
    launched = bench[grid] if grid else bench
    launched(*args, **outs)
    result = getattr(launched, "benchmark_result", None) or bench.benchmark_result
    latency = result.nc_latency
    return {"p50": float(latency.get_latency_percentile(50)), "p99": float(latency.get_latency_percentile(99))}


def load_module(path: str, name: str, source: str | None = None) -> Any:
    """Execute a Python file (or `source` under its name) as module `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    if source is None:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    else:
        exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102 - the runner's whole purpose
    return module


def read_problem(opts: argparse.Namespace) -> str:
    """The trusted problem's text, read before anything of the candidate runs."""
    with open(os.path.abspath(opts.problem or opts.candidate), encoding="utf-8") as f:
        return f.read()


def load_problem(opts: argparse.Namespace, text: str | None = None) -> tuple[Any, dict[str, Any] | None]:
    """The trusted problem module (harness owner) from its file or its text read earlier, or an error."""
    path = os.path.abspath(opts.problem or opts.candidate)
    try:
        problem = load_module(path, "speedpatch_problem", text)
    except Exception as exc:  # noqa: BLE001
        if not opts.problem or _same_file(opts.problem, opts.candidate):  # the candidate's own error, with its line
            return None, describe(exc, path, "compile_error" if isinstance(exc, (SyntaxError, ImportError))
                                  else "runtime_error")
        return None, {"status": "harness_error", "message": f"the problem file does not load: {type(exc).__name__}: {exc}"}
    if not callable(getattr(problem, "reference", None)):
        return None, {"status": "harness_error", "message": "the file defines no reference(...) function"}
    return problem, None


def _same_file(a: str, b: str) -> bool:
    try:
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def copies_of(inputs: dict[str, Any]) -> list[Any]:
    """The arguments in order, arrays copied (non-tensor values are immutable or rebuilt per seed)."""
    return [v.copy() if isinstance(v, np.ndarray) else v for v in inputs.values()]


def expected_for(problem: Any, seed: int) -> tuple[dict[str, Any], Any, int]:
    """Inputs for `seed`, the reference's result on its own copy, and the matmul work it implies."""
    inputs = make_inputs(problem, seed)
    copies = copies_of(inputs)
    try:
        from speedpatch.targets.nki.isolation.physics import reference_work
    except ImportError:  # standalone on a Neuron host: no work accounting there
        return inputs, problem.reference(*copies), 0
    expected, macs = reference_work(problem.reference, copies)
    return inputs, expected, macs


def evaluate(opts: argparse.Namespace) -> dict[str, Any]:
    path = os.path.abspath(opts.candidate)
    try:
        with open(path, encoding="utf-8") as f:
            kernel_source = strip_harness(f.read())
    except OSError as exc:
        return {"status": "infra_error", "message": f"cannot read the candidate: {exc}"}
    if opts.mode == "emulate":
        return evaluate_emulated(opts, path, kernel_source)
    sys.path.append(os.path.dirname(path))
    nki_mod, why = import_nki()
    if nki_mod is None:
        return {"status": "infra_error", "message": why}
    problem, error = load_problem(opts)
    if error:
        return error
    return evaluate_in_process(opts, nki_mod, problem, kernel_source, path, seeds=random_seeds(problem, opts.seeds))


def _process_module() -> Any:
    """isolation/process.py loaded by path (stdlib only): importing it through the speedpatch package
    would first cost the package's start-up, which the kernel process need not wait for."""
    name = "speedpatch.targets.nki.isolation.process"
    if name not in sys.modules:
        where = os.path.join(os.path.dirname(os.path.abspath(__file__)), "isolation", "process.py")
        spec = importlib.util.spec_from_file_location(name, where)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module  # the package's own import of it finds this one
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return sys.modules[name]


def evaluate_emulated(opts: argparse.Namespace, path: str, kernel_source: str) -> dict[str, Any]:
    """Emulate mode: the kernel module boots in its own sandboxed process first (isolation/process.py is
    stdlib only), while this process imports the emulator, loads the problem and builds the inputs."""
    # Everything this process reads from the scratch folder is read before the kernel process exists (in
    # a fallback without bubblewrap it could write there), and that folder is not on sys.path here.
    try:
        problem_text = read_problem(opts)
    except OSError as exc:
        return {"status": "infra_error", "message": f"cannot read the problem: {exc}"}
    process = _process_module().KernelProcess(path)
    # The kernel process stops itself (dumping where it was) a little before this process would: the
    # timeout then names the kernel's line. An absolute time, so that its own start-up counts too.
    ends_at = opts.ends_at - min(1.0, 0.25 * opts.deadline) if opts.deadline > 0 else 0.0
    process.start(kernel_source, ends_at, opts.isolation, os.path.dirname(path))
    try:
        sys.path.insert(0, opts.pkgs)
        nki_mod, why = import_nki()
        problem, error = load_problem(opts, problem_text) if nki_mod is not None else (None, None)
    except BaseException:
        process.stop()
        raise
    if nki_mod is None or error:
        process.stop()
        return error or {"status": "infra_error", "message": why}
    from speedpatch.targets.nki.isolation.evaluate import evaluate_isolated

    return evaluate_isolated(opts, process, problem, random_seeds(problem, opts.seeds))


def evaluate_in_process(opts: argparse.Namespace, nki_mod: Any, problem: Any, kernel_source: str, path: str,
                        seeds: list[int]) -> dict[str, Any]:
    """The Neuron SDK path (simulate / benchmark): the real nki runs the kernel module in this process."""
    try:
        module = load_module(path, "speedpatch_candidate", kernel_source)
    except (SyntaxError, ImportError) as exc:
        return describe(exc, path, "compile_error")
    except Exception as exc:  # noqa: BLE001 - any error at import is the candidate's
        return describe(exc, path, "runtime_error")
    kernel = getattr(module, opts.kernel, None)
    if kernel is None or not callable(kernel):
        return {"status": "rejected", "message": f"kernel {opts.kernel!r} is not defined in the file"}
    try:
        grid = launch_grid(problem)
    except HarnessError as exc:
        return {"status": "harness_error", "message": str(exc)}
    inputs: dict[str, Any] = {}
    for n, seed in enumerate(seeds):
        try:
            inputs, expected, _ = expected_for(problem, seed)
        except Exception as exc:  # noqa: BLE001
            return harness_failure(exc)
        rtol, atol = tolerance(problem, as_list(expected), inputs)
        outs = output_buffers(problem)
        try:
            actual = run_kernel(opts.mode, nki_mod, kernel, copies_of(inputs), outs, grid, list(inputs))
        except Exception as exc:  # noqa: BLE001
            return describe(exc, path, "runtime_error")
        try:
            why = compare(actual, expected, rtol, atol, inputs)
        except HarnessError as exc:
            return {"status": "harness_error", "message": str(exc)}
        if why:
            return {"status": "incorrect", "message": f"input set {n + 1} (seed {seed}): {why}", "seeds": seeds}
    result: dict[str, Any] = {"status": "ok", "seeds": seeds, "message": f"correct on {len(seeds)} seeds",
                              "inputs": describe_inputs(inputs), "grid": [str(d) if _sdk_dimension(d) else int(d) for d in grid]}
    if opts.mode == "benchmark":
        inputs = make_inputs(problem, seeds[0])
        try:
            timing = benchmark(nki_mod, kernel, list(inputs.values()), output_buffers(problem), opts.warmup,
                               opts.iters, grid)
            result.update(value=timing["p50"], unit="us", timing=timing)
        except Exception as exc:  # noqa: BLE001
            return describe(exc, path, "runtime_error")
        result["nki_version"] = str(getattr(nki_mod, "__version__", "unknown"))
        if not (timing["p50"] > 0):
            return {"status": "rejected", "message": f"nki.benchmark reported {timing['p50']!r} us; a zero or "
                                                     f"missing figure is never a result"}
    return result


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("candidate")
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--problem", default="")
    ap.add_argument("--isolation", choices=("auto", "bwrap", "process"), default="auto")
    ap.add_argument("--mode", choices=("emulate", "simulate", "benchmark"), default="emulate")
    ap.add_argument("--seeds", default="")
    ap.add_argument("--pkgs", default="")
    ap.add_argument("--deadline", type=float, default=0.0)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    return ap.parse_args(argv)


def result_channel() -> Any:
    """The pipe the sandbox opened for the verdict ($SPEEDPATCH_RESULT_FD), or None (then stdout). Taken
    out of the environment at once: nothing this process starts is told about it (or inherits it)."""
    fd = os.environ.pop(RESULT_FD_ENV, "")
    if not fd.isdigit():
        return None
    try:
        return os.fdopen(int(fd), "w", encoding="utf-8")
    except OSError:
        return None


def main(argv: list[str], nonce: str) -> int:
    channel = result_channel()
    opts = parse(argv)
    opts.ends_at = time.time() + opts.deadline
    if opts.deadline > 0:
        # On a hang, print where every thread is before exiting: the backend names the kernel line.
        faulthandler.dump_traceback_later(opts.deadline, exit=True)
    try:
        result = evaluate(opts)
    except BaseException as exc:  # noqa: BLE001 - SystemExit/KeyboardInterrupt from the candidate too
        result = describe(exc, os.path.abspath(opts.candidate), "runtime_error")
    sys.stdout.flush()
    # In short numbered pieces: evaluation logs cut lines longer than 400 characters.
    payload = json.dumps(result, default=str)
    pieces = [payload[i : i + CHUNK] for i in range(0, len(payload), CHUNK)] or [""]
    text = "\n" + "\n".join(f"{RESULT_TAG} {nonce} {i} {piece}" for i, piece in enumerate(pieces)) + "\n"
    if channel is not None:
        channel.write(text)
        channel.close()
    else:
        print(text, end="", flush=True)
    return 0


if __name__ == "__main__":
    _nonce = sys.stdin.readline().strip()
    sys.exit(main(sys.argv[1:], _nonce))
