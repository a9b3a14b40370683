"""What the candidate's compiled object links and executes, not how its source spells it.

The source guards (guards.py) read text, and text can be re-spelled: a token-pasted
`cudaStreamCreateWithFlags`, `std :: thread`, `dlsym(h, "cublas" "Sgemm")`, fp16 math through inline PTX.
The object cannot: whatever the spelling, a call to another library is an undefined symbol, a definition
that escapes the solution's namespace is a defined symbol, inline assembly is an instruction. So every
candidate unit is compiled on its own (`candidate.cu`, the solution inside `namespace sp_candidate`) and
its object is inspected before it is linked or run:

host symbols (`nm`)
  * undefined symbols must be on an allowlist: the CUDA runtime's launch, memory and attribute calls,
    the C++ runtime (operator new, exceptions, static-local guards) and libm. Anything else (dlopen,
    pthread_create, std::thread, cudaStream*/cudaEvent*/cudaGraph*, the driver API, cuBLAS, fopen, printf,
    getenv, exit...) is rejected, naming the symbol and what it is;
  * defined symbols must belong to the solution (`sp_candidate::...` and the stubs nvcc makes for its
    kernels). A definition outside it is an escape from the namespace: a C-linkage definition may interpose
    on the runtime or libc (`cudaEventElapsedTime`, `clock_gettime`), a definition of a symbol the harness
    calls would replace it, a use of the harness's static `reference` would compute the answer on the host;
  * a static constructor beyond what the harness itself has (`.init_array`) runs before main: the tables are
    compared by the code their entries run, since g++ folds a unit's dynamic initializers into one function;
  * the runtime's registration of device code is called only by nvcc's own registrars (a fatbinary kept as
    data and registered by the solution would run device code that cuobjdump never shows);
host instructions (`objdump -d`): syscall, sysenter, int 0x80 (system calls without libc) and rdtsc/rdtscp
  (a timer) are rejected;
device code (`cuobjdump -sass`, else the PTX): the instructions that will execute decide precision
  (fp16/bf16 arithmetic, tensor-core HMMA/HGMMA by input type, fp8, int8) against what the problem allows,
  and clock/global-timer reads and device printf are rejected.

The symbols the harness-only unit (`harness_only.cu`: the harness with an empty solution) defines are the
baseline: the harness's own static kernels, its static initializers and nvcc's registration code.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from speedpatch.targets.base import Finding
from speedpatch.targets.cuda.guards import PERMITTED
from speedpatch.targets.cuda.sass import cuobjdump_env, find_cuobjdump

NAMESPACE = "sp_candidate"
RULE = "object"

# --- host symbols -----------------------------------------------------------------------------------

# Undefined symbols a solution may need. Raw (mangled) names, whole-name regular expressions.
ALLOWED_UNDEFINED = re.compile("|".join(f"(?:{p})" for p in (
    # What nvcc generates for a kernel launch and for registering the object's kernels and variables.
    r"__cuda(?:LaunchKernel|GetKernel|PushCallConfiguration|PopCallConfiguration|RegisterFatBinary"
    r"|RegisterFatBinaryEnd|RegisterFunction|RegisterVar|RegisterManagedVar|RegisterSurface|RegisterTexture"
    r"|UnregisterFatBinary|InitModule|RegisterLinkedBinary\w*)(?:_ptsz)?",
    # Runtime calls a solution legitimately makes: launches, scratch memory on the default stream,
    # kernel attributes (large shared memory), device attributes, occupancy queries, errors.
    r"cudaLaunch(?:Kernel|KernelExC|CooperativeKernel)(?:_ptsz)?",
    r"cuda(?:Malloc|Free|MallocAsync|FreeAsync|Memset|MemsetAsync|Memcpy|MemcpyAsync|Memcpy2D|Memcpy2DAsync"
    r"|MemcpyToSymbol|MemcpyFromSymbol|MemcpyToSymbolAsync|MemcpyFromSymbolAsync|GetSymbolAddress|GetSymbolSize)"
    r"(?:_ptds|_ptsz)?",
    r"cuda(?:FuncSetAttribute|FuncGetAttributes|FuncSetCacheConfig|FuncSetSharedMemConfig|GetDevice|GetDeviceCount"
    r"|GetDeviceProperties(?:_v2)?|DeviceGetAttribute|GetLastError|PeekAtLastError|GetErrorString|GetErrorName"
    r"|DeviceSynchronize|Occupancy\w+|ChooseDevice)",
    # The C++ runtime: allocation, exceptions, static-local guards, destructor registration, libc memory.
    r"_Unwind_Resume|__gxx_personality_v0|__cxa_(?:guard_acquire|guard_release|guard_abort|atexit|allocate_exception"
    r"|free_exception|throw|begin_catch|end_catch|rethrow|pure_virtual|call_terminate|throw_bad_array_new_length)",
    r"atexit|__dso_handle|__stack_chk_fail|_ZSt9terminatev|__assert_fail",
    # nvcc gives each non-inline __device__ function a host body that calls exit(1). Ending the process is no
    # cheat anyway: the verdict is the harness's result file, and a program that ends before writing it
    # has no result.
    r"exit",
    r"_Zn[wa][mj](?:St11align_val_t)?(?:RKSt9nothrow_t)?|_Zd[la]Pv(?:[mj])?(?:St11align_val_t)?(?:RKSt9nothrow_t)?",
    r"_ZSt\d+__throw_\w+",  # std::__throw_length_error and friends (std::vector)
    r"_ZTI\w+|_ZTVN10__cxxabiv1\w+",  # typeinfo for exceptions
    r"mem(?:cpy|move|set|cmp)|strlen|malloc|calloc|realloc|free|posix_memalign|aligned_alloc",
    # libm.
    r"(?:sqrt|cbrt|exp|exp2|expm1|log|log2|log10|log1p|pow|sin|cos|tan|asin|acos|atan|atan2|sinh|cosh|tanh|asinh"
    r"|acosh|atanh|erf|erfc|tgamma|lgamma|ceil|floor|round|lround|llround|trunc|fmod|remainder|fabs|fmin|fmax|fdim"
    r"|hypot|ldexp|frexp|modf|rint|lrint|nearbyint|copysign|fma|scalbn|ilogb|logb|nextafter)[fl]?",
)))

# What a rejected symbol is, for the message (checked against raw and demangled names, in order).
KINDS: list[tuple[str, re.Pattern[str]]] = [(what, re.compile(p)) for what, p in (
    ("loads code at run time (dlopen/dlsym reach any library by a string)", r"^(?:dl\w+|_dl_\w+|__libc_dl\w*)$"),
    ("starts host threads or processes, whose work the timer does not see",
     r"^(?:pthread_\w+|fork|vfork|clone\w*|posix_spawn\w*|exec[lv]\w*|system|popen|GOMP_\w+|__kmpc_\w+|omp_\w+|thrd_\w+)$"
     r"|std::thread|std::jthread|std::__future|std::async"),
    ("uses streams, events or graphs (work outside the timed default stream, or the harness's timer)",
     r"^cuda(?:Stream|Event|Graph|LaunchHostFunc|DeviceReset|SetDevice|Ctx|DeviceSetLimit|DeviceGetLimit"
     r"|ThreadExchange|Profiler|SetDeviceFlags|DeviceSetCacheConfig|LaunchKernelEx\b)\w*"),
    ("calls the CUDA driver API directly", r"^cu[A-Z]\w*$|^cudaGetDriverEntryPoint\w*$"),
    ("calls a reference library instead of computing",
     r"^(?:cublas|cudnn|cufft|cusparse|cusolver|curand|cutensor|nccl|nvrtc|nvJitLink|cutlass)\w*|"
     r"(?:cublas|cudnn|cutlass|thrust|cub)::"),
    ("does file, console or socket I/O (could forge or hide results)",
     r"^(?:f?open\w*|openat\w*|creat\w*|f?write\w*|pwrite\w*|f?read|fread|puts|fputs|putchar|fputc|putc|"
     r"[vsnf]*printf\w*|__printf_chk|__fprintf_chk|fflush|fclose|dup\d?|pipe\d?|socket|connect|send\w*|"
     r"unlink\w*|remove|rename\w*|mkdir|std::cout|std::cerr|std::clog)$|std::basic_o\w*stream|std::basic_filebuf"
     r"|std::(?:cout|cerr|clog)\b|std::__cxx11::basic_ofstream"),
    ("changes memory protection or maps memory (could patch the harness)", r"^(?:mmap\w*|mprotect|munmap|mremap|brk|sbrk)$"),
    ("reads the environment or ends the process (the harness owns both)",
     r"^(?:getenv|secure_getenv|setenv|putenv|unsetenv|environ|__environ|exit|_exit|_Exit|quick_exit|abort|raise|"
     r"kill|signal|sigaction|syscall|ptrace|prctl|setjmp|longjmp|_setjmp|__longjmp_chk|__libc_\w+)$"),
    ("reads a host clock (the harness owns the timer)",
     r"^(?:clock|clock_gettime|gettimeofday|time|timespec_get|__rdtsc)$|std::chrono"),
)]


def describe(name: str, demangled: str) -> str:
    for what, pattern in KINDS:
        if pattern.search(name) or pattern.search(demangled):
            return what
    return "is not on the list of what a solution may call (CUDA runtime launch/memory/attribute calls, libm, C++ runtime)"


@dataclass(frozen=True)
class Symbol:
    name: str  # raw (mangled)
    kind: str  # nm type letter: U, T, t, W, V, D, B, R, ...
    demangled: str = ""

    @property
    def undefined(self) -> bool:
        return self.kind in ("U", "w", "v")

    @property
    def local(self) -> bool:
        return self.kind.islower() and self.kind not in ("w", "v", "u")

    @property
    def weak(self) -> bool:
        return self.kind in ("W", "V", "u", "w", "v")


def _run(argv: list[str], timeout: float, env: dict[str, str] | None = None,
         stdin: str | None = None) -> tuple[int, str, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, input=stdin,
                              errors="replace")
    except (OSError, subprocess.SubprocessError) as exc:
        return 127, "", str(exc)
    return done.returncode, done.stdout, done.stderr


def demangle(names: list[str], timeout: float = 30) -> dict[str, str]:
    if not names:
        return {}
    filt = shutil.which("c++filt")
    if filt is None:
        return {n: n for n in names}
    code, out, _ = _run([filt], timeout, stdin="\n".join(names) + "\n")
    lines = out.splitlines()
    if code != 0 or len(lines) != len(names):
        return {n: n for n in names}
    return dict(zip(names, lines, strict=True))


def symbols(obj: Path, timeout: float = 30, dynamic: bool = False) -> list[Symbol] | None:
    """The object's symbol table (None when nm cannot read it)."""
    nm = shutil.which("nm")
    if nm is None:
        return None
    code, out, _ = _run([nm, "-P", *(["-D"] if dynamic else []), str(obj)], timeout)
    if code != 0:
        return None
    raw: list[tuple[str, str]] = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and len(parts[1]) == 1:
            raw.append((parts[0].split("@")[0], parts[1]))
    names = demangle(sorted({n for n, _ in raw}), timeout)
    return [Symbol(n, k, names.get(n, n)) for n, k in raw]


def _base(demangled: str) -> str:
    """`guard variable for X`, `X [clone .cold]`, `X::__tmp` of a device stub: the entity X belongs to."""
    name = re.sub(r"\s*\[clone [^\]]*\]$", "", demangled)
    name = re.sub(r"^(?:guard variable for |typeinfo (?:name )?for |vtable for |VTT for |reference temporary #\d+ for )",
                  "", name)
    name = re.sub(r"\.(?:cold|part\.\d+|constprop\.\d+|isra\.\d+)(?:\.\d+)?$", "", name)
    return _qualified_name(name)


def _qualified_name(demangled: str) -> str:
    """`void std::sort<int*>(int*, int*)` -> `std::sort<int*>(int*, int*)`: a function template's demangled
    name starts with its return type; what the entity is, is the name after the last top-level space
    before its parameter list."""
    depth, start = 0, 0
    for i, ch in enumerate(demangled):
        if ch in "<(":
            if ch == "(" and depth == 0 and not demangled[:i].endswith("operator"):
                break
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif ch == " " and depth == 0 and not demangled[:i].endswith("operator"):
            start = i + 1
    return demangled[start:]


def belongs_to_solution(sym: Symbol) -> bool:
    base = _base(sym.demangled)
    if base.startswith(f"{NAMESPACE}::"):
        return True
    # nvcc's host stub for kernel `sp_candidate::k` is `__device_stub__ZN12sp_candidate1kEPf(...)`.
    stub = re.match(r"^__device_stub__(\w+)", base)
    return stub is not None and stub.group(1).startswith(f"ZN{len(NAMESPACE)}{NAMESPACE}")


COMPILER_LOCAL = re.compile(r"^\.L|^\.text|^fatbinData$|^_GLOBAL__sub_I_|^__nv_|^__cuda|^_ZL\d+__cuda|^_ZL\d+__sti__|"
                            r"^_ZL\d+__fatDeviceText$|^__fatbinwrap|^__sti____cudaRegisterAll")


def _section_index(obj: Path, timeout: float) -> dict[str, int] | None:
    """Section name -> its index in the object (`readelf -S`); None when it cannot be read."""
    readelf = shutil.which("readelf")
    code, out, _ = _run([readelf, "-S", "-W", str(obj)], timeout) if readelf else (127, "", "")
    if code != 0:
        return None
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"^\s*\[\s*(\d+)\]\s+(\S+)", out, re.MULTILINE)}


def _function_symbols(obj: Path, timeout: float) -> list[tuple[int, int, int, str]] | None:
    """The object's function symbols as (section index, start, size, name) (`readelf -s`); None: unreadable."""
    readelf = shutil.which("readelf")
    code, out, _ = _run([readelf, "-s", "-W", str(obj)], timeout) if readelf else (127, "", "")
    if code != 0:
        return None
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[3] in ("FUNC", "IFUNC") and parts[6].isdigit():
            size = int(parts[2], 16) if parts[2].startswith("0x") else int(parts[2])
            found.append((int(parts[6]), int(parts[1], 16), size, parts[7]))
    return found


def sections(obj: Path, timeout: float = 30) -> list[tuple[str, int, str]] | None:
    """The object's sections as (name, size, flags), from `readelf -S -W` (None when it cannot be read)."""
    readelf = shutil.which("readelf")
    if readelf is None:
        return None
    code, out, _ = _run([readelf, "-S", "-W", str(obj)], timeout)
    if code != 0:
        return None
    found = []
    for line in out.splitlines():
        m = re.search(r"\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([A-Za-z]*)", line)
        if m:
            found.append((m.group(1), int(m.group(2), 16), m.group(3)))
    return found


def table_bytes(obj: Path, pattern: str, timeout: float = 30) -> int | None:
    """Total size of the object's sections whose name matches `pattern` (None when unreadable)."""
    table = sections(obj, timeout)
    return None if table is None else sum(size for name, size, _ in table if re.fullmatch(pattern, name))


CONSTRUCTORS = r"\.(?:init_array|ctors|preinit_array)(?:\..*)?"
DESTRUCTORS = r"\.(?:fini_array|dtors)(?:\..*)?"


def init_array_bytes(obj: Path, timeout: float = 30) -> int | None:
    """Size of the object's constructor tables (.init_array, .ctors): code that runs before main."""
    return table_bytes(obj, CONSTRUCTORS, timeout)


# nvcc's registration of the unit's kernels and variables: differs with the solution's kernels by design.
NVCC_REGISTRATION = re.compile(r"^_ZL24__sti____cudaRegisterAllv$")


def table_code(obj: Path, pattern: str, timeout: float = 60) -> list[str] | None:
    """What the entries of the object's tables named by `pattern` (constructors, destructors) run, besides
    nvcc's registration: per entry, the normalized instructions and relocations of its function, its `.cold`
    part and the object's own functions it calls, sorted (None when the object cannot be read).

    The table's size alone does not say this: g++ folds every dynamic initializer of a translation unit
    (a static object's constructor, a template's static member) into ONE `_GLOBAL__sub_I_` function, so a
    harness with one dynamic initializer of its own (a `static const std::string`) already has that entry,
    and a solution's constructor added to it adds no byte to `.init_array` (red-team: it compiled and
    passed the size comparison). The same harness compiles to the same code; what differs is the solution's.
    Names that depend on the unit (the initializer is named after the unit's first global symbol, `.LC`
    constant labels, section offsets) are normalized."""
    objdump, index, symbols = shutil.which("objdump"), _section_index(obj, timeout), _function_symbols(obj, timeout)
    if objdump is None or index is None or symbols is None:
        return None
    functions = {(section, start): name for section, start, _, name in symbols}
    entries: list[str] = []
    for name in (n for n in index if re.fullmatch(pattern, n)):
        code, out, _ = _run([objdump, "-r", "-j", name, str(obj)], timeout)
        if code != 0:
            return None
        for m in re.finditer(r"^[0-9a-f]+\s+R_X86_64_\w+\s+([^\s+]+)(?:\+0x([0-9a-f]+))?\s*$", out, re.MULTILINE):
            target, offset = m.group(1), int(m.group(2) or "0", 16)
            entries.append(functions.get((index[target], offset), f"{target}+{offset:#x}")
                           if target in index else target)
    code, out, _ = _run([objdump, "-d", "-r", "--no-show-raw-insn", str(obj)], timeout)
    if code != 0:
        return None
    bodies: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in out.splitlines():
        if (label := OBJDUMP_FUNCTION.match(line)) is not None:
            current = bodies.setdefault(label.group(1), [])
        elif line.startswith("Disassembly of section"):
            current = None
        elif current is not None and line.strip():
            current.append(line)
    unit_named = re.compile(r"_GLOBAL__sub_[ID]_[\w.]*")

    def normalized(line: str) -> str:
        if (r := re.match(r"^\s*[0-9a-f]+:\s+(R_X86_64_\w+)\s+(\S+)", line)) is not None:
            target = re.sub(r"^\.LC\d+", ".LC", r.group(2))
            target = re.sub(r"^(\.[\w.]+)[+-]0x[0-9a-f]+$", r"\1", target)  # a section's symbol plus an offset
            return f"  {r.group(1)} {unit_named.sub('_GLOBAL__sub_', target)}"
        text = re.sub(r"^\s*[0-9a-f]+:\s*", "", line)
        text = re.sub(r"\s*#.*$", "", text)
        text = re.sub(r"\b[0-9a-f]+ <([^>+]*)(?:\+0x[0-9a-f]+)?>",
                      lambda t: "<>" if "+0x" in t.group(0) else f"<{unit_named.sub('_GLOBAL__sub_', t.group(1))}>", text)
        return re.sub(r"\s+", " ", text).strip()

    found = []
    for entry in entries:
        if NVCC_REGISTRATION.match(entry):
            continue
        seen, todo, text = {entry}, [entry], []
        while todo:
            name = todo.pop(0)
            body = bodies.get(name)
            if body is None:
                text.append(f"[{unit_named.sub('_GLOBAL__sub_', name)}: not in the object's code]")
                continue
            text.append(f"<{unit_named.sub('_GLOBAL__sub_', name)}>:")
            text += [normalized(line) for line in body]
            callees = [t.group(1) for line in body if re.search(r"\bcall", line)
                       for t in [re.search(r"<([^>+]+)>", line)] if t]
            for callee in [*callees, f"{name}.cold"]:
                if callee in bodies and callee not in seen:
                    seen.add(callee)
                    todo.append(callee)
        found.append("\n".join(text))
    return sorted(found)


def data_as_code(obj: Path, timeout: float = 30) -> list[str]:
    """Bytes that would run without being read as instructions here: a `.text*` section that is not marked
    executable (the linker still puts it in the program's code) or is writable, and data objects placed in an
    executable section (`__attribute__((section(".text.x"))) const unsigned char code[]`, called through a
    pointer, possibly at an offset that objdump decodes differently). A solution's code is its functions."""
    table = sections(obj, timeout)
    readelf = shutil.which("readelf")
    if table is None or readelf is None:
        return []
    found = [f"section {name} ({'writable' if 'W' in flags else 'not marked executable'})"
             for name, _, flags in table
             if re.fullmatch(r"\.text(?:\..*)?", name) and ("X" not in flags or "W" in flags)]
    found += [f"section {name} (writable and executable)" for name, _, flags in table
              if "X" in flags and "W" in flags and not re.fullmatch(r"\.text(?:\..*)?", name)]
    code, out, _ = _run([readelf, "-S", "-W", str(obj)], timeout)
    executable = {m.group(1) for m in re.finditer(r"^\s*\[\s*(\d+)\]\s+\S+\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+"
                                                   r"[0-9a-f]+\s+[A-Za-z]*X", out, re.MULTILINE)} if code == 0 else set()
    code, out, _ = _run([readelf, "-s", "-W", str(obj)], timeout)
    for line in out.splitlines() if code == 0 else []:
        parts = line.split()
        if len(parts) >= 8 and parts[3] in ("OBJECT", "TLS") and parts[6] in executable:
            found.append(f"data object {parts[7]} in an executable section")
    return found


def indirect_functions(obj: Path, timeout: float = 30) -> list[str]:
    """Symbols of type IFUNC (GNU indirect functions): the dynamic loader calls each one's resolver while it
    relocates the program, before main and before any constructor. nvcc's front end refuses the `ifunc`
    attribute, but a top-level `asm(".type f, @gnu_indirect_function")` makes one, and no honest solution needs it."""
    readelf = shutil.which("readelf")
    if readelf is None:
        return []
    code, out, _ = _run([readelf, "-s", "-W", "-C", str(obj)], timeout)
    found = []
    for line in out.splitlines() if code == 0 else []:
        parts = line.split(None, 7)
        if len(parts) == 8 and parts[3] == "IFUNC":
            found.append(parts[7])
    return sorted(set(found))


# The runtime's registration of device code: nvcc's own functions call it for the object's embedded fatbinary.
REGISTRATION = re.compile(r"^__cuda(?:RegisterFatBinary|RegisterFatBinaryEnd|RegisterFunction|RegisterVar"
                          r"|RegisterManagedVar|RegisterSurface|RegisterTexture|RegisterLinkedBinary\w*"
                          r"|UnregisterFatBinary|InitModule)(?:_ptsz)?$")
# The functions nvcc writes into every unit for that, by their exact (static, C++) symbols: a solution's function
# of the same symbol would not assemble, while any other spelling (an asm label `__sti____cudaRegisterAll`, a
# `.constprop.0` suffix) is a function of the solution's (red-team: a registrar asm-labelled with the unmangled
# name passed a pattern that allowed it). 1,573 objects in the compile caches here use exactly these three.
NVCC_REGISTRARS = re.compile(r"^(?:_ZL24__sti____cudaRegisterAllv|_ZL31__nv_cudaEntityRegisterCallbackPPv"
                             r"|_ZL26__cudaUnregisterBinaryUtilv)$")


def registrations_outside_nvcc(obj: Path, timeout: float = 30) -> list[str] | None:
    """Where the object refers to the runtime's device-code registration other than from nvcc's registration
    functions: `function -> symbol`, or `section -> symbol` for data (a pointer to the call). A solution that
    registers a fatbinary of its own (kept as bytes in a const array, `__cudaRegisterFatBinary` then
    `__cudaRegisterFunction` on a host address of its choice) launches device code that cuobjdump never shows:
    the object's device code is what its `.nv_fatbin` holds (red-team: an fp16 kernel reading %globaltimer,
    registered so from launch() of an fp32 problem, compiled and passed every check). None: unreadable."""
    objdump, index, symbols = shutil.which("objdump"), _section_index(obj, timeout), _function_symbols(obj, timeout)
    if objdump is None or index is None or symbols is None:
        return None
    functions: dict[int, list[tuple[int, int, str]]] = {}  # section index -> (start, size, name)
    for section_no, start, size, name in symbols:
        functions.setdefault(section_no, []).append((start, size, name))
    code, out, _ = _run([objdump, "-r", str(obj)], timeout)
    if code != 0:
        return None
    found: set[str] = set()
    section = ""
    for line in out.splitlines():
        if (m := re.match(r"^RELOCATION RECORDS FOR \[(.+)\]:", line)) is not None:
            section = m.group(1)
            continue
        r = re.match(r"^([0-9a-f]+)\s+R_X86_64_\w+\s+([^\s+-]+)", line)
        if r is None or not REGISTRATION.match(r.group(2).split("@")[0]):
            continue
        offset = int(r.group(1), 16)
        where = next((name for start, size, name in functions.get(index.get(section, -1), [])
                      if start <= offset < start + max(size, 1)), f"section {section}")
        if not NVCC_REGISTRARS.match(where):
            found.add(f"{demangle([where]).get(where, where)} -> {r.group(2).split('@')[0]}")
    return sorted(found)


def code_outside_text(obj: Path, timeout: float = 30) -> list[str]:
    """Executable sections not named .text*: `.init`/`.fini` pieces run before/after main, spliced into the
    program's own _init/_fini, and no honest solution puts code anywhere but .text (nvcc and gcc use
    .text, .text.startup, .text.unlikely, .text.<function>)."""
    return sorted({name for name, _, flags in sections(obj, timeout) or []
                   if "X" in flags and not re.fullmatch(r"\.text(?:\..*)?", name)})


# rdpmc reads the CPU's performance counters (a cycle counter among them) where the kernel lets user code do so.
HOST_INSTRUCTIONS = re.compile(r"^\s*[0-9a-f]+:\s+(?:[0-9a-f]{2} )*\s*(syscall|sysenter|int\s+\$0x80|rdtscp?|rdpid|rdpmc)\b",
                               re.MULTILINE)


def host_instructions(obj: Path, timeout: float = 60) -> list[str] | None:
    objdump = shutil.which("objdump")
    if objdump is None:
        return None
    code, out, _ = _run([objdump, "-d", str(obj)], timeout)
    if code != 0:
        return None
    return sorted({re.sub(r"\s+", " ", m.group(1)) for m in HOST_INSTRUCTIONS.finditer(out)})


OBJDUMP_FUNCTION = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
OBJDUMP_TARGET = re.compile(r"<([^>+]+)(?:\+0x[0-9a-f]+)?>|R_X86_64_\w+\s+([^\s+-]+)")
LAUNCHES = re.compile(r"^(?:__cudaLaunchKernel|cudaLaunchKernel\w*|cudaLaunchCooperativeKernel\w*|"
                      r"__cudaPushCallConfiguration)(?:@plt)?$|__device_stub__")


def launch_starts_kernels(obj: Path, timeout: float = 60) -> bool | None:
    """Whether `sp_candidate::launch` can reach a kernel launch through the calls and references of the
    object's host code (None: the object cannot be read, or has no launch)."""
    objdump = shutil.which("objdump")
    if objdump is None:
        return None
    code, out, _ = _run([objdump, "-d", "-r", "--no-show-raw-insn", str(obj)], timeout)
    if code != 0:
        return None
    edges: dict[str, set[str]] = {}
    current = ""
    for line in out.splitlines():
        if (m := OBJDUMP_FUNCTION.match(line)) is not None:
            current = m.group(1)
            edges.setdefault(current, set())
            continue
        if current:
            # Relocations name what a function references; a resolved `<symbol+offset>` label counts only
            # on a call (a jump's label is just the nearest symbol before its target, e.g. a cold clone).
            for target in OBJDUMP_TARGET.finditer(line):
                if target.group(1) and "call" not in line:
                    continue
                name = (target.group(1) or target.group(2) or "").split("@")[0]
                if name and name != current:
                    edges[current].add(name)
    names = demangle(sorted(edges))
    roots = [n for n in edges if names.get(n, n).startswith(f"{NAMESPACE}::launch(")]
    if not roots:
        return None
    seen, todo = set(roots), list(roots)
    while todo:
        name = todo.pop()
        if not name.endswith(".cold") and (LAUNCHES.search(name) or LAUNCHES.search(names.get(name, ""))):
            return True
        for nxt in edges.get(name, set()) - seen:
            seen.add(nxt)
            todo.append(nxt)
    return False


# --- device code ------------------------------------------------------------------------------------

SASS_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
SASS_INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)\s*([^;]*);")
HALF_ARITH = {"HADD2", "HFMA2", "HMUL2", "HMNMX2", "HSETP2", "HSET2", "HMMA2"}
TENSOR = {"HMMA", "HGMMA", "IMMA", "IGMMA", "QGMMA", "BMMA", "OMMA", "QMMA", "UTCHMMA", "UTCQMMA", "UTCIMMA", "UTCOMMA"}


def _tensor_kind(op: str, mods: str) -> str | None:
    mods = mods.upper()
    if op in ("IMMA", "IGMMA", "UTCIMMA"):
        return "int8"
    if op in ("BMMA",):
        return "int1"
    if op in ("QGMMA", "QMMA", "UTCQMMA", "OMMA", "UTCOMMA") or ".E4M3" in mods or ".E5M2" in mods:
        return "fp8"
    if ".TF32" in mods:
        return "tf32"
    if ".BF16" in mods:
        return "bf16"
    return "fp16"  # HMMA/HGMMA without a type modifier take fp16 inputs


def sass_uses(sass: str, skip: set[str]) -> dict[str, dict[str, str]]:
    """{kernel: {kind: first instruction}} for precision kinds, timers and printf, per device function."""
    found: dict[str, dict[str, str]] = {}
    current: str | None = None
    for line in sass.splitlines():
        m = SASS_FUNCTION.match(line)
        if m:
            current = None if m.group(1) in skip else m.group(1)
            continue
        if current is None or (i := SASS_INSTRUCTION.search(line)) is None:
            continue
        op, mods, operands = i.group(1), i.group(2), i.group(3)
        text = f"{op}{mods} {operands}".strip()
        kind = None
        if op in HALF_ARITH:
            # Register moves and widening conversions that ptxas writes with half instructions:
            # `HFMA2.MMA R1, -RZ, RZ, 0, 0` (a constant), `HADD2.F32 R1, -RZ, R2.H0_H0` (half -> float).
            if re.match(r"R\w+\s*,\s*-RZ\s*,", operands):
                continue
            kind = "bf16" if ".BF16" in mods else "fp16"
        elif op in TENSOR:
            kind = _tensor_kind(op, mods)
        elif op in ("F2FP", "F2F") and re.search(r"\.E4M3|\.E5M2|\.E2M1|\.E3M2|\.E2M3", mods):
            kind = "fp8"
        elif re.search(r"SR_(?:GLOBALTIMER|CLOCK|PM\d)", operands):  # SR_PM0-7: the SM's performance counters
            kind = "timer"
        elif op == "CALL" and "vprintf" in line:
            kind = "printf"
        if kind:
            found.setdefault(current, {}).setdefault(kind, text)
    return found


PTX_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)?\.(?:entry|func)\s+(?:\([^)]*\)\s*)?(\w+)", re.MULTILINE)
# An instruction starts a line or follows `;` or `{` (inline asm keeps the source's one-line statements).
PTX_HALF = re.compile(r"(?:^|(?<=[;{]))\s*(?:@!?%\w+\s+)?(add|sub|mul|fma|neg|abs|min|max|ex2|tanh|rcp|sqrt|rsqrt|sin|cos|lg2|div"
                      r"|set|setp|hfma2?)(?:\.\w+)*?\.(f16x2|f16|bf16x2|bf16)\b", re.MULTILINE)
PTX_MMA = re.compile(r"(?:^|(?<=[;{]))\s*(?:@!?%\w+\s+)?((?:w?mma|wgmma|tcgen05\.mma)[\w.:]*)", re.MULTILINE)
PTX_OTHER = [("timer", re.compile(r"%globaltimer|%clock(?:64|_hi)?\b|%pm\d")), ("printf", re.compile(r"\bvprintf\b")),
             ("tf32", re.compile(r"\bcvt\.rna?\.(?:satfinite\.)?tf32\.f32\b")),
             ("fp8", re.compile(r"\bcvt\.\w+(?:\.\w+)*\.(?:e4m3x2|e5m2x2|e2m1x2)\b"))]


def ptx_uses(ptx: str, skip: set[str]) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    entries = list(PTX_ENTRY.finditer(ptx))
    for n, entry in enumerate(entries):
        name = entry.group(1)
        if name in skip:
            continue
        body = ptx[entry.end(): entries[n + 1].start() if n + 1 < len(entries) else len(ptx)]
        uses: dict[str, str] = {}
        for m in PTX_HALF.finditer(body):
            end = body.find(";", m.end())
            uses.setdefault("bf16" if m.group(2).startswith("bf16") else "fp16", body[m.start():end + 1].strip())
        for m in PTX_MMA.finditer(body):
            op = m.group(1)
            types = re.findall(r"\.(tf32|bf16|f16|e4m3|e5m2|s8|u8|s4|u4|b1|f64)\b", op)
            kinds = {"e4m3": "fp8", "e5m2": "fp8", "s8": "int8", "u8": "int8", "s4": "int8", "u4": "int8",
                     "b1": "int1", "f64": "", "tf32": "tf32", "bf16": "bf16", "f16": "fp16"}
            picked = [kinds[t] for t in types if kinds[t]] if types else ["fp16"]
            if "f64" in types and not picked:
                continue
            for kind in picked or ["fp16"]:
                uses.setdefault(kind, op)
        for kind, pattern in PTX_OTHER:
            if (hit := pattern.search(body)) is not None:
                uses.setdefault(kind, hit.group(0))
        if uses:
            found[name] = uses
    return found


PRECISION_KINDS = ("tf32", "bf16", "fp16", "fp8", "int8", "int1")


def permitted_kinds(precision: str, allow: Iterable[str]) -> set[str]:
    return PERMITTED.get(precision, set()) | {precision} | {a.lower() for a in allow}


def device_findings(uses: dict[str, dict[str, str]], precision: str, allow: Iterable[str], line: int,
                    source: str) -> list[Finding]:
    permitted = permitted_kinds(precision, allow)
    findings: list[Finding] = []
    for kernel, kinds in sorted(uses.items()):
        name = demangle([kernel]).get(kernel, kernel)
        for kind, instruction in sorted(kinds.items()):
            if kind in PRECISION_KINDS and kind not in permitted:
                what = f"{kind} tensor-core math" if re.match(r"[A-Z]*MMA|w?mma|wgmma", instruction) else f"{kind} arithmetic"
                findings.append(Finding("precision", f"the compiled kernel `{name}` does {what} (`{instruction}` in its "
                                        f"{source}), lower precision than this {precision} problem allows", line, 0))
            elif kind == "timer":
                findings.append(Finding("harness", f"the compiled kernel `{name}` reads a GPU clock or counter (`{instruction}` in its "
                                        f"{source}); the harness owns the timer", line, 0))
            elif kind == "printf":
                findings.append(Finding("io", f"the compiled kernel `{name}` prints from the device (vprintf in its "
                                        f"{source}); a solution computes, the harness reports", line, 0))
    return findings


# --- the whole inspection ---------------------------------------------------------------------------


@dataclass
class Inspection:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be inspected, and why
    sass: str | None = None  # the candidate's SASS as inspected (the resource report reuses it)


def _harness_kernels(code: str, is_sass: bool) -> set[str]:
    """The device functions of the harness-only object: the harness's own kernels, not the candidate's."""
    if is_sass:
        return {m.group(1) for line in code.splitlines() if (m := SASS_FUNCTION.match(line))}
    return {m.group(1) for m in PTX_ENTRY.finditer(code)}


def device_code(obj: Path, timeout: float, cache: Path | None = None) -> tuple[str | None, str | None, str]:
    """(SASS, PTX, note): the object's device code as cuobjdump prints it; None where it is not available.
    Both are read: the SASS is what executes; the PTX also names what SASS leaves anonymous (a `CALL.ABS` to
    vprintf), and stands in when there is no SASS (no nvdisasm). A host-only object gives ("", "", "").
    With `cache`, a complete reading is kept there under the object's content hash: the harness-only object
    is the same for every candidate of a problem, and disassembling it again costs most of a second."""
    cuobjdump = find_cuobjdump()
    if cuobjdump is None:
        return None, None, "device code not inspected: cuobjdump not found (pip install nvidia-cuda-cuobjdump)"
    if cache is None:
        return _read_device_code(cuobjdump, obj, timeout)
    key = hashlib.sha256(obj.read_bytes() + b"\0" + cuobjdump.encode()).hexdigest()[:24]
    kept = cache / f"{key}.devcode.json"
    try:
        sass, ptx = json.loads(kept.read_text())
        os.utime(kept)  # recently used: the cache's pruning (localbuild.prune) keeps it
        return sass, ptx, ""
    except (OSError, ValueError, TypeError):
        pass
    sass, ptx, note = _read_device_code(cuobjdump, obj, timeout)
    if sass is not None and ptx is not None and not note:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = kept.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps([sass, ptx]))
        os.replace(tmp, kept)  # atomic: a concurrent evaluation reads all of it or none
    return sass, ptx, note


def _read_device_code(cuobjdump: str, obj: Path, timeout: float) -> tuple[str | None, str | None, str]:
    env = cuobjdump_env(cuobjdump)
    code, sass, err = _run([cuobjdump, "-sass", str(obj)], timeout, env=env)
    if "does not contain device code" in (sass + err):
        return "", "", ""
    sass_text = sass if code == 0 and "Function" in sass else None
    code, ptx, err2 = _run([cuobjdump, "-ptx", str(obj)], timeout, env=env)
    ptx_text = ptx if code == 0 and (".entry" in ptx or ".func" in ptx) else None
    if sass_text is None and ptx_text is None:
        if code == 0:
            return "", "", ""
        return None, None, f"device code not inspected: cuobjdump failed: {(err or err2).strip()[-200:]}"
    note = "" if sass_text is not None else "SASS not available (nvdisasm missing?): device code inspected as PTX only"
    return sass_text, ptx_text, note


def inspect(candidate: Path, harness_only: Path, harness_objects: list[Path], *, precision: str, allow: Iterable[str],
            line: int, timeout: float = 60, cache: Path | None = None) -> Inspection:
    """Findings for the candidate object. `harness_only` is the harness compiled with an empty solution;
    `harness_objects` are the objects it is linked with (main.o, baseline.o): the harness's calls."""
    result = Inspection()
    allowed_libs = {a.lower() for a in allow}
    cand, base = symbols(candidate, timeout), symbols(harness_only, timeout)
    if cand is None or base is None:
        result.notes.append("host symbols not inspected: nm could not read the objects")
    else:
        base_names = {s.name for s in base if not s.undefined}
        harness_undefined: set[str] = set()
        harness_defined: set[str] = set()
        for obj in harness_objects:
            for s in symbols(obj, timeout) or []:
                (harness_undefined if s.undefined else harness_defined).add(s.name)
        seen: set[str] = set()
        calls: list[Finding] = []
        for s in cand:
            if s.name in seen:
                continue
            seen.add(s.name)
            message = _symbol_problem(s, base_names, harness_undefined, harness_defined, allowed_libs)
            if message:
                (calls if s.undefined else result.findings).append(Finding("object", message, line, 0))
        result.findings[:0] = calls  # what it calls says most about a cheat: first
        # With device code in the build (nvcc, not a host-only stand-in), the work must run in a kernel of the
        # solution's own; a solution that only copies (the answer computed on the host, or kept from an
        # earlier call) is not a GPU kernel. Reference libraries the problem allows are the exception.
        if "fatbinData" in base_names and not allowed_libs and (
                not own_kernels(cand) or launch_starts_kernels(candidate, timeout) is False):
            result.findings.append(Finding("object", "the compiled solution launches no kernel of its own from "
                                           "launch(): the work must run on the GPU, in the solution's kernels", line, 0))
    cand_init, base_init = init_array_bytes(candidate, timeout), init_array_bytes(harness_only, timeout)
    if cand_init is not None and base_init is not None and cand_init > base_init:
        result.findings.append(Finding("object", f"the solution has a static constructor ({cand_init - base_init} bytes "
                                       "of .init_array beyond the harness's): code that runs before main is not allowed",
                                       line, 0))
    cand_fini, base_fini = table_bytes(candidate, DESTRUCTORS, timeout), table_bytes(harness_only, DESTRUCTORS, timeout)
    if cand_fini is not None and base_fini is not None and cand_fini > base_fini:
        result.findings.append(Finding("object", f"the solution has a static destructor ({cand_fini - base_fini} bytes "
                                       "of .fini_array beyond the harness's): code that runs after main is not allowed",
                                       line, 0))
    for pattern, what, when in ((CONSTRUCTORS, "constructor", "before"), (DESTRUCTORS, "destructor", "after")):
        if any(f"static {what}" in f.message for f in result.findings):
            continue
        cand_code, base_code = table_code(candidate, pattern, timeout), table_code(harness_only, pattern, timeout)
        if cand_code is None or base_code is None:
            result.notes.append(f"static {what}s not compared: objdump or readelf could not read the objects")
        elif cand_code != base_code:
            result.findings.append(Finding("object", f"the solution has a static {what}: what the unit's {what} table "
                                           f"runs {when} main differs from the harness's own (a static object's "
                                           "constructor folded into the unit's initializer, or an entry of its own): "
                                           f"code that runs {when} main is not allowed", line, 0))
    ifuncs = indirect_functions(candidate, timeout)
    if ifuncs:
        result.findings.append(Finding("object", "the solution defines an indirect function (IFUNC) "
                                       + ", ".join(f"`{name}`" for name in ifuncs[:5]) + ": its resolver runs while "
                                       "the program is loaded, before main (code outside launch is not allowed)",
                                       line, 0))
    outside = code_outside_text(candidate, timeout)
    if ".note.GNU-stack" in outside:
        outside.remove(".note.GNU-stack")
        result.findings.append(Finding("object", "the solution asks for an executable stack (.note.GNU-stack marked "
                                       "executable): machine code built in an array could run, where no check of the "
                                       "object sees it", line, 0))
    if outside:
        result.findings.append(Finding("object", f"the solution puts code in section {', '.join(outside)} (only .text "
                                       "is allowed: .init/.fini code runs before or after main, outside launch)",
                                       line, 0))
    hidden = data_as_code(candidate, timeout)
    if hidden:
        result.findings.append(Finding("object", "the solution places bytes where they would run unchecked: "
                                       + "; ".join(hidden) + " (only its functions may be code)", line, 0))
    registered = registrations_outside_nvcc(candidate, timeout)
    if registered is None:
        result.notes.append("device-code registration not inspected: objdump or readelf could not read the object")
    elif registered:
        result.findings.append(Finding("object", "the solution registers device code itself ("
                                       + "; ".join(f"`{r}`" for r in registered[:4]) + "): a fatbinary of its own, "
                                       "kept as data, would run kernels that no check of the object has read", line, 0))
    instructions = host_instructions(candidate, timeout)
    if instructions is None:
        result.notes.append("host instructions not inspected: objdump not found")
    elif instructions:
        result.findings.append(Finding("object", "the solution's host code contains "
                                       + ", ".join(f"`{i}`" for i in instructions)
                                       + " (system calls without libc, or a CPU timer): not allowed", line, 0))
    sass, ptx, note = device_code(candidate, timeout)
    result.sass = sass
    if note:
        result.notes.append(note)
    if sass or ptx:
        base_sass, base_ptx, _ = device_code(harness_only, timeout, cache)
        uses: dict[str, dict[str, str]] = {}
        for text, is_sass, harness_text in ((sass, True, base_sass), (ptx, False, base_ptx)):
            if not text:
                continue
            skip = _harness_kernels(harness_text or "", is_sass)
            for kernel, kinds in (sass_uses(text, skip) if is_sass else ptx_uses(text, skip)).items():
                for kind, instruction in kinds.items():
                    uses.setdefault(kernel, {}).setdefault(kind, instruction)  # SASS first: what executes
        result.findings.extend(device_findings(uses, precision, allow, line, "device code"))
    return result


# Library code a solution's object may contain outside its namespace: instantiations of standard-library and
# CUDA-header templates and inline functions (std::vector<float>, cudaMalloc<float>, __half's operators).
LIBRARY_CODE = re.compile(r"^(?:std|__gnu_cxx|__cxxabiv1|nvcuda|cooperative_groups|cub|thrust|cuda)::|"
                          r"^(?:cuda[A-Z]\w*|__\w+|make_\w+|operator\W)")
# Standard-library functions a solution may call (strings, containers, exceptions), by demangled prefix.
LIBRARY_CALLS = re.compile(r"^std::(?:__cxx11::basic_string<|basic_string<|_Rb_tree|_Hash_bytes|__detail::_Prime_rehash"
                           r"|_List_node_base|bad_alloc|bad_array_new_length|exception|runtime_error|logic_error"
                           r"|length_error|out_of_range|invalid_argument|__throw_)")
LINKER_PROVIDED = {"_GLOBAL_OFFSET_TABLE_", "__dso_handle", "DW.ref.__gxx_personality_v0"}


def _symbol_problem(s: Symbol, base_names: set[str], harness_undefined: set[str], harness_defined: set[str],
                    allowed_libs: set[str]) -> str:
    shown = s.demangled if s.demangled != s.name else s.name
    if s.name in LINKER_PROVIDED:
        return ""
    if s.undefined:
        # The entity's qualified name, not the demangled text: a function template's starts with its return type,
        # so `std::string shape_text<1024>()`, a harness helper kept undefined by `extern template`, matched
        # `std::__cxx11::basic_string<` and linked to main.o's copy (red-team).
        base = _base(s.demangled)
        if ALLOWED_UNDEFINED.fullmatch(s.name) or (LIBRARY_CALLS.match(s.demangled) and base.startswith("std::")) \
                or LIBRARY_CALLS.match(base):
            return ""
        if s.name in harness_defined:
            return f"the compiled solution calls the harness's own code `{shown}` (the harness owns the result and the timer)"
        lib = re.match(r"^(cublasLt|cublas|cudnn|cufft|cusparse|cusolver|curand|cutensor)", s.name)
        if lib and lib.group(1).lower() in allowed_libs:
            return ""  # a reference library the problem explicitly allows
        return f"the compiled solution calls `{shown}`, which {describe(s.name, s.demangled)}"
    base = _base(s.demangled)
    if belongs_to_solution(s) or s.name in base_names:
        return ""
    if s.local:
        if COMPILER_LOCAL.search(s.name) or re.match(r"^(?:std|__gnu_cxx)::", base):
            return ""  # compiler labels; library templates instantiated with the solution's own types
        return (f"the compiled solution defines or uses `{shown}` outside namespace {NAMESPACE} (harness code such as "
                "`reference`, or code that escaped the solution's namespace)")
    if s.name in harness_undefined:
        return (f"the compiled solution defines `{shown}`, which the harness calls: it would replace the harness's "
                "(or the runtime's) own")
    if not s.name.startswith("_Z"):
        return (f"the compiled solution defines the C symbol `{shown}` outside namespace {NAMESPACE}: it could "
                "interpose on the CUDA runtime or libc")
    if s.weak and LIBRARY_CODE.match(base):
        return ""  # an inline/template instantiation: the harness's copy is linked first and wins
    if base.startswith("spd::") or s.name in harness_defined:
        return f"the compiled solution uses the harness's own code `{shown}` (the harness owns the result and the timer)"
    return f"the compiled solution defines `{shown}` outside namespace {NAMESPACE} (an escape from the solution's namespace)"


def own_kernels(syms: list[Symbol]) -> list[str]:
    """The solution's kernels, by their host launch stubs."""
    return sorted({s.demangled for s in syms if not s.undefined and _base(s.demangled).startswith(
        f"__device_stub__ZN{len(NAMESPACE)}{NAMESPACE}")})


def localize(obj: Path, timeout: float = 60) -> str:
    """Make every strong global symbol of the checked candidate object local except its entry point
    `sp_candidate::launch` (objcopy --localize-symbol): nothing it defines can then stand in for a symbol of
    the harness, the runtime or libc at link time, whatever the checks above missed. Weak (COMDAT) inline and
    template instantiations stay as they are: the linker keeps one copy of each group, main.o's first, and
    the references into a discarded group must still resolve. '' on success, else why not."""
    objcopy = shutil.which("objcopy")
    syms = symbols(obj, timeout)
    if objcopy is None or syms is None:
        return "objcopy or nm not found: the candidate's symbols were not localized"
    strong = sorted({s.name for s in syms if s.kind in "TDBRGSC" and not s.demangled.startswith(f"{NAMESPACE}::launch(")})
    if not strong:
        return ""
    code, _, err = _run([objcopy, *(f"--localize-symbol={name}" for name in strong), str(obj)], timeout)
    return "" if code == 0 else f"objcopy failed: {err.strip()[-200:]}"


def exported_interpositions(binary: Path, candidate_only: set[str], timeout: float = 30) -> list[str]:
    """Symbols the linked program exports to its shared libraries (so they replace the libraries' own)
    that only the candidate defines."""
    exported = symbols(binary, timeout, dynamic=True)
    if exported is None:
        return []
    return sorted({s.demangled for s in exported if not s.undefined and s.name in candidate_only})
