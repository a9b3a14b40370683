"""Every parameter of the NKI cost model, each with its source, in one place (one trn1 NeuronCore-v2).

Unit: the model reports latency in microseconds ("us"); internally times are nanoseconds.

Sources (AWS Neuron documentation, awsdocs-neuron.readthedocs-hosted.com):
  [ARCH]  "Trainium/Inferentia2 Architecture Guide for NKI" (nki/arch/trainium_inferentia2_arch): engine
          data-path widths and clocks, TensorE initiation interval, VectorE/ScalarE cost rules, GpSimd
          processors, SBUF/PSUM sizes, DMA engines, access-stride penalty, engine/RAM access restrictions.
  [DMA]   "Guideline to Avoid Under-Utilizing DMA Bandwidth" (nki/deep-dives/nki-dma-bandwidth-guide):
          per-engine DMA bandwidth per generation, ~1300 ns per-transfer start latency, the bandwidth vs
          payload-size saturation curve (<256 B severely overhead-bound, >=2 KiB near peak, >=4 KiB saturated).
  [DMAI]  "Introduction to Direct Memory Access (DMA) with NKI" (nki/about/nki-dma-overview): 16 engines per
          NeuronCore, 27.2 GB/s theoretical per engine (v2), one transfer spread over up to 16 engines
          (8 partitions each), a 4-byte semaphore write by every engine per transfer, in-order queues.
  [ISA]   nki.isa / nki.language API reference (tile-size limits: pmax, gemm_*_fmax, bn_stats_fmax; each
          instruction's "Estimated instruction cost", e.g. nki.isa.tensor_tensor: max(MIN_II, N) VectorE
          cycles when one input tile is in PSUM and the other in SBUF, max(MIN_II, 2N) for two SBUF fp32
          inputs; nki.isa.tensor_tensor_scan: max(MIN_II, 2N); nki.isa.nc_matmul writes only PSUM).
  [PERF]  "NKI Performance Optimizations" (nki/deep-dives/nki_perf_guide), Opt #5a: back-to-back ScalarE
          instructions of one element per partition, each reading the previous one's output, start "around
          189 ns (264 ScalarE cycles on NC-v2)" apart (NC-v3: 222 ns, 266 cycles): "the next instruction cannot
          start data read until the previous instruction has all of its output committed to the local SRAM".
  [PM]    "NKI Programming Model", section "SPMD: Launching multiple instances of a kernel": "A SPMD program
          is compiled into an executable that targets one NeuronCore, and the different instances of the
          SPMD program are executed serially on a single NeuronCore"; "Neuron compiler translates the SPMD
          launch grid into nested loops of compute-kernel invocations".
  [NC]    nki.language.nc / nki.language.spmd_dim API reference: "The instances of spmd kernel will be
          distributed to different physical neuron cores on the annotated dimension" (kernel[nl.nc(2), 2]:
          programs [0, *] on NC 0, [1, *] on NC 1; spmd_dim(nc(2), 2) / spmd_dim(2, nc(2)) examples), and the
          NKI FAQ: a logical NeuronCore (trn2) "can have up to two physical NeuronCores".

How an instruction is costed (costmodel.py schedules them):
- Each compute engine executes its instructions in program order, one at a time; an instruction starts
  when its engine is free and its inputs are written (RAW), and when earlier readers/writers of its
  outputs are done (WAR/WAW), per tensor region. The 128 partitions work in parallel: cost grows with the
  FREE size (elements per partition), not with the number of partitions ([ARCH] "128 parallel lanes").
- TensorE: an nc_matmul is a LoadStationary + MultiplyMoving pair. MultiplyMoving's initiation interval
  is max(N, 64) cycles for N moving columns in 16-bit/fp8 (4x for fp32), at 2.8 GHz; LoadStationary runs
  in the background, up to 4x faster than a MultiplyMoving of the same free size ([ARCH]). A transpose is
  a matmul against the identity; broadcast_to of a single-partition tile is a matmul against ones ([ARCH]
  "NKI invokes such matmul under the hood when broadcast_to is called").
- VectorE: about N cycles per instruction with one input tile, 2N with two (tensor_tensor), at 1.12 GHz;
  ScalarE: N cycles (one input only; scale/bias/activation function at the same cost), at 1.4 GHz;
  GpSimd: 8 processors x 512-bit SIMD, each serving 16 partitions: 1 element per partition per cycle for
  32-bit types, 2 for 16-bit, 4 for 8-bit, at 1.4 GHz ([ARCH]). Every instruction costs at least the
  static overhead (100 cycles, [ARCH] "static instruction overhead of 100 engine cycles" for small N),
  and its result becomes readable 60 cycles after it ends (the SBUF/PSUM tensor-access overhead, [ARCH]
  "approximately 60 cycles", which other independent instructions hide). On ScalarE, the one engine whose
  dependent interval is measured ([PERF] Opt #5a: 264 cycles between the starts of dependent one-element
  instructions, vs the 100-cycle static overhead of independent ones), a result is readable 264 - 100 = 164
  ScalarE cycles after its instruction ends; VectorE and GpSimd keep the 60 cycles of [ARCH] (no measured
  dependent interval for them; see the NKI README, Known gaps).
  A most-minor free stride above 16 bytes halves the SBUF/PSUM bandwidth: the instruction takes 2x.
  VectorE and GpSimdE cannot access SBUF at the same time, nor VectorE and ScalarE PSUM ([ARCH]): such
  instructions are serialized on a shared port. A two-input VectorE instruction with one input tile in
  PSUM and the other in SBUF streams both at once: N cycles, not 2N ([ISA] tensor_tensor; the scan stays
  2N). A partition broadcast (tile.broadcast_to of a one-partition tile) is a TensorE matmul, so its
  result is a PSUM tile ([ARCH], [ISA] nc_matmul) that the next VectorE instruction reads at N cycles;
  wider than one PSUM bank (512 fp32, psum_fmax) or with the banks in scope full, it is evacuated to SBUF
  by a VectorE copy.
- DMA: each nl.load/store/dma_copy is split by the compiler into transfers over the 16 DMA engines of
  the NeuronCore ([ARCH]: a 128x512 fp32 load = 16 transfers of 8 DMA buffers each). Each DMA buffer
  (descriptor) is one contiguous run of memory: at least one per SBUF partition, more when the data in a
  partition is not contiguous in HBM ([ARCH]) -- or on the other side: a descriptor moves a contiguous piece
  to a contiguous piece, so the runs of both sides count (an SBUF view taking one element from each partition
  in turn, or the transposed destination of an HBM-to-HBM copy, is one descriptor per element), and a masked
  DMA's runs are the stretches of selected elements. The engines are busy for bytes / 17 B/ns ([DMA], trn1)
  plus DMA_DESCRIPTOR_NS per descriptor, plus one completion-semaphore descriptor on every engine
  ([DMAI]); the data is usable DMA_LATENCY_NS after the engines finish ([DMA] "~1300 ns cross-engine"
  semaphore-to-start latency: it delays the consumer, it does not occupy the engines). The 16 engines are
  one pool: a DMA takes the earliest idle gap once its data and destination buffer are ready (the
  compiler issues DMAs from several queues ahead of the compute that needs them). Masked or
  out-of-bounds elements are not transferred, and cost nothing.
- SPMD launch grids ([PM], [NC]): the programs of kernel[grid] run one after another on one NeuronCore,
  as the nested loop the compiler makes of them (program order per engine, DMAs prefetched as for loop
  iterations: a grid of n programs costs what an affine_range loop of n iterations costs). Programs of an
  nl.nc dimension (or nl.nc sub-dimension of nl.spmd_dim) go to their own NeuronCore, at most
  MAX_PHYSICAL_CORES: each core has its own engines, DMA engines, SBUF and PSUM; HBM is shared, so
  dependencies through HBM tensors hold across cores; the latency is the end of the last instruction on
  any core.
- Capacity and buffer reuse: a tile allocated inside an NKI loop body is local to that iteration (NKI
  scoping): it goes out of scope when the next iteration starts, as does a tile no Python name refers to.
  A new tile takes free SBUF/PSUM space if there is any (so an iteration can overlap the previous one: the
  compiler's multi-buffering); otherwise it reuses the space of the out-of-scope tiles whose last access
  ends first, and waits until that access finished (the iteration cannot overlap further). The compiler
  allocates with the whole schedule known: taking the space that went out of scope last (allocation
  order) would make, e.g., a new accumulator wait for the store of the previous one while older space is
  long free -- the model artifact that ranked the Mamba tutorial's loop reordering (v2) below v1. If the tiles in scope at the
  same time do not fit, the least recently used SBUF tiles are spilled to HBM (a DMA store, and a DMA
  reload at the next use), as the compiler spills; when PSUM tiles in scope fill the 8 banks, the least
  recently used give their banks away after their last access (PSUM is allocated by live ranges; a Python
  name is not a use) and one used again after that is a PSUM overflow; a single tile larger than SBUF is
  refused. nki.compiler.sbuf/psum.mod_alloc(num_free_tiles=(n,)) makes only n blocks of
  a blocked tensor physical. PSUM tiles take whole 2 KiB banks. A zeroed PSUM accumulator costs no
  instruction: the first matmul into it overwrites instead of accumulating ([ARCH] "Every nc_matmul
  instruction can choose whether to override existing bank data ... or accumulate").

What the model ignores: instruction fetch and semaphores, SBUF bank conflicts, the compiler's instruction
reordering beyond program order per engine, HBM bandwidth limits other than the DMA engines' own (16 x 17
B/ns = 272 GB/s < the 410 GB/s HBM share of one core; two cores of an nl.nc grid are not HBM-limited
either), clock/power throttling, the compiler's loop-invariant hoisting, and data-dependent timing.
"""

# ---- clocks [ARCH] table "Data-path Width / Frequency" ------------------------------------------------
TENSOR_GHZ = 2.8
VECTOR_GHZ = 1.12
SCALAR_GHZ = 1.4
GPSIMD_GHZ = 1.4
CLOCK_GHZ = SCALAR_GHZ  # the SBUF/PSUM access clock ([ARCH] "128 elements/cycle at 1.4 GHz"), for reports

ENGINE_GHZ = {"tensor": TENSOR_GHZ, "vector": VECTOR_GHZ, "scalar": SCALAR_GHZ, "gpsimd": GPSIMD_GHZ}

# ---- sizes [ARCH] / [ISA] --------------------------------------------------------------------------------
PARTITIONS = 128  # nl.tile_size.pmax
GEMM_STATIONARY_FMAX = 128  # nc_matmul stationary free size limit (PE columns)
GEMM_MOVING_FMAX = 512  # nc_matmul moving free size limit (one PSUM bank of fp32)
BN_STATS_FMAX = 512  # nl.tile_size.bn_stats_fmax ([ARCH] "bn_stats ... cannot exceed 512")
PSUM_BANKS = 8
PSUM_BANK_BYTES = 2048  # per partition: 512 fp32 (16 KiB per partition in 8 banks)
SBUF_BYTES_PER_PARTITION = 192 * 1024  # 24 MiB / 128 partitions

# ---- TensorE [ARCH] "Performance Consideration" -----------------------------------------------------------
TENSOR_MM_MIN_CYCLES = 64  # MM_INIT_LATENCY: initiation interval is max(N, 64) cycles
TENSOR_FP32_PASSES = 4  # "For FP32 input data type, the instruction cost is roughly 4x higher"
TENSOR_LOAD_STATIONARY_SPEEDUP = 4  # "LoadStationary up to 4x faster than a MultiplyMoving"

# ---- VectorE / ScalarE / GpSimdE [ARCH] ----------------------------------------------------------------
STATIC_OVERHEAD_CYCLES = 100  # per instruction, the floor of its cost
ACCESS_LATENCY_CYCLES = 60  # SBUF/PSUM tensor access overhead, hidden by independent work
# ScalarE: dependent instructions start this many cycles apart when each is one element per partition
# ([PERF] Opt #5a, "189 ns (264 ScalarE cycles on NC-v2)"); independent ones STATIC_OVERHEAD_CYCLES apart.
SCALAR_DEPENDENT_INTERVAL_CYCLES = 264
# A reduction fused into an instruction (activation with reduce_res / activation_reduce on ScalarE,
# tensor_scalar_reduce on VectorE) costs one more minimum initiation interval: "max(MIN_II, N) + MIN_II ... cycles,
# where MIN_II ... is roughly 64 engine cycles" ([ISA] the legacy nki.isa.activation_reduce and
# nki.isa.tensor_scalar_reduce pages, v2.21-v2.26, which cover NeuronCore-v2)
FUSED_REDUCTION_CYCLES = 64
GPSIMD_ELEMS_PER_CYCLE_BY_ITEMSIZE = {4: 1.0, 2: 2.0, 1: 4.0}  # 16 x 32-bit lanes per 16 partitions
MINOR_STRIDE_PENALTY_BYTES = 16  # most-minor free stride above this halves SBUF/PSUM bandwidth

# ---- DMA [ARCH] "Data movement between HBM and SBUF", [DMA] ----------------------------------------------
DMA_ENGINES = 16  # per NeuronCore
DMA_ENGINE_BYTES_PER_NS = 17.0  # trn1, per engine ([DMA] table: 17 B/ns, 272 GB/s aggregate; [DMAI]
#   gives 27.2 GB/s as the theoretical peak, 17 B/ns is what an engine sustains)
# Per DMA buffer (descriptor), engine time on top of its bytes. The sources give the saturation curve only
# in words: "< 256 B per partition: ... a small fraction of peak", ">= 2 KiB approaches peak", "at 4096
# free bytes, we are able to nearly saturate DMA bandwidth" ([DMA], [DMAI] figure). At 17 B/ns that bounds
# the per-descriptor time to about 30-60 ns (256 B rows at most ~30% of peak, 4 KiB rows at least ~80%).
# We take 50 ns: 23% of peak at 256 B, 71% at 2 KiB, 83% at 4 KiB. (The matmul tutorial's published trn1
# latencies, benchmarks/nki_matmul_tutorial.py, sit in the same band: a cross-check, not a fit.)
DMA_DESCRIPTOR_NS = 50.0
# Every DMA instruction also makes each of the 16 engines write a 4-byte completion semaphore, whether it
# moved data or not ([DMAI] example 1): one more (tiny) descriptor on every engine.
DMA_SEMAPHORE_DESCRIPTORS = 1
DMA_LATENCY_NS = 1300.0  # [DMA] "semaphore-to-start latency (~1300 ns cross-engine)"

MAX_PHYSICAL_CORES = 2  # [NC]/FAQ: NeuronCores one launch grid's nl.nc dimensions may span (language.py)

MAX_INSTRUCTIONS = 2_000_000  # a kernel issuing more is reported as an error (likely a runaway loop)

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")


def cycles_to_ns(cycles: float, engine: str = "scalar") -> float:
    return cycles / ENGINE_GHZ.get(engine, CLOCK_GHZ)
