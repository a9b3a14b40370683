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
from pathlib import Path

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


def prepare(root: Path, dest: Path, xcustom: Path) -> Path:
    """Copy root/include (adapted) and our xcustom.h under dest; returns the folder to put on -I."""
    out = dest / "upstream"
    (out / "include").mkdir(parents=True, exist_ok=True)
    for header in sorted((root / "include").glob("*.h")):
        text = header.read_text(encoding="utf-8", errors="replace")
        (out / "include" / header.name).write_text(adapt_header(text), encoding="utf-8")
    shim = out / "rocc-software" / "src"
    shim.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(xcustom, shim / "xcustom.h")
    return out
