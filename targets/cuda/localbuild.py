"""Build an A/B binary on this machine, one object per translation unit, with an object cache.

The harness (main.cu) and the baseline change rarely during a search and the engine re-evaluates
identical sources, so objects are cached by the hash of everything that goes into them: the unit, the
flags, the compiler, and the content of every header the compiler read (its `-MD` dependency list,
kept next to the object as a manifest), so an edited header in the problem's folder rebuilds, and the
same problem in another folder does not. Every unit is built with `-Xptxas -v` so resource usage
(registers, shared memory, spills) is known for any backend that builds here. Cached objects keep their
compiler output alongside, so feedback survives a cache hit.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from speedpatch.model import COMPILE_ERROR, INFRA_ERROR, REJECTED, TIMEOUT, Evaluation
from speedpatch.targets.base import run_process
from speedpatch.targets.cuda import objcheck
from speedpatch.targets.cuda.build import HARNESS_ONLY, INCLUDE_DIR, Units, nvcc_version, write_units
from speedpatch.targets.cuda.problem import ProblemLayout


def default_cache_dir(settings: dict) -> Path:
    configured = settings.get("cache_dir")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "speedpatch" / "cuda"


def kit_version() -> str:
    """Changes whenever a kit header changes, so cached objects are rebuilt."""
    digest = hashlib.sha256()
    for header in sorted(INCLUDE_DIR.iterdir()):
        if header.is_file():
            digest.update(header.read_bytes())
    return digest.hexdigest()[:12]


@dataclass
class Built:
    evaluation: Evaluation | None  # set when the build failed
    compiler_output: str  # ptxas -v output of the candidate unit
    binary: Path | None
    notes: list[str] = field(default_factory=list)  # what the object inspection could not check, and why
    sass: str | None = None  # the candidate object's SASS, read by the inspection (None: not read)


def _compile_object(nvcc: str, unit: str, units: Units, build: Path, flags: list[str], includes: list[str],
                    cache: Path, timeout: float) -> tuple[int | None, str, bool]:
    """(returncode or None on timeout, compiler output, from_cache)."""
    folders = [inc[2:] for inc in includes if inc != "-I."]
    # The problem's folder enters the key by position, not by path: what matters is what was read from it,
    # which the manifest holds.
    spelled = ["-I." if inc == "-I." else f"-I<folder {i}>" for i, inc in enumerate(includes)]
    key = hashlib.sha256("\0".join([unit, units.files[unit], units.files["harness.cuh"], *flags, *spelled,
                                    nvcc_version(nvcc), kit_version()]).encode()).hexdigest()[:24]
    manifest = cache / f"{key}.deps"
    target = build / unit.replace(".cu", ".o")
    hit = _cached(cache, manifest, folders)
    if hit is not None:
        shutil.copyfile(hit.with_suffix(".o"), target)
        _touch(hit.with_suffix(".o"), hit.with_suffix(".log"), manifest)  # recently used: pruned last
        return 0, hit.with_suffix(".log").read_text(), True
    depfile = build / unit.replace(".cu", ".d")
    done = run_process([nvcc, *flags, "-Xptxas", "-v", *includes, "-MD", "-MF", depfile.name, "-c", unit,
                        "-o", target.name], build, timeout)
    if done.returncode == 0 and not done.timed_out:
        headers = _headers(depfile, build, folders)
        if headers is not None:  # else: something read is not a plain file; not cached
            stem = cache / _object_key(key, headers)
            cache.mkdir(parents=True, exist_ok=True)
            _store(target.read_bytes(), stem.with_suffix(".o"))
            _store(done.output.encode(), stem.with_suffix(".log"))
            _store("\n".join(f"{name}\t{digest}" for name, digest in headers.items()).encode(), manifest)
            prune(cache)
    return (None if done.timed_out else done.returncode), done.output, False


# A search compiles every candidate once, so without a bound the cache grows by every object of every run
# (~60 MB after one run of this repository's tests). Objects beyond this many go, least recently used first.
CACHE_OBJECTS = 2000


def _touch(*paths: Path) -> None:
    for path in paths:
        try:
            os.utime(path)
        except OSError:
            pass  # pruned meanwhile by another evaluation: the next lookup rebuilds it


def prune(cache: Path, keep: int | None = None) -> int:
    """Delete the least recently used cached objects (with their compiler output) beyond `keep`
    (CACHE_OBJECTS), and the dependency lists and device-code reports older than every object kept; returns
    how many objects went."""
    keep = CACHE_OBJECTS if keep is None else keep
    try:
        objects = sorted(cache.glob("*.o"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return 0
    gone = objects[:max(0, len(objects) - keep)]
    for obj in gone:
        for path in (obj, obj.with_suffix(".log")):
            path.unlink(missing_ok=True)
    if gone:
        oldest_kept = min((p.stat().st_mtime for p in objects[len(gone):] if p.exists()), default=float("inf"))
        for side in [*cache.glob("*.deps"), *cache.glob("*.devcode.json")]:  # written with or after their object
            try:
                if side.stat().st_mtime < oldest_kept:
                    side.unlink(missing_ok=True)
            except OSError:
                pass
    return len(gone)


def _store(data: bytes, path: Path) -> None:
    tmp = path.with_suffix(f".{os.getpid()}.{time.monotonic_ns()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)  # atomic: concurrent evaluations never read half an object


def _object_key(key: str, headers: dict[str, str]) -> str:
    return hashlib.sha256("\0".join([key, *(f"{n}={d}" for n, d in sorted(headers.items()))]).encode()).hexdigest()[:24]


def _spelled(path: str, folders: list[str]) -> str:
    """A header's name in the manifest: relative to the problem's folder where it lies there."""
    for i, folder in enumerate(folders):
        if path.startswith(folder.rstrip("/") + "/"):
            return f"<folder {i}>/{path[len(folder.rstrip('/')) + 1:]}"
    return path


def _unspelled(name: str, folders: list[str]) -> str:
    for i, folder in enumerate(folders):
        prefix = f"<folder {i}>/"
        if name.startswith(prefix):
            return os.path.join(folder, name[len(prefix):])
    return name


def _digest(path: str) -> str | None:
    """The content hash of a plain file; None for anything else (a device, a pipe, a missing file)."""
    try:
        if not os.path.isfile(path) or path.startswith(("/proc/", "/sys/", "/dev/")):
            return None
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:24]
    except OSError:
        return None


def _headers(depfile: Path, build: Path, folders: list[str]) -> dict[str, str] | None:
    """Every file the compiler read outside the build folder (whose contents the key holds), by name, with
    its content hash; None when one cannot be hashed."""
    try:
        text = depfile.read_text()
    except OSError:
        return None
    # Make syntax: `target : dep dep \`, a space in a name escaped as `\ `.
    _, colon, listed = text.replace("\\\n", " ").replace("\\ ", "\0").partition(": ")
    if not colon:
        return None
    names = [w.replace("\0", " ") for w in listed.split()]
    headers: dict[str, str] = {}
    root = str(build.resolve())
    for name in names:
        path = os.path.normpath(os.path.join(root, name))
        if path.startswith(root + "/"):
            continue
        digest = _digest(path)
        if digest is None:
            return None
        headers[_spelled(path, folders)] = digest
    return headers


def _cached(cache: Path, manifest: Path, folders: list[str]) -> Path | None:
    """The cached object's path without suffix, when every header listed for the key still hashes the same."""
    try:
        lines = manifest.read_text().splitlines()
    except OSError:
        return None
    headers: dict[str, str] = {}
    for line in lines:
        name, _, recorded = line.partition("\t")
        if _digest(_unspelled(name, folders)) != recorded:
            return None
        headers[name] = recorded
    stem = cache / _object_key(manifest.stem, headers)
    return stem if stem.with_suffix(".o").exists() and stem.with_suffix(".log").exists() else None


def build_local(units: Units, build: Path, nvcc: str, arch_flags: list[str], includes: list[str], cache: Path,
                deadline: float, layout: ProblemLayout | None = None) -> Built:
    """Compile the units (in parallel: they are independent), inspect the candidate's object (objcheck.py;
    `layout` gives the problem's precision and allowed libraries), then link them into `bench`."""
    checked = compile_checked(units, build, nvcc, arch_flags, includes, cache, deadline, layout)
    if checked.evaluation is not None:
        return checked
    candidate_output, notes, sass = checked.compiler_output, checked.notes, checked.sass
    names = [u for u in ("main.cu", "baseline.cu", "candidate.cu") if u in units.files]
    arch = next((f for f in arch_flags if f.startswith("-arch=")), "")
    objects = [u.replace(".cu", ".o") for u in names]
    # main.o first: where the harness and the candidate both instantiate an inline function or template,
    # the linker keeps the first copy, the harness's.
    linked = run_process([nvcc, *([arch] if arch else []), *objects, "-o", "bench"], build,
                         max(1.0, deadline - time.monotonic()))
    if linked.returncode != 0 or linked.timed_out:
        return Built(Evaluation(status=COMPILE_ERROR, message=LINK_MESSAGE, log=linked.output), candidate_output, None)
    if HARNESS_ONLY in units.files:
        interposed = _interpositions(build, [build / "main.o", build / "baseline.o"])
        if interposed:
            return Built(_rejection([objcheck.Finding(
                "object", "the linked program exports " + ", ".join(f"`{n}`" for n in interposed[:5])
                + " from the solution to its shared libraries: it would replace the libraries' own",
                layout.solution_line if layout else 0, 0)]), candidate_output, None, notes)
    return Built(None, candidate_output, build / "bench", notes, sass)


def compile_checked(units: Units, build: Path, nvcc: str, arch_flags: list[str], includes: list[str], cache: Path,
                    deadline: float, layout: ProblemLayout | None = None) -> Built:
    """Compile every unit to an object and inspect the candidate's (objcheck.py), localizing its symbols when
    it passes; no link. cuda-ssh runs this on this machine before the remote build, as its object check."""
    write_units(units, build)
    names = [u for u in ("main.cu", "baseline.cu", "candidate.cu", HARNESS_ONLY) if u in units.files]
    left = deadline - time.monotonic()
    if left <= 1:
        return Built(Evaluation(status=TIMEOUT, message="the build ran out of time"), "", None)
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        futures = {u: pool.submit(_compile_object, nvcc, u, units, build, arch_flags, includes, cache, left)
                   for u in names}
        results = {u: f.result() for u, f in futures.items()}
    code, candidate_output, _ = results["candidate.cu"]
    if code is None:
        return Built(Evaluation(status=TIMEOUT, message="nvcc did not finish in time", log=candidate_output), "", None)
    if code != 0:
        return Built(Evaluation(status=COMPILE_ERROR, message="nvcc failed", log=candidate_output), candidate_output, None)
    for unit in ("main.cu", "baseline.cu", HARNESS_ONLY):
        if unit not in results:
            continue
        code, output, _ = results[unit]
        if code != 0:
            what = "baseline" if unit == "baseline.cu" else "trusted harness"
            status = TIMEOUT if code is None else INFRA_ERROR
            return Built(Evaluation(status=status, message=f"the {what} did not compile", log=output), "", None)
    notes: list[str] = []
    sass: str | None = None
    linked_objects = [build / "main.o", build / "baseline.o"]
    missing = _missing_entry(build)
    if missing:  # the link would fail: say so as the linker would, before judging the object
        return Built(Evaluation(status=COMPILE_ERROR, message=LINK_MESSAGE, log=f"undefined reference to `{missing}'"),
                     candidate_output, None)
    if HARNESS_ONLY in units.files:
        seen = objcheck.inspect(build / "candidate.o", build / HARNESS_ONLY.replace(".cu", ".o"), linked_objects,
                                precision=layout.precision if layout else "fp32", allow=layout.allow if layout else (),
                                line=layout.solution_line if layout else 0,
                                timeout=max(5.0, deadline - time.monotonic()), cache=cache)
        notes, sass = seen.notes, seen.sass
        if seen.findings:
            return Built(_rejection(seen.findings), candidate_output, None, notes)
        why = objcheck.localize(build / "candidate.o", max(5.0, deadline - time.monotonic()))
        if why:
            notes.append(why)
    return Built(None, candidate_output, None, notes, sass)


LINK_MESSAGE = ("linking with the harness failed (is `launch` declared as `void launch(const T* const* inputs, "
                "T* output)` with T the harness's element type: float, or the __half / __nv_bfloat16 it names in "
                "SPEEDPATCH_ELEMENT?)")


def _missing_entry(build: Path) -> str:
    """The candidate entry point main.o calls (`sp_candidate::launch` with the harness's element type) when
    candidate.o does not define it; '' when it does, or when the objects cannot be read."""
    wanted = [s for s in objcheck.symbols(build / "main.o") or [] if s.undefined and
              s.demangled.startswith(f"{objcheck.NAMESPACE}::launch(")]
    defined = {s.name for s in objcheck.symbols(build / "candidate.o") or [] if not s.undefined}
    return next((s.demangled for s in wanted if s.name not in defined), "") if defined else ""


def _interpositions(build: Path, harness_objects: list[Path]) -> list[str]:
    cand = objcheck.symbols(build / "candidate.o") or []
    harness = {s.name for obj in harness_objects for s in (objcheck.symbols(obj) or []) if not s.undefined}
    only = {s.name for s in cand if not s.undefined and not s.local and s.name not in harness}
    return objcheck.exported_interpositions(build / "bench", only)


def _rejection(findings: list[objcheck.Finding]) -> Evaluation:
    return Evaluation(status=REJECTED, message=findings[0].message,
                      log="\n".join(f.message for f in findings),
                      feedback={"guard_findings": [f.to_dict() for f in findings], "checked": "compiled object"})
