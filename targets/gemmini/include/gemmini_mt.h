/* gemmini-rocc-tests' include/gemmini_mt.h runs a program on several cores, each with its own Gemmini
 * (START_THREADPOOL / END_THREADS, the *_parallel_auto convolutions that split the work between them). The
 * native model is one core with one Gemmini, so such a program stops at its include with the reason. */
#error "gemmini_mt.h is upstream's multi-core thread pool (one Gemmini per core): the model runs one core with one Gemmini, so a multi-core program cannot run here; measure it on FireSim or Verilator through the gemmini-command backend"
