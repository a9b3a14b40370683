"""What one call into the math library costs the RISC-V core, measured on Spike, next to the per-call charge
the native model uses for it (targets/gemmini/model/host_calls.h).

Natively libm is not instrumented, so the native model charges each call of the listed functions a fixed
number of host instructions. This program is where those numbers come from: for every function it builds a
bare-metal RISC-V program (the Spike build's compiler, flags and picolibc) that reads minstret around one
direct call, for arguments spread over the range kernels use (see ARGUMENTS), subtracts the same read
around no call, and prints the mean, the spread and the header's value.

    .venv/bin/python benchmarks/gemmini_host_call_costs.py [--check]   (--check: exit 1 when a header value
                                                                      is more than 10% from the mean)
Needs the gemmini-spike tools (scripts/setup/gemmini-spike.sh).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

from speedpatch.targets.gemmini import build

SAMPLES = 64
# Arguments per kind of function: activations and scales live within a few units of zero; logarithms take
# positive values; powers a positive base and a small exponent.
ARGUMENTS = {
    "default": "-8.0 + 16.0 * k / (N - 1)",
    "log": "0.05 + 8.0 * k / (N - 1)",
    "pow_base": "0.1 + 4.0 * k / (N - 1)",
    "pow_exp": "-2.0 + 4.0 * ((k * 37) % N) / (N - 1)",
}


def header_costs() -> dict[str, tuple[str, int, str, int]]:
    """name -> (return type, argument count, argument type, instructions) from host_calls.h."""
    rows = re.findall(r"^\s*X\((\w+),\s*(\w+),\s*(\d),\s*(\w+),\s*(\d+)\)", build.HOST_CALLS_HEADER.read_text(),
                      re.MULTILINE)
    return {name: (ret, int(n), arg, int(insns)) for ret, name, n, arg, insns in rows}


def probe_source(costs: dict[str, tuple[str, int, str, int]]) -> str:
    lines = [
        "#include <math.h>", "#include <stdint.h>", "#include <stdio.h>", f"#define N {SAMPLES}",
        'static inline uint64_t instret(void) { uint64_t x; __asm__ volatile("csrr %0, minstret" : "=r"(x)); '
        "return x; }",
        "volatile double sink;",
        "int main(void) {",
        "  uint64_t t0, t1, empty = 1u << 30;",
        "  for (int k = 0; k < 8; k++) { t0 = instret(); t1 = instret(); if (t1 - t0 < empty) empty = t1 - t0; }",
    ]
    for name, (_, n, arg, _) in costs.items():
        first = ARGUMENTS["log"] if name.startswith("log") else ARGUMENTS["pow_base"] if name.startswith("pow") \
            else ARGUMENTS["default"]
        call = f"{name}(x)" if n == 1 else f"{name}(x, ({arg})({ARGUMENTS['pow_exp']}))"
        lines += [
            "  {",
            "    uint64_t total = 0, lo = ~0ull, hi = 0;",
            "    for (int k = 0; k < N; k++) {",
            f"      volatile {arg} v = ({arg})({first}); {arg} x = v;",
            f"      t0 = instret(); sink = {call}; t1 = instret();",
            "      uint64_t c = t1 - t0 - empty; total += c; if (c < lo) lo = c; if (c > hi) hi = c;",
            "    }",
            f'    printf("{name} %lu %lu %lu\\n", (unsigned long)((total + N / 2) / N), (unsigned long)lo, '
            "(unsigned long)hi);",
            "  }",
        ]
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    reason = build.spike_unavailable_reason()
    if reason:
        print(f"gemmini-spike is not usable here: {reason}")
        return 2
    costs = header_costs()
    with tempfile.TemporaryDirectory(prefix="host-calls-") as tmp:
        work = Path(tmp)
        (work / "probe.c").write_text(probe_source(costs))
        built, elf = build.build_spike(work / "probe.c", work)
        if elf is None:
            print(built.output)
            return 1
        ran = build.run_spike(elf, work, timeout=120)
    measured = {m[0]: (int(m[1]), int(m[2]), int(m[3]))
                for m in re.findall(r"^(\w+) (\d+) (\d+) (\d+)$", ran.output, re.MULTILINE)}
    print(f"{'function':12} {'mean':>6} {'min':>6} {'max':>6} {'header':>7} {'off':>7}   (RISC-V instructions per "
          f"call, {SAMPLES} arguments each)")
    worst = 0.0
    for name, (_, _, _, charged) in costs.items():
        if name not in measured:
            print(f"{name:12} not measured: {ran.output[-300:]}")
            return 1
        mean, lo, hi = measured[name]
        off = (charged - mean) / mean if mean else 0.0
        worst = max(worst, abs(off))
        print(f"{name:12} {mean:6} {lo:6} {hi:6} {charged:7} {off:+7.1%}")
    print(f"largest difference between a header value and the measured mean: {worst:.1%}")
    return 1 if args.check and worst > 0.10 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
