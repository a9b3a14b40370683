/* Every timing parameter of the Gemmini cycle model, in one place, each with where its value comes from.
 *
 * Source of most values: Berkeley's RTL-calibrated Gemmini performance model, public repository
 * ucb-bar/libgemmini, directory perf/ ("gperf"): perf/params/config.h (defaults, RTL line references to
 * generators/gemmini/src/main/scala/gemmini/<module>.scala, waveform measurements) and its FireSim preset in
 * perf/params/config.cc (chipyard FireSim build: FASED DRAM with read latency 30 and 16 reads in flight,
 * 32-byte system bus). Cited below as "gperf <section>.<name>". Where we deviate or approximate, the
 * comment says so. Sizes (DIM, rows) come from gemmini_params.h; nothing here depends on a particular
 * configuration except through DIM.
 */
#ifndef GEMMINI_TIMING_PARAMS_H
#define GEMMINI_TIMING_PARAMS_H

/* ---- host core (Rocket, in order) ---- */
#define T_HOST_CYCLES_PER_INSN 1   /* gperf host.cpi = 1.0: host cycles per instruction of an executed basic
                                      block of the user file (-fsanitize-coverage=trace-pc; block sizes from
                                      the build's block table) */
#define T_HOST_CYCLES_PER_BLOCK 4  /* used instead when a block's size is unknown (no block table) */
#define T_HOST_CALL_CYCLES 10      /* memcpy/memmove/memset called from the user file: call overhead ... */
#define T_HOST_COPY_BYTES_PER_CYCLE 4 /* ... plus bytes copied at this rate (8-byte loads and stores) */
#define T_HOST_SET_BYTES_PER_CYCLE 8  /* ... or bytes set at this rate (8-byte stores) */
#define T_ROCC_ISSUE_CYCLES 1      /* the custom instruction retires like any other at CPI 1 when the RoCC
                                      command queue has room (gperf perf/host.h: instret x cpi + stalls); the
                                      operand set-up around it is host work of the user file */
#define T_FENCE_CYCLES 2           /* gperf host.fence_cycles: a fence retires 2 cycles after Gemmini is idle */

/* ---- RoCC front end: router -> raw_cmd_q -> LoopConv -> LoopMatmul (Controller.scala) ---- */
#define T_FRONTEND_DEPTH 10        /* gperf frontend.depth: commands buffered between the core and LoopMatmul
                                      (5 x 2-entry queues); the core stalls on the 11th */
#define T_FRONTEND_LATENCY 5       /* gperf frontend.latency: cycles from RoCC issue to LoopMatmul's input */
#define T_FRONTEND_CYCLES 1        /* gperf model.cc step(): one command per cycle leaves LoopMatmul's output,
                                      raw or loop-generated */

/* ---- LoopMatmul / LoopConv (LoopMatmul.scala) ---- */
#define T_LOOP_CONCURRENT 2        /* gperf loop.concurrent_loops: two loops in the unit at once; the next
                                      loop's configuration waits until the oldest has issued everything
                                      (:1133). A raw command waits until no loop has commands left. */
/* loop.max_{ld,ex,st}_outstanding (8/16/4) equal the reservation-station entries below, which is how this
 * model applies them: a loop-issued command needs a free entry of its queue. */

/* ---- reservation-station queues (entries; an entry is freed when its command completes) ---- */
#define T_LOAD_QUEUE 8             /* gperf rs.ld_entries (ConfigsFP.scala:232): mvin, mvin2, mvin3, config_ld */
#define T_EX_QUEUE 16              /* gperf rs.ex_entries: preload, compute, config_ex, flush */
#define T_STORE_QUEUE 4            /* gperf rs.st_entries: mvout, config_st */

/* ---- execute (ExecuteController.scala, MeshWithDelays.scala) ---- */
#define T_MESH_ISSUE_LATENCY 3     /* gperf mesh.issue_latency: compute issue -> first A row into the mesh,
                                      paid when the mesh was idle (back to back computes pay nothing) */
#define T_MESH_MIN_ROWS 4          /* gperf mesh.min_rows: a compute streams at least this many rows */
#define T_MESH_COMMIT_LATENCY 51   /* gperf mesh.commit_latency: first A row in -> last accumulator commit */
#define T_MESH_LATENCY (T_MESH_COMMIT_LATENCY - DIM) /* from the end of a full compute's feed to its commit */
#define T_EX_ROW_CYCLES 1          /* cycles per operand row streamed into the mesh */
#define T_EX_CMD_OVERHEAD 0        /* a command that streams nothing (config, preload whose weights shift in
                                      with the compute it pairs with, flush): no mesh time of its own */

/* ---- load path (LoadController.scala, DMA.scala StreamReader, BeatMerger.scala) ---- */
#define T_DMA_CMD_OVERHEAD 0       /* address decode is pipelined with the stream (gperf has no per-command
                                      load cost besides the ones below) */
#define T_LD_CMDS_IN_FLIGHT 3      /* gperf ld.cmds_in_flight: mvins the load tracker overlaps */
#define T_LD_COMPLETION_LAG 2      /* gperf ld.completion_lag: last row written -> RS completion */
#define T_DMA_GET_BYTES 64         /* gperf dma.get_bytes: one TileLink Get per 64-byte line a row touches */
#define T_DMA_MAX_GETS 32          /* gperf dma.max_in_flight: outstanding Gets (max_in_flight_mem_reqs) */
#define T_SPAD_WRITE_BYTES 16      /* gperf dma.spad_write_bytes_per_cycle: BeatMerger writes one DIM-byte
                                      scratchpad row per cycle (an accumulator row of acc_t per cycle) */
#define T_SPAD_ROW_CYCLES 1        /* cycles per local row written or read */

/* ---- store path (StoreController.scala, Scratchpad.scala write path) ---- */
#define T_ST_PIPE_LATENCY 12       /* gperf st.pipe_latency: store issued -> its first Put (FSDB: 13) */
#define T_ACC_READ_LATENCY 4       /* gperf st.requant_latency: accumulator read -> scale/activation output */
#define T_ST_COMPLETION_LAG 2      /* gperf st.completion_lag: last read -> RS completion */
#define T_ST_WRITE_SLACK 8         /* gperf st.write_slack: Puts still waiting for the bus when the next
                                      store may start (the write queues hold them) */
#define T_DMA_PUT_BYTES 64         /* gperf dma.put_bytes: one Put per 64-byte piece of a row */
#define T_DMA_MAX_PUTS 32          /* gperf dma.max_puts_in_flight: outstanding Puts (StreamWriter) */
/* The accumulator (or scratchpad) is read one DIM-wide row per cycle (T_SPAD_ROW_CYCLES per row and block).
 * gperf's st.spad_read_interval (one read per 4 cycles) applies to accumulator-to-scratchpad stores of the
 * MX build, which this ISA does not have. */
/* The store queue is serial: a store starts when the previous one is done (gperf reservation_station.cc:
 * Q_ST issues only when no older store is outstanding). */

/* ---- normalizer (Normalizer.scala; configurations with HAS_NORMALIZATIONS only) ----
 * A LayerNorm / softmax statistics pass is a mvout whose normalization command gathers a row's sum, squared
 * error or maximum: its accumulator rows are read as for any mvout (the lanes take one DIM-wide row block a
 * cycle) and nothing is written to DRAM. A command that ends a statistic then runs the normalizer's
 * iterative units, one at a time: hardfloat's DivSqrtRawFN_small (berkeley-hardfloat, as Arithmetic.scala's
 * SInt divider/sqrt and Normalizer.scala's exp divider instantiate it) retires one quotient or root bit a
 * cycle, sigWidth + 2 cycles for a division and sigWidth + 1 (sigWidth for an odd exponent) for a square
 * root. The integer mean/variance divider and square root use sigWidth = 32 (the accumulator's width); the
 * reciprocals (1/stddev, 127/sum of iexp) are float32, sigWidth = 24. Conversions and the lanes' pipeline
 * are not charged. New parameters for the normalization commands; nothing above changed. */
#define T_NORM_INT_DIV_CYCLES 34   /* MEAN: sum / count (and INV_STDDEV's variance) */
#define T_NORM_INT_SQRT_CYCLES 33  /* INV_STDDEV: sqrt(variance) */
#define T_NORM_FLOAT_DIV_CYCLES 26 /* INV_STDDEV: 1 / stddev; INV_SUM_EXP: 127 / sum */

/* ---- memory system: system bus, L2 (InclusiveCache), DRAM ---- */
#define T_LINE_BYTES 64            /* gperf mem.line_bytes */
#define T_BUS_BYTES 16             /* a Put's data leaves 16 bytes a cycle: the paper's FireSim build
                                      (FireSimGemminiRocketConfig = ... ++ chipyard.GemminiRocketConfig,
                                      firechip TargetConfigs.scala) has a 128-bit system bus (ucb-bar/chipyard
                                      generators/chipyard/src/main/scala/config/RoCCAcceleratorConfigs.scala
                                      :13, GemminiRocketConfig: WithSystemBusWidth(128)), and Gemmini's own
                                      DMA is dma_buswidth = 128 bits (ucb-bar/gemmini Configs.scala,
                                      defaultConfig). gperf's FireSim preset says 32 (a 256-bit bus), which
                                      this build does not have. A line-sized Put holds the bus 4 cycles. */
#define T_L2_KIB 512               /* gperf mem.l2_kib: L2 capacity; LRU over lines; starts cold. Only the
                                      accelerator's traffic is tracked (the host's loads/stores are not) */
#define T_L2_HIT_LATENCY 12        /* gperf mem.l2_hit_latency: Get accepted -> data, L2 hit */
#define T_L2_MISS_DETECT 6         /* gperf mem.l2_miss_detect: Get/Put accepted -> the L2 asks DRAM */
#define T_L2_FILL_TO_DATA 7        /* gperf mem.l2_fill_to_data: fill's last DRAM beat -> data to requester */
#define T_L2_FILL_SECONDARY_FIRST 38 /* gperf mem.l2_fill_secondary_first [measured]: a Get that reaches the L2
                                      while the line's fill is outstanding waits behind it and gets its data
                                      this long after the fill lands (the requester that missed: +7, the
                                      next one 31 later), e.g. the 3 other 16-byte-row Gets of a cold line
                                      (gperf's notes: VCS waveform of InclusiveCache, the same L2 as the
                                      paper's build) */
#define T_L2_FILL_SECONDARY_NEXT 10 /* gperf mem.l2_fill_secondary_next [measured]: each further queued Get
                                      this much later (12, then 8) */
#define T_DRAM_LATENCY 30          /* gperf FireSim preset mem.dram_latency = 30 (FASED LatencyPipe default) */
#define T_DRAM_MAX_READS 16        /* gperf FireSim preset mem.dram_max_reads = 16 (FASED maxReads) */
#define T_DRAM_BYTES_PER_CYCLE 8   /* gperf mem.dram_bytes_per_cycle: one 64-byte line per 8 cycles, reads and
                                      write-backs sharing the channel */
#define T_WRITE_ACK_LATENCY 22     /* gperf mem.write_ack_latency: partial Put -> ack, line in the L2 */
#define T_FULL_WRITE_ACK_LATENCY 10 /* gperf mem.full_write_ack_latency: full-line Put -> ack */
#define T_L2_PUT_SERIAL 8          /* gperf mem.l2_put_serial_cycles: Puts to one line, one per 8 cycles */

/* ---- address translation (FrontendTLB.scala, rocket-chip TLB.scala) ---- */
#ifndef T_VIRTUAL_MEMORY
#define T_VIRTUAL_MEMORY 1         /* charge the DMA's page switches as translation misses. A hypothesis fitted
                                      to two published counts (T_TLB_MISS_CYCLES): Autocomp's FireSim backend
                                      runs bare-metal binaries (autocomp/backend/gemmini/gemmini_eval.py builds
                                      auto_comp_test-baremetal), where rocket-chip's TLB does not translate
                                      machine-mode requests, so the real cost is most likely elsewhere (FASED's
                                      DDR3 FR-FCFS rows, its 4 MiB LLC model); see the model README,
                                      "Calibration status" */
#endif
#define T_PAGE_BYTES 4096          /* Sv39 base pages (user arrays are not superpage-mapped) */
#define T_TLB_ENTRIES 4            /* GemminiConfigs.scala tlb_size = 4: ways of the shared TLB (use_shared_tlb) */
#define T_TLB_SECTORS 4            /* rocket-chip TLBConfig nSectors default 4: an entry holds 4 consecutive
                                      pages, so 4 ways are ONE entry (sectored_entries = nWays / nSectors) */
#define T_TLB_HIT_CYCLES 1         /* a request whose page is not in its client's filter register pays the
                                      RegNext into the shared TLB (FrontendTLB.scala) */
#define T_TLB_MISS_CYCLES 135      /* page-table walk + refill + replay of one miss, the TLB blocked meanwhile
                                      (TLB.scala s_request/s_wait). Fitted, not derived: the only free value
                                      of this section, chosen so that the unoptimized explicit 12544x64x256
                                      kernel whose FireSim cycle count Autocomp publishes (3,435,455 cycles;
                                      ucb-bar/autocomp code_examples.md "if_example_matmul") comes out
                                      within 1% (3,453,186); its if-gated rewrite (published 1,519,076) is
                                      the independent check (1,491,954, -1.8%); Exo's published hand-tuned
                                      kernel for that problem (autocomp sols/exo/sol1_exo_opt.c), which gates
                                      its loads the same way, models 1,412,484 (-7% against the rewrite).
                                      Buffers the harness allocates are 16 KiB-aligned (speedpatch_harness.h):
                                      an assumption, the published runs' placement is not known. With
                                      64-byte-aligned arrays the same kernel takes 30,369 misses instead of
                                      16,464 and 4.92M cycles (+43%), so this value and the alignment were
                                      fitted together. */

#endif /* GEMMINI_TIMING_PARAMS_H */
