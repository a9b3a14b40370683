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
USER_CFLAGS = ["-O2", "-std=gnu11", "-fsanitize-coverage=trace-pc", "-DSPEEDPATCH_NATIVE=1"]
LINK_LIBS = ["-lm"]


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
    h.update(" ".join(MODEL_CFLAGS).encode())
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
            argv = [compiler(), *MODEL_CFLAGS, "-I", str(header.parent), "-I", str(MODEL_DIR), "-c", str(src), "-o", obj]
            return run_process(argv, cwd=tmp, timeout=max(1.0, timeout - (time.monotonic() - start)))

        with ThreadPoolExecutor(max_workers=len(sources)) as pool:  # one gcc per source file, in parallel
            results = list(pool.map(compile_one, sources, objects))
        outputs = [r.output for r in results]
        for res in results:
            if res.returncode != 0:
                return ProcResult(res.returncode, "model build failed:\n" + res.output, res.seconds, res.timed_out), None
        archive = tmp / "libgemmini_model.a"
        res = run_process(["ar", "rcs", str(archive), *objects], cwd=tmp, timeout=60)
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
    workdir = Path(workdir)
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
    return ProcResult(0, output, time.monotonic() - start, False), exe


def run_native(exe: Path, workdir: Path, timeout: float, stats_path: Path | None = None) -> ProcResult:
    """Run a natively built program. With stats_path, the model writes its statistics JSON there at exit.
    Exit status 3 with a `gemmini-model: error:` line means the program used the accelerator illegally."""
    env = dict(os.environ)
    env.pop("GEMMINI_MODEL_STATS", None)
    if stats_path is not None:
        env["GEMMINI_MODEL_STATS"] = str(stats_path)
    return run_process([str(exe)], cwd=Path(workdir), timeout=timeout, env=env)


def read_stats(stats_path: Path) -> dict[str, Any] | None:
    """The model's statistics, or None when the program wrote none (crash, timeout)."""
    try:
        return json.loads(Path(stats_path).read_text())
    except (OSError, ValueError):
        return None


def utilization(stats: dict[str, Any], cycles: float) -> float:
    """Fraction of the array's peak used over `cycles`: MACs / (DIM*DIM) / cycles."""
    dim = int(stats.get("dim", 16))
    return float(stats.get("macs", 0)) / (dim * dim) / cycles if cycles > 0 else 0.0
