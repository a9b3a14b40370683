"""The kernel checks of the trusted build, for a candidate of a program without the speedpatch harness.

Such a program (upstream style: its own main() fills the inputs, reads the clock around a call of the kernel
function and checks the result) is built as one translation unit, since the kernel uses the program's own
static data; its figure is the model's cycles between the program's read_cycles() pairs and its verdict the
program's exit status. Only the source checks of the search stood between a candidate and that unit, and they
go by names: red-team, on a 64x64x64 GEMM whose honest kernel measures 2,348 cycles, each of these was
"correct" and then "correct on gemmini-spike" on re-verification (Spike reports no figure for such programs):

- read_cycles() spelled by token pasting, called three times in the kernel: the program's pairs shifted onto
  one configuration instruction, 6 cycles;
- the GEMM in a no_sanitize_coverage function with one flattened loop (below the source check's nested-loop
  rule), a configuration instruction to pass as Gemmini work: 15 cycles;
- the model's clock `T` and its sealing function `gm_guard_seal` declared extern and named (natively only,
  under #ifdef __x86_64__): the clock set back after the work and sealed again, 25 cycles.

So the candidate's region is also compiled as the trusted build compiles a kernel (`kernel_unit_problems`):
the program's text around the region with its function bodies left out, and the region. That unit goes
through the same checks (build.region_directive_problems, build.preprocessed_region_problems, no asm
statement, build.kernel_object_problems: what it links, executes and whether each function is charged for
host work); the run itself is still the one unit, whose code for the region's functions goes through the
instruction checks too (`program_object_problems`: its flags differ). The program's own functions outside the
region stay callable (they are trusted and charged) unless they read the clock; ending the program (exit) is
refused, since the program's checks come after the kernel returns, and so is a global definition that would
replace a C library or model function for the whole process (`interposed`). gemmini-command runs the same
checks on its candidates (command.kernel_problems).
"""

from __future__ import annotations

import re
import secrets
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from speedpatch.targets.base import run_process
from speedpatch.targets.gemmini.backends import upstream

# The clock as the shipped headers and the model name it; a program's own clock functions are added per file.
CLOCK_NAMES = frozenset({"read_cycles", "gemmini_model_cycles"})
# A kernel that ends the program skips the program's own checks, which run after it returns: exit(0) is a
# pass. (abort and the assertion/stack-protector failures end it with a failure, so they may stay.)
ENDS_THE_PROGRAM = frozenset({"exit", "_exit", "_Exit", "quick_exit"})
# Flags of the trusted kernel unit that do not fit a program's old-style C: an implicit declaration is a
# warning there, and the name it calls still has to pass the object check.
DROPPED_FLAGS = frozenset({"-DSPEEDPATCH_KERNEL_TU=1", "-Werror=implicit-function-declaration"})


def clock_functions(source: str, keep: tuple[int, int]) -> set[str]:
    """The program's functions and macros outside the region that read the clock, directly (read_cycles,
    the model's counter, a RISC-V counter in inline assembly) or through another one, transitively."""
    from speedpatch.targets.gemmini import csource

    found = set(upstream.clock_names(source, keep))
    bodies = {f.name: f.text for f in csource.functions(source) if f.end <= keep[0] or f.start >= keep[1]}
    changed = True
    while changed:
        changed = False
        for name, body in bodies.items():
            if name not in found and set(re.findall(r"\b\w+\b", body)) & (CLOCK_NAMES | found) - {name}:
                found.add(name)
                changed = True
    return found


def _bodiless(text: str, clocks: set[str]) -> str:
    """`text` with each function definition's body left out: a stub that traps for each of the program's own
    functions (trusted code: the kernel's unit needs only to call them), a bare prototype for the ones that
    read the clock and for main (a kernel calling one links an undefined name, which the checks refuse by
    name)."""
    from speedpatch.targets.gemmini import build, csource

    out, at = [], 0
    for fn in sorted(csource.functions(text), key=lambda f: f.start):
        if fn.start < at:
            continue
        head = build.kernel_declaration(fn.text)
        if not head:
            continue
        out.append(text[at:fn.start])
        if fn.name in clocks or fn.name == "main":
            out.append(f"{head};")
        else:
            out.append(f"{head} {{ __builtin_trap(); }}")
        at = fn.end
    out.append(text[at:])
    return "".join(out)


@lru_cache(maxsize=4)
def foreign_names(archive: str) -> frozenset[str]:
    """Names a region's global definition would take over in a program linked as one unit: every symbol
    the C library and the math library export (the executable's definition wins for the whole process, libc's
    own startup included) and every symbol the model's archive defines or calls."""
    names: set[str] = set()
    listings = [["nm", "-g", archive]]
    for lib in ("libc.so.6", "libm.so.6"):
        path = subprocess.run(["gcc", f"-print-file-name={lib}"], capture_output=True, text=True, timeout=30).stdout.strip()
        if path and Path(path).is_file():
            listings.append(["nm", "-D", "--defined-only", path])
    for argv in listings:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
        for line in out.splitlines():
            parts = line.split()
            if parts and not line.endswith(":"):
                names.add(parts[-1].split("@")[0])
    return frozenset(names)


def interposed(obj: Path, source: str, keep: tuple[int, int], archive: Path, timeout: float) -> list[str]:
    """The region's global definitions that replace a C library or model function for the whole program (a
    name the program itself uses outside the region is its own: the engine refuses a region redefining it)."""
    out = run_process(["nm", "-g", "--defined-only", str(obj)], cwd=obj.parent, timeout=timeout).output
    defined = {parts[-1] for parts in (ln.split() for ln in out.splitlines()) if len(parts) == 3}
    from speedpatch.targets import cfamily

    # (as the engine's boundary reads them: a name only in a comment or a string is not the program's)
    outside = cfamily.tokens(source[:keep[0]], cfamily.C) | cfamily.tokens(source[keep[1]:], cfamily.C)
    return sorted((defined - outside) & foreign_names(str(archive)))


def region_tokens(preprocessed: str, sentinel: str) -> set[str]:
    """The identifiers of the region's own lines in the preprocessed unit (between the sentinel lines, outside
    the headers it includes), pragmas included."""
    from speedpatch.targets.gemmini import build

    lines = preprocessed.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == sentinel), len(lines))
    found: set[str] = set()
    depth = 0
    for line in lines[start + 1:]:
        if line.strip() == sentinel + "_end" and depth == 0:
            break
        marker = build._LINEMARKER.match(line)
        if marker:
            flags = marker.group(1).split()
            depth = max(depth + flags.count("1") - flags.count("2"), 0)
        elif not depth:
            found.update(re.findall(r"[A-Za-z_]\w*", line))
    return found


def kernel_unit_problems(source: str, keep: tuple[int, int], kernel_name: str, declaration: str, workdir: Path,
                         incs: list[str], timeout: float, params_dir: Path | None = None) -> list[str]:
    """Why the candidate's region (source[keep[0]:keep[1]]) fails the trusted build's kernel checks when
    compiled as a kernel unit (empty: it passes). `incs` are the -I options of the program's own build. A
    harness program's unit sees the harness header as the trusted build's kernel unit does (its types only)."""
    from speedpatch.targets.gemmini import build

    region = source[keep[0]:keep[1]]
    problems = build.region_directive_problems(region)
    if problems:
        return problems
    clocks = clock_functions(source, keep)
    prefix = _bodiless(source[:keep[0]], clocks)
    # the rest of the file too: functions defined after the region (declared before it) are the program's
    later = _bodiless(source[keep[1]:], clocks)
    from speedpatch.targets.gemmini.backends import common

    dropped = DROPPED_FLAGS - ({"-DSPEEDPATCH_KERNEL_TU=1"} if common.uses_harness(source) else set())
    flags = [f for f in [*build.USER_CFLAGS, *build.NATIVE_KERNEL_TU_CFLAGS] if f not in dropped]
    workdir.mkdir(parents=True, exist_ok=True)
    unit, asm, obj = (workdir / "speedpatch_kernel_unit.c", workdir / "speedpatch_kernel_unit.s",
                      workdir / "speedpatch_kernel_unit.o")
    unit.write_text(f"{prefix}{region}{later}\n{declaration};\n__attribute__((used)) static const void "
                    f"*const speedpatch_entry_keep_ = (const void *){kernel_name};\n", encoding="utf-8",
                    errors="replace")
    sentinel = f"speedpatch_region_{secrets.token_hex(8)}"
    region_src, region_out = workdir / "speedpatch_kernel_region.c", workdir / "speedpatch_kernel_region.i"
    region_src.write_text(f"{prefix}\n{sentinel}\n{region}\n{sentinel}_end\n", encoding="utf-8", errors="replace")
    for argv in ([build.compiler(), *flags, *incs, "-E", str(region_src), "-o", str(region_out)],
                 [build.compiler(), *flags, *incs, "-S", str(unit), "-o", str(asm)]):
        res = run_process(argv, cwd=workdir, timeout=timeout)
        if res.returncode != 0:
            first = next((ln for ln in res.output.splitlines() if "error" in ln), res.output.strip()[:300])
            return [f"the kernel region does not compile on its own as a kernel unit, which the kernel checks need "
                    f"(the program's functions are prototypes there): {first.strip()}"]
    expanded = region_out.read_text(errors="replace")
    injected = build.preprocessed_region_problems(expanded, sentinel)
    if injected:
        return injected
    # (by the region's own tokens, macros expanded: the library's functions call exit(1) on a bad argument)
    ends = sorted(region_tokens(expanded, sentinel) & ENDS_THE_PROGRAM)
    if ends:
        return [f"the kernel calls {', '.join(ends)}: the program checks its result after the kernel returns, so a "
                "kernel may not end the program"]
    if "#APP" in asm.read_text(errors="replace"):
        return ["the kernel contains inline assembly (an asm statement, or a macro that expands to one): kernel code "
                "must be C against the Gemmini API"]
    res = run_process([build.compiler(), "-c", str(asm), "-o", str(obj)], cwd=workdir, timeout=timeout)
    if res.returncode != 0:
        return [f"the kernel unit did not assemble: {res.output.strip()[:300]}"]
    problems = build.kernel_object_problems(obj, timeout=timeout)
    _, archive = build.model_archive(params_dir, timeout=timeout)
    taken = interposed(obj, source, keep, archive, timeout) if archive is not None else []
    if taken:
        # red-team: fprintf and fwrite defined in the region wrote the model's statistics file (2,348 cycles
        # reported as 1,100), as any such function would change whatever calls it, the model included
        problems.append(f"the kernel defines {', '.join(taken)}, a function of the C library or the model, which in a "
                        "program built as one unit replaces it for the whole program (the model's statistics "
                        "included): make it static or rename it")
    undefined = set(run_process(["nm", "-u", str(obj)], cwd=workdir, timeout=timeout).output.split()) - {"U"}
    reads = sorted(undefined & clocks)
    if reads:
        problems.append(f"the kernel calls {', '.join(reads)}, which reads the clock: kernels may not read the clock "
                        "(the timing is the program's)")
    return problems


def problems_for(source: str, keep: tuple[int, int], kernel: Any, workdir: Path, incs: list[str],
                 timeout: float, params_dir: Path | None = None) -> list[str]:
    """kernel_unit_problems for `kernel` (its original prototype from the kernel's own text)."""
    from speedpatch.targets.gemmini import build

    declaration = build.kernel_declaration(kernel.text)
    if not declaration:
        return [f"cannot read the prototype of {kernel.name}() in the problem file"]
    return kernel_unit_problems(source, keep, kernel.name, declaration, workdir, incs, timeout, params_dir)


# What the checks of the kernel unit cannot vouch for in the program's own build, whose flags differ (no
# -mstringop-strategy=libcall, jump tables allowed): a struct copy there compiles to one `rep movsq` (4 KiB
# charged as one instruction). An indirect jump there is a switch's table: the unit, built without jump
# tables, showed the region makes no indirect call.
BUILD_ONLY = "makes an indirect call or jump"


def program_object_problems(obj: Path, source: str, keep: tuple[int, int], kernel_name: str, unit_dir: Path,
                            timeout: float) -> list[str]:
    """The instruction checks of the trusted build on the functions the region defines, as the program's own
    one-unit build compiled them (obj: its object). The region's functions are those the kernel unit in
    `unit_dir` defines (a function a macro of the region defines too) less the program's own."""
    from speedpatch.targets.gemmini import build, csource

    region = source[keep[0]:keep[1]]
    outside = {f.name for f in csource.functions(source) if f.end <= keep[0] or f.start >= keep[1]}
    unit = run_process(["nm", "--defined-only", str(unit_dir / "speedpatch_kernel_unit.o")], cwd=unit_dir,
                       timeout=timeout).output
    names = {parts[2].split(".")[0] for parts in (ln.split() for ln in unit.splitlines())
             if len(parts) == 3 and parts[1] in "Tt"} - outside
    names |= {f.name for f in csource.functions(region)} | {kernel_name}
    dump = run_process(["objdump", "-dr", "--no-show-raw-insn", str(obj)], cwd=obj.parent, timeout=timeout)
    if dump.returncode != 0:
        return [f"objdump could not disassemble the program: {dump.output.strip()[:200]}"]
    chunks: list[str] = []
    keep_chunk = False
    for line in dump.output.splitlines():
        header = re.match(r"^[0-9a-f]+ <([^>.]+)[^>]*>:$", line)
        if header:
            keep_chunk = header.group(1) in names
        if keep_chunk:
            chunks.append(line)
    undefined = set(run_process(["nm", "-u", str(obj)], cwd=obj.parent, timeout=timeout).output.split()) - {"U"}
    return [p for p in build._instruction_problems("\n".join(chunks), undefined) if BUILD_ONLY not in p]
