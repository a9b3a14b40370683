"""How closely gemmini-native's figure and the model inside Spike agree on the same code.

Re-verification (server/engine/reverify.py) rejects a run's winner whose native figure is more than
FIGURE_TOLERANCE below the figure the model inside Spike measures for the same kernel, where the program
cannot reach the model. This prints, per example file, both figures, the host work each counted (x86 basic
blocks natively, retired RISC-V instructions on Spike) and their ratio, so the tolerance can be checked
against honest code. Deterministic model: one run each; Spike runs the whole harness (its CPU reference
too), so the large problems take a minute or more each.

    .venv/bin/python benchmarks/gemmini_spike_agreement.py [FILE.c ...]   (default: examples/gemmini/*.c and
                                                                         examples/gemmini/paper/*.c)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from speedpatch.engine.reverify import FIGURE_TOLERANCE
from speedpatch.model import Evaluation
from speedpatch.targets import get_target
from speedpatch.targets.base import EvalContext

REPO = Path(__file__).resolve().parents[1]


def evaluate(backend_name: str, path: Path) -> Evaluation:
    target = get_target("gemmini")
    source = path.read_text()
    (kernel,) = target.find_kernels(source)
    with tempfile.TemporaryDirectory(prefix="agreement-") as work:
        ctx = EvalContext(kernel=kernel, path=str(path), workdir=Path(work), timeout=1800, baseline_source=source)
        return target.backend(backend_name).evaluate(source, ctx)


def main(argv: list[str]) -> int:
    spike = get_target("gemmini").backend("gemmini-spike")
    usable = spike.availability({})
    if not usable.usable:
        print(f"gemmini-spike is not usable here: {usable.reason}")
        return 2
    files = [Path(a) for a in argv] or sorted((REPO / "examples" / "gemmini").glob("*.c")) + sorted(
        (REPO / "examples" / "gemmini" / "paper").glob("*.c"))
    print(f"{'file':40} {'native':>12} {'spike':>12} {'native/spike':>12} {'host native':>12} {'host spike':>12}")
    worst = 0.0
    for path in files:
        native, on_spike = evaluate("gemmini-native", path), evaluate("gemmini-spike", path)
        if not (native.value and on_spike.value and on_spike.unit == "cycles"):
            print(f"{path.name:40} native {native.status}: {native.message[:60]} / spike {on_spike.status}: "
                  f"{on_spike.message[:60]}")
            continue
        ratio = native.value / on_spike.value
        worst = max(worst, 1 - ratio)
        print(f"{path.name:40} {native.value:12,.0f} {on_spike.value:12,.0f} {ratio:12.5f} "
              f"{native.feedback.get('host_cycles', 0):12,} {on_spike.feedback.get('host_cycles', 0):12,}", flush=True)
    print(f"largest shortfall of a native figure below Spike's: {worst:.3%} (re-verification allows "
          f"{FIGURE_TOLERANCE:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
