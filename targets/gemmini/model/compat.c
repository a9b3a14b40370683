/* read_cycles() for programs that call it without defining it.
 *
 * Upstream's early headers defined the cycle counter in the header itself (gemmini-rocc-tests
 * include/systolic.h, which gemmini.h grew from: `unsigned long read_cycles()` next to the instruction
 * macros), so programs of that time call read_cycles() including only gemmini.h (bareMetalC/tiled_matmul_os.c
 * of the 12-argument tiled_matmul_auto era). Today's headers define it in gemmini_testutils.h, as a static
 * function, and many programs define their own static one; a definition in gemmini.h would clash with
 * both. So it lives here, in its own member of the model archive, weak: the linker takes it only when the
 * program's own file leaves read_cycles undefined (a C file calling it undeclared gets gcc's implicit
 * declaration, int read_cycles(), which reads the low 32 bits: counts below 2^31 come through unchanged).
 *
 * The call becomes a jump (-O2 sibling call), so the model sees the program's own return address. The
 * program's block table does not split a basic block at a call to this function (only at calls into the
 * model itself), so the instructions after the call up to the block's end are charged before the counter is
 * read rather than after: a few host instructions move into (or out of) the timed region. */
#include <stdint.h>

uint64_t gemmini_model_cycles(void);

__attribute__((weak)) unsigned long read_cycles(void) { return (unsigned long)gemmini_model_cycles(); }
