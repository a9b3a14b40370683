"""The trusted side's checks that need no compiler: symbol classification, device-code readers (on SASS and
PTX text as cuobjdump prints them) and the hardware bound on a reported figure."""

from __future__ import annotations

from speedpatch.model import OK, REJECTED
from speedpatch.targets.cuda import objcheck, physics
from speedpatch.targets.cuda.results import to_evaluation

HARNESS_DEFINED = {"_ZN3spd11result_fileB5cxx11Ev"}
HARNESS_UNDEFINED = {"cudaEventElapsedTime", "_ZNSt6chrono3_V212steady_clock3nowEv"}


def problem(name: str, kind: str, demangled: str = "") -> str:
    sym = objcheck.Symbol(name, kind, demangled or name)
    return objcheck._symbol_problem(sym, set(), HARNESS_UNDEFINED, HARNESS_DEFINED, set())


def test_a_launch_and_scratch_memory_are_calls_a_solution_may_make() -> None:
    for name in ("__cudaLaunchKernel", "__cudaPushCallConfiguration", "cudaMalloc", "cudaFuncSetAttribute", "expf",
                 "_Znwm", "__cxa_guard_acquire"):
        assert problem(name, "U") == "", name


def test_an_undefined_symbol_outside_the_allowlist_is_rejected_by_name_and_kind() -> None:
    assert "dlopen" in problem("dlopen", "U") and "loads code at run time" in problem("dlopen", "U")
    assert "host threads" in problem("pthread_create", "U")
    assert "streams, events or graphs" in problem("cudaStreamCreateWithFlags", "U")
    assert "driver API" in problem("cuLaunchKernel", "U")
    assert "reference library" in problem("cublasSgemm_v2", "U")
    assert "I/O" in problem("fopen64", "U") and "I/O" in problem("puts", "U")
    assert "environment or ends the process" in problem("getenv", "U")
    assert "not on the list" in problem("some_unknown_function", "U")


def test_a_reference_library_the_problem_allows_may_be_called() -> None:
    sym = objcheck.Symbol("cublasSgemm_v2", "U")
    assert objcheck._symbol_problem(sym, set(), set(), set(), {"cublas"}) == ""


def test_definitions_inside_the_solution_namespace_and_its_kernel_stubs_belong_to_it() -> None:
    assert problem("_ZN12sp_candidate6launchEPKPKfPf", "T", "sp_candidate::launch(float const* const*, float*)") == ""
    stub = "__device_stub__ZN12sp_candidate13matmul_kernelEPKfS1_Pfi(float const*, float const*, float*, int)"
    assert problem("_Z56__device_stub__ZN12sp_candidate13matmul_kernelEPKfS1_Pfi", "T", stub) == ""
    assert problem("_ZGVZ56__device_stub__x", "b", f"guard variable for {stub}::__tmp") == ""


def test_a_c_linkage_definition_of_what_the_harness_calls_is_an_interposition() -> None:
    assert "which the harness calls" in problem("cudaEventElapsedTime", "T")
    assert "C symbol `clock_gettime`" in problem("clock_gettime", "T")


def test_a_use_of_harness_code_is_rejected_by_name() -> None:
    found = problem("_ZN3spd11result_fileB5cxx11Ev", "W", "spd::result_file[abi:cxx11]()")
    assert "harness's own code `spd::result_file" in found
    assert "outside namespace sp_candidate" in problem("_ZL9referencePKPKfPf", "t", "reference(float const* const*, float*)")


def test_library_template_instantiations_are_not_escapes() -> None:
    assert problem("_ZNSt6vectorIfSaIfEE17_M_realloc_insertEv", "W", "std::vector<float, std::allocator<float> >::f()") == ""


SASS = """
        Function : _ZN3spd16spd_flush_kernelEPjmj
        /*0090*/                   HFMA2 R0, R0.H0_H0, R0.H0_H0, R0.H0_H0 ;     /* 0x2000000000007231 */
        Function : _ZN12sp_candidate2mmEPKfS1_Pfi
        /*0010*/                   HFMA2.MMA R3, -RZ, RZ, 0, 0 ;                /* 0x000000ffff037435 */
        /*0020*/                   HADD2.F32 R7, -RZ, R0.H0_H0 ;                /* 0x20000000ff077230 */
        /*0030*/                   HMMA.1684.F32.TF32 R4, R12.reuse, R12, RZ ;  /* 0x0000000c0c04723c */
        /*0040*/                   CS2R R4, SR_GLOBALTIMERLO ;                  /* 0x0000000000047805 */
        /*0050*/                   HMUL2.BF16_V2 R0, R0.H0_H0, R0.H0_H0 ;       /* 0x2000000000007232 */
"""


def test_sass_classes_decide_precision_and_skip_moves_widening_and_harness_kernels() -> None:
    uses = objcheck.sass_uses(SASS, skip={"_ZN3spd16spd_flush_kernelEPjmj"})
    assert set(uses) == {"_ZN12sp_candidate2mmEPKfS1_Pfi"}
    kinds = uses["_ZN12sp_candidate2mmEPKfS1_Pfi"]
    assert set(kinds) == {"tf32", "timer", "bf16"}  # the HFMA2.MMA move and the HADD2.F32 widening are not math
    assert kinds["tf32"].startswith("HMMA.1684.F32.TF32")


def test_device_findings_follow_the_problem_precision() -> None:
    uses = {"_ZN12sp_candidate2mmEv": {"tf32": "HMMA.1684.F32.TF32 R4", "fp16": "HFMA2 R0"}}
    fp32 = objcheck.device_findings(uses, "fp32", (), 40, "SASS")
    assert len(fp32) == 2 and all(f.rule == "precision" for f in fp32)
    assert "tf32 tensor-core math" in fp32[1].message and "sp_candidate::mm()" in fp32[1].message
    assert objcheck.device_findings(uses, "fp16", (), 40, "SASS") == []  # fp16 permits tf32 and fp16


PTX = """
.visible .entry _ZN12sp_candidate1kEPf(
.param .u64 p
)
{
// begin inline asm
{.reg .f16 t; cvt.rn.f16.f32 t, %f1; add.f16 t, t, t; mov.b16 %rs1, t;}
// end inline asm
wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f1}, {%r1}, {%r2}, {%f2};
mov.u64 %rd1, %globaltimer;
call.uni (retval0), vprintf, (param0, param1);
}
"""


def test_ptx_inline_assembly_is_judged_by_what_it_emits() -> None:
    kinds = objcheck.ptx_uses(PTX, skip=set())["_ZN12sp_candidate1kEPf"]
    assert kinds["fp16"] == "add.f16 t, t, t;"  # the inline asm's own instruction, however it was spelled
    assert {"fp16", "timer", "printf"} <= set(kinds)


def test_a_kernel_reading_the_sm_s_performance_counters_reads_a_timer() -> None:
    # `mov.u32 %0, %%pm0;` compiled for sm_90 (red-team): the SASS reads SR_PM0, and neither the SASS nor the PTX
    # rule saw it; nor did the PTX rule see `%clock_hi` (the SASS rule did: SR_CLOCKHI).
    sass = SASS.replace("CS2R R4, SR_GLOBALTIMERLO", "CS2R.32 R0, SR_PM0")
    assert objcheck.sass_uses(sass, skip=set())["_ZN12sp_candidate2mmEPKfS1_Pfi"]["timer"] == "CS2R.32 R0, SR_PM0"
    for register, seen in (("%pm0", "%pm0"), ("%pm7_64", "%pm7"), ("%clock_hi", "%clock_hi")):
        ptx = PTX.replace("mov.u64 %rd1, %globaltimer;", f"mov.u32 %r9, {register};")
        assert objcheck.ptx_uses(ptx, skip=set())["_ZN12sp_candidate1kEPf"]["timer"] == seen


H200 = {"name": "NVIDIA H200", "peak_gbps": 4800.0, "peak_gflops_fp32": 67000.0}


def result(median_ms: float, flops: float, nbytes: float, device: dict | None = None) -> dict:
    return {"status": "ok", "message": "", "device": device or H200, "flops": flops, "bytes": nbytes,
            "candidate_ms": {"median": median_ms, "low": median_ms, "high": median_ms},
            "baseline_ms": {"median": 1.0}, "speedup": {"median": 1 / median_ms, "low": 1.0, "high": 2.0}}


def test_a_figure_below_the_dram_bound_is_rejected_with_the_numbers() -> None:
    # 1 GB at 4.8 TB/s takes 0.208 ms; half of that is the least the bound accepts.
    ev = to_evaluation(result(0.05, 0, 1e9), "", {})
    assert ev.status == REJECTED
    assert "0.05 ms" in ev.message and "4800 GB/s" in ev.message and "H200" in ev.message


def test_a_figure_below_the_fp32_flop_bound_is_rejected_unless_tensor_cores_are_allowed() -> None:
    flops = 2.0 * 4096**3  # 137 GFLOP: 2.05 ms at 67 TFLOP/s fp32, 0.14 ms at 989 TFLOP/s fp16
    assert to_evaluation(result(0.5, flops, 0), "", {}, precision="fp32").status == REJECTED
    assert to_evaluation(result(0.5, flops, 0), "", {}, precision="fp16").status == OK


def test_a_plausible_figure_passes_and_an_unknown_device_uses_the_harness_peaks() -> None:
    assert to_evaluation(result(0.3, 0, 1e9), "", {}).status == OK
    other = {"name": "Some GPU", "peak_gbps": 1000.0, "peak_gflops_fp32": 10000.0}
    assert physics.bound_ms(other, 0, 1e9, "fp32") is not None
    assert to_evaluation(result(0.1, 0, 1e9, other), "", {}).status == REJECTED  # 1 ms ideal, 0.5 ms floor


def test_a_function_template_is_judged_by_its_name_not_its_return_type() -> None:
    assert objcheck._base("void std::sort<int*>(int*, int*) [clone .isra.0]") == "std::sort<int*>(int*, int*)"
    assert objcheck._base("unsigned long spd::f<int>()") == "spd::f<int>()"
    sym = objcheck.Symbol("_ZN12sp_candidate6helperILi16EEvPf", "t", "void sp_candidate::helper<16>(float*)")
    assert objcheck.belongs_to_solution(sym)
