/* The cycle model. Every command goes through an in-order frontend into one of three reservation-station
 * queues (load 8, execute 16, store 4 entries; an entry is freed when its command completes). Each unit
 * runs its commands in order; a command starts when its unit is free and when the scratchpad/accumulator
 * rows it reads or writes are no longer in use by another unit (read-after-write, write-after-read,
 * write-after-write across units; within one unit the in-order pipeline keeps the order). DRAM reads
 * (mvin) and writes (mvout) each have their own channel, as on the memory bus. The host clock advances with host work (trace-pc blocks), RoCC issue
 * (blocking while the frontend is backed up) and fences (waiting for everything). */
#include <string.h>

#include "model_internal.h"

gm_clock_t T;

static const uint32_t queue_depth[U_NUM] = {T_LOAD_QUEUE, T_EX_QUEUE, T_STORE_QUEUE};

typedef struct {
  uint64_t write_time[BANK_NUM * BANK_ROWS];
  uint8_t write_unit[BANK_NUM * BANK_ROWS];
  uint64_t read_time[U_NUM][BANK_NUM * BANK_ROWS];
} spad_deps_t;

typedef struct {
  uint64_t write_time[ACC_ROWS];
  uint8_t write_unit[ACC_ROWS];
  uint64_t read_time[U_NUM][ACC_ROWS];
} acc_deps_t;

static spad_deps_t spad_deps;
static acc_deps_t acc_deps;

static uint64_t queue_done[U_NUM][64]; /* completion of the last `depth` commands of each queue */
static uint64_t queue_pos[U_NUM];
static uint64_t unit_free[U_NUM];
static int in_loop;                  /* a hardware loop is issuing: one issue stream per unit */
static uint64_t stream_issue[U_NUM]; /* next issue cycle of each of the loop's streams */
static uint64_t host_cmd_accept; /* first acceptance of the current host instruction, or 0 */
static int host_cmd_accepted;

#define MAX_RANGES 64
typedef struct {
  int mem, write;
  uint32_t first, count, stride;
} range_t;
static range_t ranges[MAX_RANGES];
static int n_ranges;

static inline uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

void tm_reset(void) {
  memset(&T, 0, sizeof T);
  memset(&spad_deps, 0, sizeof spad_deps);
  memset(&acc_deps, 0, sizeof acc_deps);
  memset(queue_done, 0, sizeof queue_done);
  memset(queue_pos, 0, sizeof queue_pos);
  memset(unit_free, 0, sizeof unit_free);
  n_ranges = 0;
}

static void add_range(int mem, uint32_t first, uint32_t count, uint32_t stride, int write) {
  if (count == 0) return;
  if (n_ranges == MAX_RANGES) { /* more than any instruction declares; merge into the last one */
    range_t *r = &ranges[MAX_RANGES - 1];
    uint32_t end = first + (count - 1) * stride, r_end = r->first + (r->count - 1) * r->stride;
    uint32_t lo = r->first < first ? r->first : first, hi = r_end > end ? r_end : end;
    if (r->mem == mem && r->write == write) {
      r->first = lo;
      r->count = hi - lo + 1;
      r->stride = 1;
      return;
    }
  }
  ranges[n_ranges++] = (range_t){mem, write, first, count, stride == 0 ? 1 : stride};
}

void tm_read(int mem, uint32_t first, uint32_t count, uint32_t stride) {
  add_range(mem, first, count, stride, 0);
}

void tm_write(int mem, uint32_t first, uint32_t count, uint32_t stride) {
  add_range(mem, first, count, stride, 1);
}

uint64_t tm_dma_cycles(uint64_t rows, uint64_t row_bytes) {
  /* Each row is split into requests of at most T_DMA_REQUEST_BYTES; a request occupies the channel for its
   * bus beats at the DRAM bandwidth, and at least its share of the latency that the bounded number of
   * requests in flight cannot hide. Rows are taken as aligned, so that cycles never depend on where the
   * allocator or the stack happened to put the data. */
  if (rows == 0 || row_bytes == 0) return 0;
  const uint64_t full = row_bytes / T_DMA_REQUEST_BYTES, tail = row_bytes % T_DMA_REQUEST_BYTES;
  const uint64_t latency_share = (T_DRAM_LATENCY + T_DMA_MAX_INFLIGHT - 1) / T_DMA_MAX_INFLIGHT;
  uint64_t per_row = 0;
  for (int part = 0; part < 2; part++) {
    uint64_t bytes = part ? tail : T_DMA_REQUEST_BYTES, count = part ? (tail != 0) : full;
    if (!count) continue;
    uint64_t beats = (bytes + T_BUS_BYTES - 1) / T_BUS_BYTES;
    uint64_t cycles = (beats * T_BUS_BYTES + T_DRAM_BYTES_PER_CYCLE - 1) / T_DRAM_BYTES_PER_CYCLE;
    per_row += count * (cycles > latency_share ? cycles : latency_share);
  }
  return rows * per_row;
}

uint64_t tm_schedule(int unit, uint64_t occupancy, uint64_t latency, uint64_t dram_cycles) {
  /* Frontend: in order, one command per T_FRONTEND_CYCLES, waiting for a free queue entry. */
  const uint32_t depth = queue_depth[unit];
  uint64_t *slot = &queue_done[unit][queue_pos[unit] % depth];
  uint64_t *issue = in_loop ? &stream_issue[unit] : &T.next_issue;
  uint64_t accept = max64(*issue, *slot);
  *issue = accept + T_FRONTEND_CYCLES;
  if (!host_cmd_accepted) {
    host_cmd_accept = accept;
    host_cmd_accepted = 1;
  }

  /* Dependencies on rows another unit reads or writes. */
  uint64_t ready = max64(accept, unit_free[unit]);
  for (int r = 0; r < n_ranges; r++) {
    const range_t *g = &ranges[r];
    for (uint32_t i = 0; i < g->count; i++) {
      uint32_t row = g->first + i * g->stride;
      uint64_t wt;
      uint8_t wu;
      const uint64_t *rt[U_NUM];
      if (g->mem == MEM_ACC) {
        if (row >= ACC_ROWS) continue;
        wt = acc_deps.write_time[row], wu = acc_deps.write_unit[row];
        for (int u = 0; u < U_NUM; u++) rt[u] = &acc_deps.read_time[u][row];
      } else {
        if (row >= SPAD_ROWS) continue;
        wt = spad_deps.write_time[row], wu = spad_deps.write_unit[row];
        for (int u = 0; u < U_NUM; u++) rt[u] = &spad_deps.read_time[u][row];
      }
      if (wu != unit) ready = max64(ready, wt);
      if (g->write)
        for (int u = 0; u < U_NUM; u++)
          if (u != unit) ready = max64(ready, *rt[u]);
    }
  }

  /* Only the load unit reads DRAM and only the store unit writes it, each in order: a unit busy for its
   * transfer is its DRAM channel busy. */
  const uint64_t start = ready;
  occupancy = max64(occupancy, dram_cycles);
  const uint64_t busy_until = start + occupancy;
  const uint64_t done = busy_until + latency;
  unit_free[unit] = busy_until;
  T.busy[unit] += occupancy;
  T.all_done = max64(T.all_done, done);
  *slot = done;
  queue_pos[unit]++;

  /* Record what this command uses: reads finish when it stops streaming, writes land when it is done. */
  for (int r = 0; r < n_ranges; r++) {
    const range_t *g = &ranges[r];
    for (uint32_t i = 0; i < g->count; i++) {
      uint32_t row = g->first + i * g->stride;
      if (g->mem == MEM_ACC ? row >= ACC_ROWS : row >= SPAD_ROWS) continue;
      if (g->write) {
        if (g->mem == MEM_ACC) {
          acc_deps.write_time[row] = max64(acc_deps.write_time[row], done);
          acc_deps.write_unit[row] = (uint8_t)unit;
        } else {
          spad_deps.write_time[row] = max64(spad_deps.write_time[row], done);
          spad_deps.write_unit[row] = (uint8_t)unit;
        }
      } else {
        uint64_t *rt = g->mem == MEM_ACC ? &acc_deps.read_time[unit][row] : &spad_deps.read_time[unit][row];
        *rt = max64(*rt, busy_until);
      }
    }
  }
  n_ranges = 0;
  return done;
}

void tm_frontend_only(void) {
  uint64_t accept = T.next_issue;
  T.next_issue = accept + T_FRONTEND_CYCLES;
  if (!host_cmd_accepted) {
    host_cmd_accept = accept;
    host_cmd_accepted = 1;
  }
  n_ranges = 0;
}

/* The loop units (LoopMatmul, LoopConv) have separate load, execute and store state machines: each
 * stream of generated commands waits only for its own queue, and the frontend takes the next command
 * once all streams are issued. */
void tm_loop_begin(void) {
  in_loop = 1;
  for (int u = 0; u < U_NUM; u++) stream_issue[u] = T.next_issue;
}

void tm_loop_end(void) {
  in_loop = 0;
  for (int u = 0; u < U_NUM; u++) T.next_issue = max64(T.next_issue, stream_issue[u]);
}

void tm_host_begin(void) {
  T.next_issue = max64(T.next_issue, T.host);
  in_loop = 0;
  host_cmd_accepted = 0;
  n_ranges = 0;
}

void tm_host_end(void) {
  uint64_t accepted = host_cmd_accepted ? host_cmd_accept : T.host;
  T.host = max64(T.host, accepted) + T_ROCC_ISSUE_CYCLES;
}

void tm_fence(void) { T.host = max64(T.host, T.all_done) + T_FENCE_CYCLES; }

void tm_charge_host(uint64_t cycles) { T.host += cycles; }
