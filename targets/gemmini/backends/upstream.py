"""Using a real upstream gemmini-rocc-tests checkout's headers on the native model.

Setting: `[backend.gemmini-native] include_dir = "/path/to/gemmini-rocc-tests"` (the folder that holds
include/gemmini.h, include/gemmini_params.h and rocc-software/src/xcustom.h), or `--include-dir DIR` on
`speedpatch evaluate` / `speedpatch optimize` (resolved from the current folder; it wins over the file). Programs keep including
"include/gemmini.h" and "include/gemmini_testutils.h".

The upstream headers target a RISC-V core, so a native build needs exactly three adaptations, made on a
copy in the evaluation's scratch directory (the checkout is never modified):
  1. rocc-software/src/xcustom.h is replaced by speedpatch's, whose ROCC_INSTRUCTION_* macros call the
     model instead of emitting custom-3 instructions (on RISC-V it emits them as upstream does);
  2. `asm volatile("fence")` (gemmini_fence) becomes gemmini_model_fence();
  3. the `rdcycle` inline assembly of read_cycles becomes gemmini_model_cycles().
Nothing else is touched; anything else that only works on RISC-V will fail to compile and say so.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from speedpatch.targets.gemmini.csource import skip_literal, split_top_level

FENCE_ASM = re.compile(r"\basm\s+volatile\s*\(\s*\"fence\"\s*\)")
RDCYCLE_ASM = re.compile(r"\basm\s+volatile\s*\(\s*\"rdcycle\s+%0\"\s*:\s*\"=r\"\s*\(\s*(\w+)\s*\)\s*\)")


def check_root(root: Path) -> str:
    """Empty when `root` looks like a gemmini-rocc-tests checkout, else what is missing."""
    if not (root / "include" / "gemmini.h").is_file():
        return f"{root}/include/gemmini.h not found (include_dir must be the gemmini-rocc-tests folder)"
    return ""


def adapt_header(text: str) -> str:
    text = FENCE_ASM.sub("gemmini_model_fence()", text)
    return RDCYCLE_ASM.sub(lambda m: f"{m.group(1)} = gemmini_model_cycles()", text)


# the speedpatch harness's own headers (targets/gemmini/include), which an upstream checkout does not have
HARNESS_HEADERS = ("speedpatch_harness.h", "speedpatch_functs.h")


def prepare(root: Path, dest: Path, xcustom: Path) -> Path:
    """Copy root/include (adapted) and our xcustom.h under dest; returns the folder to put on -I."""
    out = dest / "upstream"
    (out / "include").mkdir(parents=True, exist_ok=True)
    for header in sorted((root / "include").glob("*.h")):
        text = header.read_text(encoding="utf-8", errors="replace")
        (out / "include" / header.name).write_text(adapt_header(text), encoding="utf-8")
    for name in HARNESS_HEADERS:  # a checkout has no speedpatch harness: a harness program gets ours
        if not (out / "include" / name).exists():
            shutil.copyfile(xcustom.parent / name, out / "include" / name)
    shim = out / "rocc-software" / "src"
    shim.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(xcustom, shim / "xcustom.h")
    return out


# ---- the program's own RISC-V counter reads ---------------------------------------------------------
#
# Programs often read the cycle counter themselves (`static uint64_t read_cycles() { asm volatile("rdcycle
# %0" : "=r"(c)); ... }`, a TICK(x) macro, `csrr %0, mcycle`). Natively that is RISC-V assembly the host
# assembler refuses, so such an asm statement becomes a read of the model's cycle counter, exactly as the
# headers' read_cycles does: the model's timed regions are the program's own, wherever its clock is.
# instret and time are other counters the model does not keep; a program reading them is refused by name.

_ASM_HEAD = re.compile(r"\b(?:asm|__asm|__asm__)\s*(?:(?:volatile|__volatile__|__volatile|inline|__inline__)\s*)*\(")
_CSR = {  # CSR names and numbers (RISC-V privileged spec: cycle 0xC00, time 0xC01, instret 0xC02, m* 0xB00/0xB02)
    "cycle": "cycle", "mcycle": "cycle", "0xc00": "cycle", "0xb00": "cycle", "3072": "cycle", "2816": "cycle",
    "time": "time", "0xc01": "time", "3073": "time",
    "instret": "instret", "minstret": "instret", "0xc02": "instret", "0xb02": "instret", "3074": "instret",
    "2818": "instret",
    "cycleh": "cycleh", "timeh": "timeh", "instreth": "instreth", "mcycleh": "cycleh", "minstreth": "instreth",
}
_COUNTER_TEMPLATE = re.compile(
    r"^(?:rd(?P<rd>cycleh?|timeh?|instreth?)\s+(?P<op1>%\w+|%\[\w+\])"
    r"|csrrs?\s+(?P<op2>%\w+|%\[\w+\])\s*,\s*(?P<csr>\w+)(?:\s*,\s*(?:x0|zero))?)$",
    re.IGNORECASE,
)
_OUTPUT = re.compile(r"^\s*(?:\[(?P<name>\w+)\]\s*)?\"=&?r\"\s*\((?P<lvalue>.*)\)\s*$", re.DOTALL)
_STRING = re.compile(r'"((?:\\.|[^"\\\n])*)"')
CYCLES_EXPR = "({ extern __UINT64_TYPE__ gemmini_model_cycles(void); gemmini_model_cycles(); })"
FENCE_EXPR = "({ extern void gemmini_model_fence(void); gemmini_model_fence(); })"


@dataclass(frozen=True)
class CounterRead:
    start: int  # character offsets of the whole asm statement (up to its closing parenthesis)
    end: int
    counter: str  # cycle, time, instret, cycleh...
    lvalue: str  # what the asm writes
    line: int  # 1-based


def _close(text: str, open_at: int) -> int:
    """Offset just past the parenthesis matching text[open_at] ('('), skipping string and char literals;
    -1 when unbalanced."""
    depth, i = 0, open_at
    while i < len(text):
        ch = text[i]
        if ch in "\"'":
            i = skip_literal(text, i)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def counter_reads(text: str) -> list[CounterRead]:
    """Every inline-asm statement of `text` whose template is one RISC-V counter read into one register
    output (rdcycle/rdtime/rdinstret, csrr/csrrs of cycle, time, instret or their machine-mode CSRs)."""
    found: list[CounterRead] = []
    for m in _ASM_HEAD.finditer(text):
        end = _close(text, m.end() - 1)
        if end < 0:
            continue
        parts = split_top_level(text[m.end():end - 1], ":")
        if len(parts) < 2:
            continue
        pieces = _STRING.findall(parts[0])
        if not pieces or _STRING.sub("", parts[0]).replace("\\\n", "").strip():
            continue  # not a template made only of string literals
        template = " ".join("".join(pieces).replace("\\t", " ").replace("\\n", " ").split())
        tm = _COUNTER_TEMPLATE.match(template)
        outputs = split_top_level(parts[1], ",")
        om = _OUTPUT.match(outputs[0]) if len(outputs) == 1 else None
        if tm is None or om is None:
            continue
        counter = (tm.group("rd") or _CSR.get(tm.group("csr").lower(), "")).lower()
        operand = tm.group("op1") or tm.group("op2")
        if not counter or operand not in ("%0", f"%[{om.group('name')}]"):
            continue
        found.append(CounterRead(m.start(), end, counter, " ".join(om.group("lvalue").split()),
                                 text.count("\n", 0, m.start()) + 1))
    return found


def counter_read_refusals(reads: list[CounterRead]) -> list[str]:
    """Why the native model cannot run these counter reads (empty when all read the cycle counter)."""
    other = [r for r in reads if r.counter != "cycle"]
    return [f"line {r.line}: the program reads the RISC-V {r.counter} counter in inline assembly; the native model "
            f"keeps only the cycle counter (rdcycle / csrr cycle / read_cycles()), so this program runs on the "
            f"gemmini-spike backend instead" for r in other]


def adapt_program(text: str, keep: tuple[int, int] | None = None) -> str:
    """text with each cycle-counter read in inline assembly replaced by a read of the model's counter and
    each `asm volatile("fence")` by the model's fence, on the same lines (a macro's line continuations
    kept). keep: a range left as written (a candidate's kernel region, whose clock reads are not the
    program's: see native.py)."""
    edits = [(r.start, r.end, f"(({r.lvalue}) = {CYCLES_EXPR})") for r in counter_reads(text) if r.counter == "cycle"]
    edits += [(m.start(), m.end(), FENCE_EXPR) for m in FENCE_ASM.finditer(text)]
    out, last = [], 0
    for start, end, replacement in sorted(edits):
        if start < last or (keep is not None and start < keep[1] and end > keep[0]):
            continue
        breaks = "".join("\\\n" if nl.startswith("\\") else "\n" for nl in re.findall(r"\\?\n", text[start:end]))
        out += [text[last:start], replacement, breaks]
        last = end
    out.append(text[last:])
    return "".join(out)


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)((?:[^\n]*\\\n)*[^\n]*)", re.MULTILINE)


def clock_names(text: str, keep: tuple[int, int]) -> dict[str, str]:
    """The functions and macros defined outside `keep` that read a RISC-V counter, directly or through
    another such name (a TICK(x) macro, a now() function calling it): name -> the counter read it leads to.
    A candidate's region that names one reads the clock (native.py refuses it)."""
    from speedpatch.targets.gemmini import csource

    def outside(start: int, end: int) -> bool:
        return end <= keep[0] or start >= keep[1]

    bodies: dict[str, str] = {}
    for fn in csource.functions(text):
        if outside(fn.start, fn.end):
            bodies[fn.name] = fn.text
    for m in _DEFINE.finditer(text):
        if outside(m.start(), m.end()):
            bodies[m.group(1)] = m.group(2)
    found: dict[str, str] = {}
    for name, body in bodies.items():
        reads = counter_reads(body)
        if reads:
            found[name] = f"{reads[0].counter} counter (inline assembly)"
    changed = True
    while changed:  # names reaching one of those, transitively
        changed = False
        for name, body in bodies.items():
            if name in found:
                continue
            via = next((n for n in re.findall(r"\b\w+\b", body) if n in found and n != name), None)
            if via is not None:
                found[name] = f"{found[via]} through {via}"
                changed = True
    return found
