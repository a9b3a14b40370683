"""Trusted runner for KernelBench-style problems (copied next to the problem on the GPU host and run
there; self-contained: standard library + torch only).

problem.py   the run's baseline file: above `# speedpatch: solution` the PyTorch reference `Model`,
             `get_inputs()`, `get_init_inputs()`; below it the baseline `ModelNew` (inline CUDA)
candidate.py the candidate file; only its `ModelNew` is used
Same discipline as the .cu harness: correctness on several seeds against `Model` (atol=rtol=1e-4 fp32,
1e-2 fp16/bf16), a constant-output check, warm-ups, an L2 flush before every trial, CUDA events,
baseline and candidate alternated (the PyTorch reference timed after them, on a host copy of the candidate's
inputs; no model computes the candidate's answer before it), the output re-checked after timing, one
`SPEEDPATCH_RESULT {json}` line. The candidate's extensions are checked (linked symbols) before they are loaded.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import secrets
import statistics
import subprocess
import sys
import types
from collections.abc import Callable
from typing import Any

RESULT_FILE: list[str] = []  # set from --result: the line is also written there, to be read whole


NONCE: list[str] = []  # from --nonce stdin: read before the candidate is imported; only in the channels' copy


def emit(status: str, message: str, **extra: Any) -> None:
    data = {"status": status, "message": message, **extra}
    print("SPEEDPATCH_RESULT " + json.dumps(data), flush=True)
    sealed = "SPEEDPATCH_RESULT " + json.dumps({**({"nonce": NONCE[0]} if NONCE else {}), **data}) + "\n"
    fd = os.environ.get("SPEEDPATCH_RESULT_FD")
    if fd:  # the sandbox's private result pipe
        try:
            os.write(int(fd), sealed.encode())
        except (OSError, ValueError):
            pass
    for path in RESULT_FILE:
        with open(path, "w") as f:
            f.write(sealed)


def binomial_half_cdf(k: int, n: int) -> float:
    return min(1.0, sum(math.comb(n, i) for i in range(0, min(k, n) + 1)) / 2.0**n)


def summarize(xs: list[float], confidence: float = 0.95) -> dict[str, Any]:
    """Median with a distribution-free order-statistic confidence interval (same as speedpatch_stats.h)."""
    if not xs:
        return {"median": None, "low": None, "high": None, "min": None, "coverage": 0.0, "n": 0}
    s = sorted(xs)
    n = len(s)
    best = 0
    for j in range(1, n // 2 + 1):
        if binomial_half_cdf(j - 1, n) <= (1 - confidence) / 2:
            best = j
        else:
            break
    if best == 0:
        low, high, coverage = s[0], s[-1], 1 - 2 * 0.5**n
    else:
        low, high, coverage = s[best - 1], s[n - best], 1 - 2 * binomial_half_cdf(best - 1, n)
    return {"median": statistics.median(s), "low": low, "high": high, "min": s[0], "coverage": coverage, "n": n}


def load(path: str, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# Ops ModelNew may dispatch: allocation, views, copies and queries; never the computation itself.
ALLOWED_OPS = frozenset(f"aten::{op}" for op in (
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "ones",
    "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full", "fill_", "zero_", "view", "_unsafe_view",
    "reshape", "_reshape_alias", "as_strided", "expand", "permute", "transpose", "t", "unsqueeze", "squeeze",
    "flatten", "detach", "alias", "slice", "select", "contiguous", "clone", "copy_", "_to_copy", "to", "lift_fresh",
    "resize_", "split", "chunk", "narrow", "unbind", "size", "stride", "sym_size", "sym_stride", "sym_numel",
    "is_contiguous", "_local_scalar_dense", "item", "record_stream"))
# Symbols an extension may not import (it links libtorch, c10 and the CUDA runtime; these are not a kernel).
FOREIGN_SYMBOL = re.compile(r"^(?:cublas|cudnn|cufft|cusparse|cusolver|curand|cutlass|nccl|nvrtc)\w*|^dl(?:open|sym|vsym|mopen)$"
                            r"|^pthread_create$|^cudaStream(?:Create|BeginCapture)\w*|^cudaEvent\w*|^cudaGraph\w*"
                            r"|^cudaLaunchHostFunc$|^cu[A-Z]\w*|^f?open(?:64)?$|^fopen\w*|^system$|^popen$|^fork$|^exec[lv]\w*"
                            r"|^getenv$|^PyRun_\w+|^Py_CompileString\w*|^PyEval_EvalCode\w*|^_ZNSt6thread\w+"
                            # a stream of c10's pool or the caller's own: the runner's events, recorded on the current
                            # stream, would not see the work; raw system calls and page protection
                            r"|17getStreamFromPool|20setCurrentCUDAStream|21getStreamFromExternal"
                            r"|^cudaStreamAddCallback$|^syscall$|^mprotect$|^p?write(?:v|64)?$"
                            # files and descriptors by other names (the result pipe is a descriptor; the result file
                            # is two folders up), processes, ending the process or running code as it ends, other
                            # processes' GPU memory, and the persisting-L2 controls the L2 flush cannot evict
                            r"|^(?:fdopen|freopen\w*|creat(?:64)?|openat(?:64)?|__open\w*|__openat\w*|v?dprintf|dup[23]?"
                            r"|posix_spawnp?|vfork|clone3?|_exit|_Exit|quick_exit|at_quick_exit|atexit|on_exit|signal"
                            r"|sigaction|kill|send(?:to|msg)?|socket|connect|ptrace|process_vm_\w+|environ|__environ"
                            r"|secure_getenv|cudaIpc\w+|cudaStreamSetAttribute|cudaCtxResetPersistingL2Cache"
                            r"|cudaDeviceSetLimit|cudaDeviceReset)$"
                            r"|basic_(?:i|o)?fstream|basic_filebuf|^_ZNSt10filesystem|^_ZNSt7__cxx1110filesystem"
                            # torch's dispatcher: kernels registered for aten ops (TORCH_LIBRARY_IMPL: the runner's
                            # comparison and the reference would run them), calls redispatched below the Python key or
                            # keys set in the thread's key set (the recorded ops would miss them). Not the guards and
                            # key-set reads: torch::empty_like's own inline code excludes autograd keys that way.
                            # the loaded libraries' own tables: from them a function is found without its name
                            # being an undefined symbol here (dlsym in all but name)
                            r"|^(?:dl_iterate_phdr|_r_debug|dladdr\w*|dlinfo|_dl_\w+|getauxval)$"
                            r"|^_ZN5torch7Library|^_ZN5torch6detail16TorchLibraryInit|^_ZN3c1017RegisterOperators"
                            r"|redispatch|tls_set_dispatch_key"
                            # whether a dispatch mode is active: whether this call is the one being recorded
                            r"|TorchDispatchModeTLS|PythonTorchFunctionTLS"
                            # torch's own kernels called past the dispatcher, which the recorded ops never show:
                            # at::cuda::mm(const Tensor&, ...) (ATen/CUDAFunctions.h), at::native::*, the composite
                            # namespaces; ATen's cuBLAS wrappers and library handles
                            r"|^_ZN2at(?:4cuda|3cpu|4meta|6native|\d\dcomposite[a-z]+)\d.*NS_6TensorE"
                            r"|^_ZN2at4cuda4blas|getCurrentCUDA(?:Blas|BlasLt|SolverDn|Sparse)Handle")


def foreign_symbols(path: str) -> list[str]:
    """Undefined dynamic symbols of the shared object at `path` that a kernel has no business with; one that
    cannot be read is foreign as a whole (nm ships with the linker the extension was built with)."""
    try:
        done = subprocess.run(["nm", "-D", "--undefined-only", path], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return [f"(unreadable: nm failed on {os.path.basename(path)}: {exc})"]
    if done.returncode != 0:
        return [f"(unreadable: nm failed on {os.path.basename(path)}: {done.stderr.strip()[:200]})"]
    found = set()
    for line in done.stdout.splitlines():
        symbol = line.split()[-1].split("@")[0] if line.split() else ""
        if FOREIGN_SYMBOL.search(symbol):
            found.add(symbol)
    return sorted(found)


def extension_symbols(folder: str) -> list[str]:
    """Undefined dynamic symbols of the extensions built under `folder` that a kernel has no business with."""
    found: set[str] = set()
    for root, _, files in os.walk(folder):
        for name in files:
            if name.endswith(".so"):
                found.update(foreign_symbols(os.path.join(root, name)))
    return sorted(found)


def check_extensions_before_loading(folder: str) -> None:
    """From now on, an extension module under `folder` is refused (Stop) before the dynamic loader maps it when
    it imports a foreign symbol. Read only after the import, its static initializers (`static int x = f();`,
    `__attribute__((constructor))`), the candidate's module-level calls into it and its model's constructor had
    all run before the check (red-team: a constructor that opened files ran, then the check came)."""
    import importlib.machinery

    loader = importlib.machinery.ExtensionFileLoader
    original = loader.create_module
    root = os.path.realpath(folder)

    def create_module(self: Any, spec: Any) -> Any:
        origin = os.path.realpath(spec.origin or self.path)
        if os.path.commonpath([origin, root]) == root:
            foreign = foreign_symbols(origin)
            if foreign:
                raise Stop("rejected", f"the candidate's compiled extension {os.path.basename(origin)} calls "
                           + ", ".join(foreign[:8]) + ": reference libraries, streams/events, threads, dynamic "
                           "loading, files and processes are not a kernel (refused before it was loaded)", 1)
        return original(self, spec)

    loader.create_module = create_module  # type: ignore[method-assign]


def foreign_ops(model: Any, inputs: list[Any]) -> list[str]:
    """The aten ops outside ALLOWED_OPS that one call of `model` dispatches (from Python or C++)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: set[str] = set()

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                               kwargs: dict[str, Any] | None = None) -> Any:
            seen.add(str(func._schema.name))
            return func(*args, **(kwargs or {}))

    fresh = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad(), Record():
        model(*fresh)
    torch.cuda.synchronize()
    return sorted(op for op in seen if op not in ALLOWED_OPS)


def tolerance(dtype: Any) -> float:
    import torch

    return 1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-4


class Stop(Exception):
    """Ends the run with one result line: raised by a step that has the verdict, emitted once by main."""

    def __init__(self, status: str, message: str, code: int) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True)
    ap.add_argument("--candidate", required=True)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--result", default="")
    ap.add_argument("--nonce", default="")
    return ap.parse_args(argv)


def import_torch() -> Any:
    """torch, with a CUDA device it can see."""
    try:
        import torch
    except ImportError as exc:
        raise Stop("no_device", f"torch is not importable on this host: {exc}", 3) from exc
    if not torch.cuda.is_available():
        raise Stop("no_device", "no CUDA device visible to torch", 3)
    return torch


def load_files(args: argparse.Namespace) -> tuple[Any, Any]:
    """The problem and candidate modules (their load_inline extensions compile here)."""
    try:
        # Separate extension build folders: baseline and candidate often give load_inline the same name,
        # and must never end up sharing one compiled extension.
        os.environ["TORCH_EXTENSIONS_DIR"] = os.path.abspath("torch_ext_problem")
        problem = load(args.problem, "sp_problem")
        os.environ["TORCH_EXTENSIONS_DIR"] = os.path.abspath("torch_ext_candidate")
        check_extensions_before_loading(os.environ["TORCH_EXTENSIONS_DIR"])
        candidate = load(args.candidate, "sp_candidate")
    except Stop:
        raise
    except Exception as exc:  # compile errors of load_inline land here
        raise Stop("runtime_error", f"loading the problem or candidate failed: {type(exc).__name__}: {exc}", 4) from exc
    for module, what in ((problem, "problem"), (candidate, "candidate")):
        if not hasattr(module, "ModelNew"):
            raise Stop("runtime_error", f"the {what} file defines no ModelNew", 4)
    return problem, candidate


def build_models(torch: Any, problem: Any, candidate: Any, seed: int, device: Any) -> dict[str, Any]:
    """The reference Model, the baseline's and the candidate's ModelNew, all with the same weights."""

    def build(cls: Any) -> Any:
        torch.manual_seed(seed)  # same weights for every model, as KernelBench does
        return cls(*problem.get_init_inputs()).to(device).eval()

    try:
        return {"reference": build(problem.Model), "baseline": build(problem.ModelNew),
                "candidate": build(candidate.ModelNew)}
    except Exception as exc:
        raise Stop("runtime_error", f"constructing the models failed: {type(exc).__name__}: {exc}", 4) from exc


def input_sets(torch: Any, problem: Any, args: argparse.Namespace, device: Any) -> list[list[Any]]:
    """One set of inputs per seed (args.seed, args.seed + 1, ...), on the device."""
    sets = []
    for s in range(args.seeds):
        torch.manual_seed(args.seed + s)
        sets.append([x.to(device) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()])
    return sets


def call(torch: Any, model: Any, inputs: list[Any]) -> Any:
    """One call of `model` on fresh copies of `inputs` (a model that writes its inputs affects no other)."""
    with torch.no_grad():
        fresh = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        return model(*fresh)


def mismatch(torch: Any, got: Any, want: Any) -> str:
    """Why `got` is not the reference output `want` within the tolerance of its dtype; "" when it is."""
    if isinstance(got, torch.Tensor) and type(got) is not torch.Tensor:
        # torch ops keep a subclass's type, so the comparison below would call its own methods (`bad.sum()`)
        return (f"output is a {type(got).__name__}, a subclass of torch.Tensor: its methods would answer this "
                "comparison; return a plain tensor")
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return f"output shape {getattr(got, 'shape', type(got))} != reference {tuple(want.shape)}"
    tol = tolerance(want.dtype)
    g, w = got.float(), want.float()
    bad = ~torch.isclose(g, w, rtol=tol, atol=tol) | ~torch.isfinite(g)
    count = int(bad.sum())
    return f"{count} of {w.numel()} outputs differ (max abs err {float((g - w).abs().max()):.3g})" if count else ""


def incorrect(name: str, why: str) -> Stop:
    return Stop("baseline_incorrect" if name == "baseline" else "incorrect", f"{name} {why}", 1)


def reject_foreign_work(candidate_model: Any, inputs: list[Any]) -> None:
    """What the candidate runs, not how it spells it: its extension's linked symbols and the torch ops it
    dispatches (a reference op called from Python or from C++ inside the extension is seen either way)."""
    foreign = extension_symbols(os.path.abspath("torch_ext_candidate"))
    if foreign:
        raise Stop("rejected", "the candidate's compiled extension calls " + ", ".join(foreign[:8]) +
                   ": reference libraries, streams/events, threads, dynamic loading and I/O are not a kernel", 1)
    ops = foreign_ops(candidate_model, inputs)
    if ops:
        raise Stop("rejected", "ModelNew runs PyTorch ops instead of computing them in its own kernels: "
                   + ", ".join(ops[:8]), 1)


def reference_outputs(torch: Any, models: dict[str, Any], sets: list[list[Any]], seed: int) -> list[Any]:
    """The reference output of every input set, after baseline and candidate are checked against it."""
    wants = []
    try:
        for s, inputs in enumerate(sets):
            # Both sides run before the reference computes this seed's answer: while the candidate runs on
            # a seed for the first time, the gold output does not exist yet.
            # the candidate first: the baseline's output of the same inputs would be readable during its call
            outs = {name: call(torch, models[name], inputs) for name in ("candidate", "baseline")}
            want = call(torch, models["reference"], inputs)
            tol = tolerance(want.dtype)
            flat = want.float().flatten()
            for c in (0.0, float(flat.mean()), float((flat.max() + flat.min()) / 2)):
                if bool(torch.all((flat - c).abs() <= tol + tol * flat.abs())):
                    raise Stop("bad_problem", f"the reference output for seed {seed + s} is matched by the "
                               f"constant {c:.4g}", 2)
            wants.append(want)
            for name in ("baseline", "candidate"):
                why = mismatch(torch, outs[name], want)
                if why:
                    raise incorrect(name, f"on seed {seed + s}: {why}")
    except Stop:
        raise
    except Exception as exc:
        raise Stop("runtime_error", f"running failed: {type(exc).__name__}: {exc}", 4) from exc
    return wants


def l2_flush_buffer(torch: Any, props: Any, device: Any) -> tuple[Any, int]:
    """A buffer 1.5x the device's L2 (64 MiB at least), and the L2 size it was sized for."""
    l2 = int(getattr(props, "L2_cache_size", 0) or 64 << 20)
    return torch.empty(max(l2 * 3 // 2, 64 << 20) // 4, dtype=torch.int32, device=device), l2


# Untimed calls of the candidate whose dispatched ops are recorded, at positions in the timing loop drawn at
# random per run: the schedule of calls is fixed by the command line, so with the first call alone recorded a
# model counting its calls (in `self`, or a static in its extension) dispatched the reference op in every
# later one. A model that does so in half its calls escapes 8 random recordings with probability 1/256.
RECORDED_CALLS = 8


def recorded_trials(trials: int, rng: Any = None) -> set[int]:
    """The trials before which the candidate's ops are recorded (RECORDED_CALLS of them, or every trial)."""
    rng = rng or secrets.SystemRandom()
    return set(rng.sample(range(trials), min(RECORDED_CALLS, trials)))


def trial_order(i: int) -> list[str]:
    """Who runs in timed trial `i`, in order: baseline and candidate alternate (reversed every other trial), and the
    reference runs last. The candidate never runs after another model on its own inputs: with the order reversed
    whole (reference, candidate, baseline), the reference's output of the same inputs sat in device memory during
    the candidate's call, at an offset the caching allocator makes the same every trial, for a kernel reading
    past its own buffers to copy (red-team). The baseline runs on a set of its own (see time_models)."""
    pair = ["baseline", "candidate"] if i % 2 == 0 else ["candidate", "baseline"]
    return [*pair, "reference"]


def time_models(torch: Any, models: dict[str, Any], sets: list[list[Any]], flush: Any,
                args: argparse.Namespace, wants: list[Any] | None = None, recorded: set[int] | None = None,
                fresh: Callable[[], list[Any]] | None = None) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """CUDA-event milliseconds of every trial per model, and each model's last output with its input set (None
    for a fresh set). Baseline and candidate alternate (reversed every other trial), the reference runs last
    (trial_order); L2 is flushed before each. With `fresh`, candidate and reference run on a new input set from it
    and the candidate's output is checked against the reference's of the same trial, while the baseline runs on a
    seed's set; else the trials rotate through `sets` (the baseline one set ahead) and, with `wants` (the
    reference output of each set), each timed output of the candidate is checked against it. Before each trial
    in `recorded`, one untimed call of the candidate on that trial's inputs has its ops recorded."""
    times: dict[str, list[float]] = {"reference": [], "baseline": [], "candidate": []}
    last: dict[str, Any] = {}
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    order = ["baseline", "candidate", "reference"]
    kept = {"reference": model_state(torch, models["reference"])}  # the gold's weights (the baseline may keep state)
    try:
        for i in range(args.warmup):
            for name in order:
                call(torch, models[name], sets[i % len(sets)])
        torch.cuda.synchronize()
        for i in range(args.trials):
            set_index = (i + 1) % len(sets)
            trial = fresh() if fresh is not None else sets[set_index]
            # the baseline runs on a seed's set, never the candidate's: its output of those inputs would be readable
            base_index = set_index if fresh is not None else (set_index + 1) % len(sets)
            # The trial's inputs as they are before any model runs, kept in host memory: the reference gets them
            # from here, after the candidate ran. In device memory they were the candidate's to overwrite (a kernel
            # writing past its own buffers: zeroed inputs make the reference's output as trivial as the
            # candidate's); its kernels do not reach pageable host memory.
            host = [x.cpu() if isinstance(x, torch.Tensor) else x for x in trial]
            if recorded and i in recorded:
                # on a set of its own: the trial's inputs would reach the model before its timed call
                ops = foreign_ops(models["candidate"], fresh() if fresh is not None else trial)
                if ops:
                    raise Stop("rejected", f"ModelNew runs PyTorch ops in the timing loop (a call before timed call "
                               f"{i + 1} of {args.trials}) instead of computing them in its own kernels: "
                               + ", ".join(ops[:8]), 1)
            outs: dict[str, Any] = {}
            for name in trial_order(i):
                # Fresh copies per call: a model that writes its inputs cannot affect the next one.
                index = base_index if name == "baseline" else None if fresh is not None else set_index
                if name == "reference":
                    inputs = [h.to(x.device) if isinstance(x, torch.Tensor) else h for h, x in zip(host, trial, strict=True)]
                else:
                    given = sets[base_index] if name == "baseline" else trial
                    inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in given]
                flush.fill_(i)  # evict L2: writes 1.5x its size
                torch.cuda.synchronize()
                with torch.no_grad():
                    start.record()
                    out = models[name](*inputs)
                    stop.record()
                torch.cuda.synchronize()  # everything the call launched has finished
                times[name].append(start.elapsed_time(stop))
                last[name] = (out, index)
                outs[name] = out
                # The schedule is fixed by the command line: with only the last output checked, a model counting
                # its calls could skip the work in the ones it knows are only timed.
                why = (mismatch(torch, out, wants[set_index]) if fresh is None and wants is not None
                       and name == "candidate" else "")
                if why:
                    raise incorrect(name, f"in the timing loop (timed call {i + 1} of {args.trials}, seed "
                                          f"{args.seed + set_index}): {why}")
            why = mismatch(torch, outs["candidate"], outs["reference"]) if fresh is not None else ""
            if why:
                raise incorrect("candidate", f"in the timing loop (timed call {i + 1} of {args.trials}, on fresh "
                                             f"inputs): {why}")
        for name, state in kept.items():
            if not all(torch.equal(now, before) for now, before in zip(model_state(torch, models[name]), state,
                                                                        strict=True)):
                raise Stop("rejected", f"the {name}'s weights changed during the timing loop: a kernel of the "
                           "candidate's wrote outside its own buffers", 1)
    except Stop:
        raise
    except Exception as exc:
        raise Stop("runtime_error", f"timing failed: {type(exc).__name__}: {exc}", 4) from exc
    return times, last


def model_state(torch: Any, model: Any) -> list[Any]:
    """A host copy of a trusted model's parameters and buffers: what a kernel writing past its own buffers could
    change in device memory (the reference's weights zeroed make its output as trivial as the candidate's)."""
    tensors = [*getattr(model, "parameters", list)(), *getattr(model, "buffers", list)()]
    # bytes, not values: an uninitialized buffer's NaN is not equal to itself
    return [t.detach().cpu().reshape(-1).view(torch.uint8).clone() for t in tensors if isinstance(t, torch.Tensor)]


def recheck(torch: Any, last: dict[str, Any], wants: list[Any], models: dict[str, Any] | None = None,
            sets: list[list[Any]] | None = None) -> None:
    """The outputs of the timing loop's last calls are still right (a kernel can be right once, then drift);
    when they were on a fresh set, each side runs once more on a seed's set (not the first: pointer caches)."""
    for name in ("baseline", "candidate"):
        out, set_index = last[name]
        if set_index is None and models is not None and sets is not None:
            set_index = 1 % len(sets)
            try:
                out = call(torch, models[name], sets[set_index])
            except Exception as exc:
                raise Stop("runtime_error", f"running failed: {type(exc).__name__}: {exc}", 4) from exc
        why = mismatch(torch, out, wants[set_index])
        if why:
            raise incorrect(name, f"after the timing loop: {why}")


def fresh_inputs(torch: Any, problem: Any, device: Any) -> Callable[[], list[Any]]:
    """A maker of input sets never seen before, for the timed trials: get_inputs() under a seed drawn from the
    system (not from --seed): with the seeds' sets rotated through the trials, a model keeping each input set it
    saw with its output, and copying the kept output when the inputs matched, was correct and timed at copy
    speed. The gold of a fresh set is the reference Model's output on it (it runs in every trial)."""

    def make() -> list[Any]:
        torch.manual_seed(secrets.randbits(63))
        return [x.to(device) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]

    return make


def run(args: argparse.Namespace) -> None:
    """Check and time the problem's baseline and the candidate; emits the ok line, or raises Stop."""
    torch = import_torch()
    problem, candidate = load_files(args)
    device = torch.device("cuda")
    models = build_models(torch, problem, candidate, args.seed, device)
    sets = input_sets(torch, problem, args, device)
    reject_foreign_work(models["candidate"], sets[0])
    wants = reference_outputs(torch, models, sets, args.seed)
    props = torch.cuda.get_device_properties(device)
    flush, l2 = l2_flush_buffer(torch, props, device)
    times, last = time_models(torch, models, sets, flush, args, wants, recorded_trials(args.trials),
                              fresh_inputs(torch, problem, device))
    recheck(torch, last, wants, models, sets)
    ratios = [b / c for b, c in zip(times["baseline"], times["candidate"], strict=True) if c > 0]
    summary = {name: summarize(values) for name, values in times.items()}
    emit(
        "ok",
        f"correct on {args.seeds} seeds; median {summary['candidate']['median']:.4g} ms vs baseline "
        f"{summary['baseline']['median']:.4g} ms (PyTorch reference {summary['reference']['median']:.4g} ms)",
        problem="kernelbench", shapes=", ".join(str(tuple(x.shape)) for x in sets[0] if isinstance(x, torch.Tensor)),
        device={"name": props.name, "cc": f"{props.major}.{props.minor}", "sms": props.multi_processor_count,
                "l2_bytes": l2, "torch": torch.__version__, "cuda": torch.version.cuda},
        seeds=args.seeds, seed0=args.seed, warmup=args.warmup, trials=args.trials, flush_bytes=flush.numel() * 4,
        rtol=tolerance(wants[0].dtype), atol=tolerance(wants[0].dtype),
        baseline_ms=summary["baseline"], candidate_ms=summary["candidate"], reference_ms=summary["reference"],
        speedup=summarize(ratios),
    )


def main() -> int:
    args = parse_args()
    if args.result:
        RESULT_FILE.append(args.result)
    if args.nonce == "stdin":
        NONCE.append(sys.stdin.readline().strip())
    try:
        run(args)
    except Stop as stop:
        emit(stop.status, stop.message)
        return stop.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
