/* gemmini-rocc-tests' include/matrix_util.h holds the helpers of its command-line gemm benchmark
 * (bareMetalC/gemm.c: create_rand_matrix_i, dump_matrix_i, compare_matrices_i...), a Linux/pk program that
 * reads its matrix sizes from argv and prints its usage and exits 1 without them. speedpatch runs a program
 * without arguments, so such a program stops at this include with the reason. */
#error "matrix_util.h belongs to gemmini-rocc-tests' command-line gemm benchmark (sizes read from argv, built for Linux/pk): speedpatch runs a program without arguments; write the sizes into the program (or use its harness, see examples/gemmini/)"
