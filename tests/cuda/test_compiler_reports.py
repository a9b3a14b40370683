"""Parsing what the compiler says (ptxas -v, cuobjdump -sass) and the occupancy arithmetic."""

from __future__ import annotations

from speedpatch.targets.cuda.occupancy import block_size, occupancy
from speedpatch.targets.cuda.ptxas import demangle_name, parse_ptxas
from speedpatch.targets.cuda.sass import instruction_mix

PTXAS = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_ZN12sp_candidate6tiled2ILi16EEEvPKfS2_Pfi' for 'sm_90'
ptxas info    : Function properties for _ZN12sp_candidate6tiled2ILi16EEEvPKfS2_Pfi
    8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 72 registers, used 1 barriers, 8192 bytes smem, 380 bytes cmem[0]
ptxas info    : Function properties for _ZN12sp_candidate6helperEf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'plain_c_kernel' for 'sm_90'
ptxas info    : Function properties for plain_c_kernel
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
"""

SASS = """\
\tcode for sm_90
\t\tFunction : _ZN12sp_candidate13matmul_kernelEPKfS1_Pfi
        /*0000*/                   LDC R1, c[0x0][0x28] ;                          /* 0x00000a00ff017b82 */
        /*0010*/                   LDG.E R28, desc[UR6][R26.64] ;                  /* 0x000000061a1c7981 */
        /*0020*/                   FFMA R17, R16, R28, R17 ;                       /* 0x0000001c10117223 */
        /*0030*/              @!P0 BRA 0xc50 ;                                     /* 0x0000000800cc8947 */
        /*0040*/                   FFMA R17, R19, R18, R17 ;
        /*0050*/                   STG.E desc[UR6][R2.64], R17 ;
        /*0060*/                   NOP ;
        /*0070*/                   HFMA2.MMA R17, -RZ, RZ, 0, 0 ;
"""


def test_demangle_takes_the_kernel_name_out_of_namespaces_and_templates() -> None:
    assert demangle_name("_ZN12sp_candidate13matmul_kernelEPKfS1_Pfi") == "matmul_kernel"
    assert demangle_name("_ZN12sp_candidate6tiled2ILi16EEEvPKfS2_Pfi") == "tiled2"
    assert demangle_name("_Z6kernelPf") == "kernel"
    assert demangle_name("plain_c_kernel") == "plain_c_kernel"


def test_ptxas_report_gives_registers_shared_memory_and_spills_per_kernel() -> None:
    kernels = parse_ptxas(PTXAS)
    assert list(kernels) == ["_ZN12sp_candidate6tiled2ILi16EEEvPKfS2_Pfi", "plain_c_kernel"]
    tiled = kernels["_ZN12sp_candidate6tiled2ILi16EEEvPKfS2_Pfi"]
    assert (tiled.name, tiled.registers, tiled.shared_bytes, tiled.barriers) == ("tiled2", 72, 8192, 1)
    assert (tiled.stack_bytes, tiled.spill_stores, tiled.spill_loads) == (8, 12, 16)
    assert kernels["plain_c_kernel"].registers == 10  # the device function in between changed nothing


def test_sass_mix_counts_opcodes_by_category_and_ignores_nops() -> None:
    mix = instruction_mix(SASS)["matmul_kernel"]
    assert mix["instructions"] == 7
    assert "fp16/bf16" not in mix["by_category"]  # HFMA2.MMA with RZ operands is ptxas's register move
    assert mix["by_category"]["fp32"] == 2 and mix["by_category"]["global_memory"] == 2
    assert mix["top"]["FFMA"] == 2 and "NOP" not in mix["top"]


def test_occupancy_is_full_for_a_light_256_thread_block_on_sm90() -> None:
    occ = occupancy("sm_90", 256, 32, 0)
    assert (occ["blocks_per_sm"], occ["warps_per_sm"], occ["occupancy"]) == (8, 64, 1.0)


def test_occupancy_is_halved_by_64_registers_per_thread() -> None:
    occ = occupancy("sm_90", 256, 64, 0)
    assert (occ["blocks_per_sm"], occ["occupancy"], occ["limited_by"]) == (4, 0.5, "registers")


def test_occupancy_limited_by_shared_memory() -> None:
    occ = occupancy("sm_90", 128, 32, 100 * 1024)  # two 101 KB blocks fit in 228 KB
    assert (occ["blocks_per_sm"], occ["limited_by"]) == (2, "shared memory")
    assert occ["occupancy"] == round(2 * 4 / 64, 3)


def test_occupancy_refuses_unknown_archs_and_unlaunchable_blocks() -> None:
    assert "error" in occupancy("sm_42", 256, 32, 0)
    assert "error" in occupancy("sm_90", 2048, 32, 0)


def test_block_size_is_read_from_dim3_and_defines_and_constexpr() -> None:
    text = "#define BX 16\nconstexpr int BY = 8;\nvoid launch() {\n  dim3 block(BX, BY);\n  k<<<grid, block>>>(x);\n" \
           "  r<<<N / (THREADS * 2), THREADS * 2>>>(x);\n  q<<<1, dim3(32, 4)>>>(x);\n}\n"
    assert block_size(text, "k") == 128
    assert block_size(text, "r", context="constexpr int N = 4096;\n#define THREADS 128") == 256
    assert block_size(text, "q") == 128
    assert block_size(text, "missing") is None


def test_block_size_falls_back_to_launch_bounds() -> None:
    text = "__global__ void __launch_bounds__(512) k(float* x) {}\nvoid launch() { k<<<g, runtime_value()>>>(x); }"
    assert block_size(text, "k") == 512


HALF_SASS = """\
\t\tFunction : _ZN12sp_candidate13matmul_kernelEPK6__halfS2_PS0_i
        /*0300*/                   HADD2.F32 R21, -RZ, R4.H0_H0 ;                  /* 0x20000004ff157230 */
        /*0330*/                   HADD2.F32 R19, -RZ, R6.H0_H0 ;                  /* 0x20000006ff137230 */
        /*0370*/                   FFMA R18, R21, R19, R2 ;                        /* 0x0000001215127223 */
        /*0380*/                   HADD2 R16, R16, R17 ;
        /*0390*/                   HFMA2 R16, R16, R17, R18 ;
"""


def test_sass_mix_counts_half_to_float_widening_as_conversion_not_fp16_math() -> None:
    mix = instruction_mix(HALF_SASS)["matmul_kernel"]
    # ptxas widens __half2float as -0 + h in HADD2.F32; real half adds and FMAs stay fp16 math.
    assert mix["by_category"]["conversion"] == 2 and mix["by_category"]["fp16/bf16"] == 2
    assert mix["by_category"]["fp32"] == 1
