"""gemmini-spike: a kernel that takes control flow from the harness's RISC-V program.

On Spike the kernel and the harness are one bare-metal program in machine mode. The kernel object is
inspected instruction by instruction (no CSR access, no RoCC funct reserved for the harness, no indirect
jump), but a kernel may still write memory, its own stack frame included: rewriting its saved return
address makes its `ret` go anywhere, with no indirect jump in its code. These attacks use that to run
instructions the inspection never saw, and each one hides host work from the figure that re-verification
holds a native winner to (server/engine/reverify.py). Each kernel first does the library call (so its
output is correct) and then 100,000 loop iterations of host work (about 500,000 instructions: honestly
measured, the figure is about 514,000 cycles against the library call's 14,000)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from speedpatch.model import INCORRECT, NOT_MEASURED, REJECTED, RUNTIME_ERROR
from speedpatch.targets import get_target
from speedpatch.targets.base import EvalContext
from speedpatch.targets.gemmini import build

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "gemmini" / "matmul_128.c"
LIBRARY_CALL = ("tiled_matmul_auto(MAT_DIM_I, MAT_DIM_J, MAT_DIM_K, A, B, bias, C, MAT_DIM_K, MAT_DIM_J, MAT_DIM_J, "
                "MAT_DIM_J, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, 1, MATMUL_ACT, MATMUL_SCALE, 0, true, false, "
                "false, false, false, 0, WS);")


def insn_r(funct: int) -> int:
    """`.insn r 0x7b, 3, funct, x0, x0, x0`: a custom-3 (RoCC) instruction word."""
    return (funct << 25) | (3 << 12) | 0x7B


COPY_ENDS = insn_r(next(f for f, name in build.HARNESS_FUNCTS.items() if name == "copy ends"))


def kernel(tail: str, before: str = "") -> str:
    """The library call, hidden host work, then `tail` (which redirects `work`'s return). The entry keeps a
    16-byte frame with its return address to the harness's trampoline at 8(sp): code that pops 16 bytes
    and returns through that slot goes back to the harness as if nothing happened."""
    return f"""{before}
__attribute__((noinline)) static void set_word(volatile unsigned long *at, unsigned long value) {{ *at = value; }}
__attribute__((noinline)) static void work(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {{
  {LIBRARY_CALL}
  gemmini_fence();
  volatile long s = 0;
  for (long i = 0; i < 100000; i++) s += i;
  {tail}
  s += 1; /* (no tail call: set_word must return here, and this frame's epilogue then return elsewhere) */
}}
void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {{
  work(A, B, bias, C);
  gemmini_fence();
}}"""


def evaluate(spike, tmp_path: Path, region: str):
    original = EXAMPLE.read_text()
    (k,) = get_target("gemmini").find_kernels(original)
    work = tmp_path / "work"
    work.mkdir()
    ctx = EvalContext(kernel=k, path=str(EXAMPLE), workdir=work, timeout=240, baseline_source=original)
    return spike.evaluate(original[:k.start] + region + original[k.end:], ctx)


@pytest.mark.slow
@pytest.mark.parametrize("qualifier", ["", "const "], ids=["in data", "in constants"])
def test_a_kernel_that_returns_into_instruction_words_it_wrote_as_data_is_stopped(spike, tmp_path, qualifier):
    # csrw minstret, x0 (Spike's instruction count, from which the model charges host work); then pop the
    # entry's 16-byte frame and return to the harness. Before only code was made executable (start.S, PMP)
    # this ran and the model timed the kernel at 14,130 cycles (a static array) and 14,135 (a const one).
    stub = (f"static {qualifier}unsigned int stub[4] __attribute__((aligned(8))) = "
            "{0xb0201073u, 0x00813083u, 0x01010113u, 0x00008067u};")
    ev = evaluate(spike, tmp_path, kernel("set_word((volatile unsigned long *)__builtin_frame_address(0) - 1, "
                                          "(unsigned long)stub);", before=stub))
    assert ev.status == RUNTIME_ERROR, f"{ev.status} {ev.value} {ev.unit}: {ev.message}"
    assert "exit status 129" in ev.message, ev.message  # 128 + mcause 1: instruction access fault
    assert "instruction access fault" in ev.message, ev.message


@pytest.mark.slow
def test_a_kernel_that_returns_onto_the_copy_wrappers_end_mark_to_drop_its_host_work_is_refused(spike, tmp_path):
    # The copy wrappers' end mark (host_copies.c) makes the model forget the instructions since the copy
    # began. Found by its word in the readable code and "returned" onto, it made the model forget the
    # kernel's host work instead; the wrapper's epilogue (pop 16 bytes, return through 8(sp)) then went back
    # to the harness. Before the model required a copy under way it timed the kernel at 14,134 cycles.
    find = f"""__attribute__((noinline)) static unsigned long copy_end_mark(void) {{
  const volatile unsigned short *p = (const volatile unsigned short *)0x80000000ul;
  for (unsigned long i = 0; i < 0x40000; i++)
    if (p[i] == {COPY_ENDS & 0xFFFF:#x}u && p[i + 1] == {COPY_ENDS >> 16:#x}u) return (unsigned long)(p + i);
  return 0;
}}"""
    ev = evaluate(spike, tmp_path, kernel("set_word((volatile unsigned long *)__builtin_frame_address(0) - 1, "
                                          "copy_end_mark());", before=find))
    assert ev.status == REJECTED, f"{ev.status} {ev.value} {ev.unit}: {ev.message}"
    assert "tampering: the host clock" in ev.message and "no copy under way" in ev.message, ev.message


@pytest.mark.slow
def test_a_kernel_that_hides_an_instruction_inside_its_own_assembly_is_refused(spike, tmp_path):
    # Top-level assembly (under `#ifdef __riscv`, which the native build never sees) puts a word in .text
    # that objdump reads as `addi x0, t1, 263`; read 2 bytes in, the same bytes are `csrw minstret, x0`. The
    # object's disassembly showed no CSR access; the redirected return ran it. Before the region's asm was
    # checked on RISC-V too, the model timed the kernel at 14,131 cycles (natively: 614,198, honest).
    hidden = ("#ifdef __riscv\n"
              '__asm__(".text\\n.balign 4\\n.globl hid\\nhid:\\n.4byte 0x10730013\\n.2byte 0xb020\\n"\n'
              '        "ld ra, 8(sp)\\naddi sp, sp, 16\\nret\\n");\n'
              "void hid(void);\n#endif")
    ev = evaluate(spike, tmp_path, kernel("#ifdef __riscv\n  set_word((volatile unsigned long *)"
                                          "__builtin_frame_address(0) - 1, (unsigned long)hid + 2);\n#endif",
                                          before=hidden))
    assert ev.status == REJECTED, f"{ev.status} {ev.value} {ev.unit}: {ev.message}"
    assert "assembly of its own" in ev.message, ev.message



@pytest.mark.slow
def test_a_kernel_whose_data_did_not_pass_through_the_accelerators_dma_is_refused(spike, tmp_path):
    # The array does every MAC the problem needs, on scratchpad rows no DMA filled; the host computes the
    # output from the inputs with plain loads and stores it. Natively the DMA's bytes are held to the problem's
    # inputs and output; on Spike only the MACs were, and the model inside Spike timed it at 15,025,859 cycles,
    # "correct on Spike" (the harness's line did not carry the problem's bytes).
    region = """void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {
  gemmini_config_ex(WS, NO_ACTIVATION, 0);
  for (int i = 0; i < MAT_DIM_I * MAT_DIM_J * MAT_DIM_K / (DIM * DIM * DIM); i++) {
    gemmini_preload_zeros(0);
    gemmini_compute_preloaded(0, GARBAGE_ADDR);
  }
  for (int i = 0; i < MAT_DIM_I; i++)
    for (int j = 0; j < MAT_DIM_J; j++) {
      int32_t sum = bias[j];
      for (int k = 0; k < MAT_DIM_K; k++) sum += A[i * MAT_DIM_K + k] * B[k * MAT_DIM_J + j];
      int32_t q = sum >> 5, rem = sum & 31; /* MATMUL_SCALE = 1/32, rounded half to even */
      if (rem > 16 || (rem == 16 && (q & 1))) q++;
      C[i * MAT_DIM_J + j] = (elem_t)(q > 127 ? 127 : q < -128 ? -128 : q);
    }
  gemmini_fence();
}"""
    ev = evaluate(spike, tmp_path, region)
    assert ev.status == REJECTED, f"{ev.status} {ev.value} {ev.unit}: {ev.message}"
    assert "the accelerator read 0 bytes of DRAM, the problem's inputs are 32768 bytes" in ev.message, ev.message


@pytest.mark.slow
def test_a_kernel_cannot_change_the_harness_s_float_registers_through_its_own_saved_copies(spike, tmp_path):
    # The RISC-V ABI has a callee preserve fs0-fs11, and gcc keeps the gold's scale (1/32) in one of them
    # across the kernel call. A kernel function that uses float registers saves the harness's values in its
    # own frame (below the frames the model hashes) and restores them on return: rewriting the saved scale
    # (NaN-boxed 0x3d000000) to 0.0f made the gold all zeros. The kernel writes zeros through the DMA and pads
    # the array's MACs on whatever the scratchpad holds; before the trampoline kept fs0-fs11 (and fcsr) itself,
    # the model inside Spike called it correct at 18,832 cycles (the honest library call: 14,192).
    region = """static volatile float keep;
static int rescaled;
__attribute__((noinline)) static void rescale(void) {
  unsigned long *p = (unsigned long *)__builtin_frame_address(0);
  for (int i = 0; i < 128; i++)
    if (p[i] == 0xffffffff3d000000ul) { p[i] = 0xffffffff00000000ul; rescaled++; break; } /* its caller's copy */
}
void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {
  (void)bias;
  float f0 = keep, f1 = keep * 2, f2 = keep * 3, f3 = keep * 5, f4 = keep * 7; /* live across rescale() */
  gemmini_config_ld(MAT_DIM_K * sizeof(elem_t));
  for (int i = 0; i < MAT_DIM_I / DIM; i++)
    for (int k = 0; k < MAT_DIM_K / DIM; k++)
      gemmini_mvin(A + i * DIM * MAT_DIM_K + k * DIM, (i * (MAT_DIM_K / DIM) + k) * DIM);
  for (int k = 0; k < MAT_DIM_K / DIM; k++)
    for (int j = 0; j < MAT_DIM_J / DIM; j++)
      gemmini_mvin(B + k * DIM * MAT_DIM_J + j * DIM, 1024 + (k * (MAT_DIM_J / DIM) + j) * DIM);
  gemmini_config_ex(WS, NO_ACTIVATION, 0);
  for (int n = 0; n < MAT_DIM_I * MAT_DIM_J * MAT_DIM_K / (DIM * DIM * DIM); n++) {
    gemmini_preload_zeros(4096);
    gemmini_compute_preloaded(n % 64 * DIM, GARBAGE_ADDR);
  }
  gemmini_config_st(MAT_DIM_J * sizeof(elem_t));
  for (int i = 0; i < MAT_DIM_I / DIM; i++)
    for (int j = 0; j < MAT_DIM_J / DIM; j++) gemmini_mvout(C + i * DIM * MAT_DIM_J + j * DIM, 8192);
  rescale();
  keep = f0 + f1 + f2 + f3 + f4;
  if (rescaled) printf("rescaled the harness's scale\\n");
}"""
    ev = evaluate(spike, tmp_path, region)
    assert "rescaled the harness's scale" in ev.log, ev.log[-1500:]  # the attack still applies to this build
    assert ev.status == INCORRECT and "mismatch" in ev.message, f"{ev.status} {ev.value} {ev.unit}: {ev.message}"


# After the kernel returns, the harness's own control flow must not pass through memory the kernel could
# write: picolibc's stdout on Spike is a FILE whose writer is a function pointer in .data (the kernel may
# name `stdout` to print), and malloc's free lists live in the heap. A print or an allocation between the
# kernel's return and the verdict hand-over would run a writer the kernel planted, after its checked call
# closed (then free to rewrite the harness's frames), or fail on a heap the kernel emptied.

@pytest.mark.slow
def test_a_kernel_that_empties_the_heap_does_not_stop_the_harness_before_its_verdict(spike, tmp_path):
    # Before the gold's scratch was allocated with the other buffers, the gold computation after the kernel
    # found no memory: "out of memory", exit status 2, through stdout's writer.
    region = f"""static int emptied;
void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {{
  {LIBRARY_CALL}
  if (!emptied) {{
    emptied = 1;
    while (malloc(1 << 16) != NULL) {{}}
    while (malloc(64) != NULL) {{}}
  }}
}}"""
    ev = evaluate(spike, tmp_path, region)
    assert ev.status == NOT_MEASURED and "correct on Spike" in ev.message, f"{ev.status}: {ev.message}"


@pytest.mark.slow
def test_the_mismatch_is_printed_after_the_verdict(spike, tmp_path):
    # the first print after a wrong kernel used to be the mismatch line, before the verdict existed
    region = f"void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {{\n" \
             f"  {LIBRARY_CALL.replace('tiled_matmul_auto(MAT_DIM_I', 'tiled_matmul_auto(32')}\n}}"
    ev = evaluate(spike, tmp_path, region)
    assert ev.status == INCORRECT and "mismatch" in ev.message, f"{ev.status}: {ev.message}"
    assert ev.log.index("speedpatch: correct=0") < ev.log.index("speedpatch: mismatch"), ev.log[-2000:]



@pytest.mark.slow
def test_a_kernel_cannot_reach_the_host_through_spikes_system_call_proxy(spike, tmp_path):
    # With HTIF (`tohost`/`fromhost` in the ELF, next to stdout's FILE), a request block written there made
    # Spike's front end run openat and read on the host: the kernel printed /proc/self/maps of the Spike
    # process; openat/write/unlinkat would have replaced the model's statistics file, /proc/self/mem the
    # model itself. Without the symbols nobody answers: the kernel gives up after a bounded wait.
    region = f"""static volatile unsigned long request[8] __attribute__((aligned(64)));
static char text[4096];
static long host_call(unsigned long which, unsigned long a0, unsigned long a1, unsigned long a2) {{
  volatile unsigned long *tohost = (volatile unsigned long *)(((unsigned long)stdout) & ~0xffful);
  if (*tohost != 0 || tohost[8] != 0) return -1; /* not an idle HTIF mailbox: the program's own data */
  request[0] = which; request[1] = a0; request[2] = a1; request[3] = a2;
  gemmini_fence();
  *tohost = (unsigned long)request;
  for (long i = 0; i < 2000000; i++)
    if (tohost[8]) {{ tohost[8] = 0; return (long)request[0]; }}
  return -1;
}}
static int tried;
void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {{
  {LIBRARY_CALL}
  if (tried) return;
  tried = 1;
  static const char path[] = "/proc/self/maps";
  long fd = host_call(56, (unsigned long)-100, (unsigned long)path, sizeof path); /* openat(AT_FDCWD, ...) */
  long n = fd >= 0 ? host_call(63, (unsigned long)fd, (unsigned long)text, sizeof text - 1) : -1; /* read */
  if (n > 0) {{ text[n] = 0; printf("host file: %s\\n", text); }}
}}"""
    ev = evaluate(spike, tmp_path, region)
    assert "host file:" not in ev.log and "r-xp" not in ev.log, ev.log[:1500]
    assert ev.status == NOT_MEASURED, f"{ev.status}: {ev.message}"


def riscv_region_problems(tmp_path: Path, region: str) -> list[str]:
    """build.preprocessed_region_problems(riscv=True) on `region` after the preamble of matmul_128.c,
    preprocessed by the RISC-V compiler as build_spike_trusted does."""
    if shutil.which(build.RISCV_CC) is None:
        pytest.skip("the RISC-V toolchain is not installed")
    original = EXAMPLE.read_text()
    (k,) = get_target("gemmini").find_kernels(original)
    src = tmp_path / "region.c"
    src.write_text(f"{original[:k.start]}\nsentinel_x\n{region}\nsentinel_x_end\n")
    out = subprocess.run([build.RISCV_CC, *build.RISCV_CFLAGS, *build.KERNEL_TU_CFLAGS, "-I", str(build.INCLUDE_DIR.parent),
                          "-I", str(build.INCLUDE_DIR), "-E", str(src)], capture_output=True, text=True, check=True)
    return build.preprocessed_region_problems(out.stdout, "sentinel_x", riscv=True)


def test_the_gemmini_apis_own_asm_statements_pass_the_riscv_region_check(tmp_path):
    region = ("void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {\n"
              "  gemmini_config_ld(16);\n  gemmini_extended_mvin(A, 0, 16, 16);\n  gemmini_preload_zeros(0);\n"
              "  gemmini_compute_preloaded(0, GARBAGE_ADDR);\n  gemmini_mvout(C, 0);\n  gemmini_fence();\n"
              "  uint64_t x;\n  ROCC_INSTRUCTION_RD_RS1_RS2(XCUSTOM_ACC, x, 0, 0, 126);\n  (void)x;\n}\n")
    assert riscv_region_problems(tmp_path, region) == []


@pytest.mark.parametrize("code", [
    'void hidden(void) __asm__("hidden\\n.4byte 0xb0201073");',
    'void f(void) { register long r __asm__("t0") = 1; (void)r; }',
    'void f(void) { __asm__ volatile(".2byte 0x0001"); }',
    'void f(void) { __asm__ volatile("fence\\n.4byte 0xb0201073"); }',
], ids=["an asm label", "a register variable", "data", "two lines"])
def test_assembly_other_than_the_gemmini_apis_is_refused_on_riscv(tmp_path, code):
    (problem,) = riscv_region_problems(tmp_path, code)
    assert "assembly of its own" in problem, problem
