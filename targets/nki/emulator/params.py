"""Every parameter of the NKI cost model, in one place (roughly one trn1 NeuronCore-v2).

Unit: the model reports latency in microseconds ("us"); internally times are nanoseconds.

How an instruction is costed (see costmodel.py for the scheduler):
- Engines (Tensor, Vector, Scalar, GpSimd) each execute their instructions in program order, one at a
  time. An instruction starts when its engine is free AND its inputs are written (read-after-write), and
  its outputs are no longer being read or written by earlier instructions (WAR/WAW), per tensor region.
  The 128 partitions work in parallel, so cost grows with the FREE size (elements per partition), not with
  the number of partitions used: a 32-partition tile costs as much as a 128-partition one.
- Tensor engine: nc_matmul / transpose cost FIXED + moving free size x (1 for 16-bit types, 4 for fp32:
  the fp32 matmul runs in four passes).
- Vector / GpSimd / Scalar engines: FIXED + free elements x per-element cycles. The Scalar engine's
  activation has a larger fixed cost (function table) and applies scale/bias for free (the reason fusing
  elementwise work into `activation` pays off).
- DMA: DMA_QUEUES queues; a transfer takes the earliest-free queue and occupies it for
  DMA_FIXED_NS + bytes / bandwidth + DMA_DESCRIPTOR_NS per contiguous HBM run (a transposing or
  element-strided access pattern has one run per element and is slow); its data is usable
  DMA_LATENCY_NS after that (completion latency that does not block the queue).
- sequential_range: every iteration starts after everything issued before it has finished (no
  pipelining across iterations); affine_range/static_range iterations may overlap.
- Capacity: SBUF_BYTES_PER_PARTITION and PSUM (PSUM_BANKS banks of PSUM_BANK_BYTES per partition) are
  checked against the tiles alive at each allocation; exceeding them is an error, not a slowdown. A tile
  lives while Python references it, so a tile allocated in a loop overlaps with the previous iteration's
  until the name is rebound (two buffers, as double buffering would use).

What the model ignores: instruction fetch and semaphores, engine-to-engine sync latency, SBUF bank
conflicts and access-pattern penalties on engines, the compiler's own scheduling/allocation (each tile
allocated in a loop iteration is a fresh buffer, so pipelining depth is limited only by capacity),
HBM bandwidth shared between queues beyond the per-queue figure, clock/power throttling, multi-core SPMD
launch (programs of a grid run one after the other on one core), and data-dependent timing.
"""

CLOCK_GHZ = 1.4  # engine clock; cycles / CLOCK_GHZ = ns

PARTITIONS = 128  # nl.tile_size.pmax
GEMM_STATIONARY_FMAX = 128  # nc_matmul stationary free size limit
GEMM_MOVING_FMAX = 512  # nc_matmul moving free size limit
PSUM_BANKS = 8
PSUM_BANK_BYTES = 2048  # per partition: 512 fp32
SBUF_BYTES_PER_PARTITION = 192 * 1024  # 24 MiB / 128 partitions (trn1)

TENSOR_FIXED_CYCLES = 64
TENSOR_FP32_PASSES = 4
VECTOR_FIXED_CYCLES = 64
VECTOR_CYCLES_PER_ELEM = 1.0
SCALAR_FIXED_CYCLES = 224
SCALAR_CYCLES_PER_ELEM = 1.0
GPSIMD_FIXED_CYCLES = 64
GPSIMD_CYCLES_PER_ELEM = 4.0

DMA_QUEUES = 4
DMA_FIXED_NS = 600.0  # per transfer, occupies the queue (descriptor generation, queue handshake)
DMA_LATENCY_NS = 1400.0  # completion latency before the data can be used (does not occupy the queue)
DMA_BYTES_PER_NS = 100.0  # per queue (4 queues ~ 400 GB/s per NeuronCore)
DMA_DESCRIPTOR_NS = 2.0  # per contiguous run of HBM memory in the transfer

MAX_INSTRUCTIONS = 300_000  # a kernel issuing more is reported as an error (likely a runaway loop)

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")


def cycles_to_ns(cycles: float) -> float:
    return cycles / CLOCK_GHZ
