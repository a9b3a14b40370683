/* The cycle model (parameters and their sources in timing_params.h; the structure follows Berkeley's
 * RTL-calibrated performance model, ucb-bar/libgemmini perf/, written here as a one-pass scheduler).
 *
 * Every command is scheduled once, when it is issued, in program order:
 *  - The host issues RoCC commands into a front end of T_FRONTEND_DEPTH entries (it stalls when that is
 *    full) that delivers them T_FRONTEND_LATENCY cycles later. One command per cycle leaves the front end
 *    for a reservation-station queue (load 8, execute 16, store 4 entries; an entry is freed when its
 *    command completes). A raw command waits until the hardware loops have issued all their commands.
 *  - The hardware loops (LOOP_WS, LOOP_CONV_WS) issue their load, execute and store streams separately,
 *    each stream continuing where the previous loop's stream ended; T_LOOP_CONCURRENT loops may be in the
 *    unit at once. LOOP_CONV_WS gates whole stages: its computes issue after its last load, its stores
 *    after its last compute (tm_loop_stage).
 *  - Each unit runs its commands in order. A command starts when its unit is free and when the
 *    scratchpad/accumulator rows it reads or writes are no longer being written (or, for writes, read) by
 *    another unit.
 *  - Loads: one Get per 64-byte line each row touches, at most one per cycle and T_DMA_MAX_GETS in flight,
 *    through the L2 (LRU, hits in T_L2_HIT_LATENCY) to DRAM (one line per 8 cycles, T_DRAM_MAX_READS in
 *    flight, T_DRAM_LATENCY); data lands in the scratchpad in order, one row per cycle.
 *  - Stores: serial; the accumulator/scratchpad is read one row per cycle, the data reaches the bus
 *    T_ST_PIPE_LATENCY (+ T_ACC_READ_LATENCY) later, one Put per 64-byte piece of a row; a partial Put to
 *    a line the L2 lacks first fetches the line; Puts to one line are serialized.
 *  - Computes stream their rows into the mesh (at least T_MESH_MIN_ROWS) and commit their results
 *    T_MESH_COMMIT_LATENCY cycles after they start; a mesh that was idle adds T_MESH_ISSUE_LATENCY.
 *  - The host clock advances with host work (trace-pc blocks), RoCC issue (stalling on a full front end)
 *    and fences (waiting for everything, store acknowledgements included).
 * Deterministic: no randomness, and the L2 is keyed by line address relative to nothing but the data. */
#include <stdlib.h>
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

static inline uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static inline uint64_t ceil_div64(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* ------------------------------------------------------------------------------ memory system */

#define L2_LINES ((uint32_t)(T_L2_KIB * 1024 / T_LINE_BYTES))
#define L2_HASH (L2_LINES * 4u) /* open addressing, power of two */
#define NIL 0xFFFFFFFFu
#define DRAM_SLOT_CYCLES ((uint64_t)(T_LINE_BYTES / T_DRAM_BYTES_PER_CYCLE))
#define DRAM_WINDOW (1u << 20) /* slots remembered: 8M cycles, far more than any reordering spans */

typedef struct {
  uint64_t line;      /* line number (address / T_LINE_BYTES) */
  uint64_t ready;     /* when its data is in the L2 */
  uint64_t put_free;  /* when the next Put to it may be handled */
  uint32_t prev, next; /* LRU list: head = most recent */
  uint32_t queued;    /* Gets that found its fill outstanding (served one after another behind it) */
  uint8_t dirty;
  uint8_t filling;    /* `ready` is when a DRAM fill lands (not a full-line Put) */
} l2_line_t;

static l2_line_t l2[L2_LINES];
static uint32_t l2_hash[L2_HASH]; /* index into l2[], or NIL */
static uint32_t l2_used, l2_head, l2_tail;
static uint64_t dram_slot[DRAM_WINDOW]; /* slot index + 1 of the reservation held in this ring cell */
static uint64_t dram_reads[T_DRAM_MAX_READS]; /* data-return times of the last reads, oldest first */
static uint32_t dram_reads_pos;

/* Statistics of the memory system (written to the stats file by runtime.c through tm_stats). */
static uint64_t st_l2_hits, st_l2_misses, st_writebacks, st_gets, st_puts, st_l2_queued;

static uint32_t l2_slot_of(uint64_t line) {
  uint64_t h = line * 0x9E3779B97F4A7C15ull;
  return (uint32_t)(h >> 40) & (L2_HASH - 1);
}

static uint32_t l2_find(uint64_t line) {
  for (uint32_t s = l2_slot_of(line);; s = (s + 1) & (L2_HASH - 1)) {
    if (l2_hash[s] == NIL) return NIL;
    if (l2[l2_hash[s]].line == line) return l2_hash[s];
  }
}

static void l2_hash_remove(uint64_t line) {
  uint32_t s = l2_slot_of(line);
  while (l2[l2_hash[s]].line != line) s = (s + 1) & (L2_HASH - 1);
  /* backward-shift deletion keeps every probe chain intact */
  uint32_t hole = s;
  for (uint32_t j = (s + 1) & (L2_HASH - 1); l2_hash[j] != NIL; j = (j + 1) & (L2_HASH - 1)) {
    uint32_t home = l2_slot_of(l2[l2_hash[j]].line);
    int movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      l2_hash[hole] = l2_hash[j];
      hole = j;
    }
  }
  l2_hash[hole] = NIL;
}

static void l2_unlink(uint32_t i) {
  if (l2[i].prev != NIL) l2[l2[i].prev].next = l2[i].next; else l2_head = l2[i].next;
  if (l2[i].next != NIL) l2[l2[i].next].prev = l2[i].prev; else l2_tail = l2[i].prev;
}

static void l2_push_front(uint32_t i) {
  l2[i].prev = NIL;
  l2[i].next = l2_head;
  if (l2_head != NIL) l2[l2_head].prev = i;
  l2_head = i;
  if (l2_tail == NIL) l2_tail = i;
}

static void l2_touch(uint32_t i) {
  if (l2_head == i) return;
  l2_unlink(i);
  l2_push_front(i);
}

/* The first free DRAM line slot at or after cycle t; reserves it and returns its start. Slots are a calendar,
 * so that requests scheduled out of time order (the units are scheduled one command at a time) still share
 * the channel correctly. */
static uint64_t dram_reserve(uint64_t t) {
  uint64_t slot = ceil_div64(t, DRAM_SLOT_CYCLES);
  for (;; slot++) {
    uint64_t *cell = &dram_slot[slot % DRAM_WINDOW];
    if (*cell != slot + 1) {
      *cell = slot + 1;
      return slot * DRAM_SLOT_CYCLES;
    }
  }
}

/* A line read from DRAM requested at t: returns when its data is back at the L2. At most T_DRAM_MAX_READS
 * reads are outstanding (FASED maxReads). */
static uint64_t dram_read(uint64_t t) {
  uint64_t *oldest = &dram_reads[dram_reads_pos];
  uint64_t start = dram_reserve(max64(t, *oldest));
  uint64_t back = start + DRAM_SLOT_CYCLES + T_DRAM_LATENCY;
  *oldest = back;
  dram_reads_pos = (dram_reads_pos + 1) % T_DRAM_MAX_READS;
  return back;
}

/* Puts a line into the L2 (evicting the least recently used one: a dirty victim costs a DRAM slot). */
static uint32_t l2_insert(uint64_t line, uint64_t ready, uint64_t now, int dirty, int filling) {
  uint32_t i;
  if (l2_used < L2_LINES) {
    i = l2_used++;
  } else {
    i = l2_tail;
    l2_unlink(i);
    l2_hash_remove(l2[i].line);
    if (l2[i].dirty) {
      st_writebacks++;
      dram_reserve(now);
    }
  }
  l2[i] = (l2_line_t){line, ready, 0, NIL, NIL, 0, (uint8_t)dirty, (uint8_t)filling};
  l2_push_front(i);
  uint32_t s = l2_slot_of(line);
  while (l2_hash[s] != NIL) s = (s + 1) & (L2_HASH - 1);
  l2_hash[s] = i;
  return i;
}

/* A Get of `line` accepted by the bus at g: when its data is back. */
static uint64_t l2_get(uint64_t line, uint64_t g) {
  uint32_t i = l2_find(line);
  if (i != NIL) {
    st_l2_hits++;
    l2_touch(i);
    if (l2[i].filling && g < l2[i].ready) {
      /* the line's fill is still on its way: this Get waits in the L2 behind it and is served after the
       * requester that missed, the queued ones one after another */
      const uint64_t at = l2[i].ready + T_L2_FILL_SECONDARY_FIRST + (uint64_t)l2[i].queued * T_L2_FILL_SECONDARY_NEXT;
      l2[i].queued++;
      st_l2_queued++;
      return max64(at, g + T_L2_HIT_LATENCY);
    }
    return max64(g + T_L2_HIT_LATENCY, l2[i].ready);
  }
  st_l2_misses++;
  uint64_t back = dram_read(g + T_L2_MISS_DETECT);
  l2_insert(line, back, g, 0, 1);
  return max64(back + T_L2_FILL_TO_DATA, g + T_L2_HIT_LATENCY);
}

/* A Put of `bytes` at `addr` accepted by the bus at p: when it is acknowledged. */
static uint64_t l2_put(uint64_t addr, uint32_t bytes, uint64_t p) {
  const uint64_t line = addr / T_LINE_BYTES;
  const int full = bytes >= T_LINE_BYTES && addr % T_LINE_BYTES == 0;
  uint32_t i = l2_find(line);
  uint64_t earliest;
  if (i == NIL) {
    if (full) {
      i = l2_insert(line, p, p, 1, 0);
      earliest = p + T_FULL_WRITE_ACK_LATENCY - T_L2_PUT_SERIAL;
    } else { /* write-allocate: the line is fetched and the Put waits for it */
      st_l2_misses++;
      uint64_t back = dram_read(p + T_L2_MISS_DETECT);
      i = l2_insert(line, back, p, 1, 1);
      earliest = max64(back - 1, p + T_WRITE_ACK_LATENCY - T_L2_PUT_SERIAL);
    }
  } else {
    st_l2_hits++;
    l2_touch(i);
    l2[i].dirty = 1;
    earliest = full ? p + T_FULL_WRITE_ACK_LATENCY - T_L2_PUT_SERIAL
                    : max64(l2[i].ready > 0 ? l2[i].ready - 1 : 0, p + T_WRITE_ACK_LATENCY - T_L2_PUT_SERIAL);
  }
  uint64_t start = max64(earliest, l2[i].put_free);
  l2[i].put_free = start + T_L2_PUT_SERIAL;
  return start + T_L2_PUT_SERIAL;
}

/* ---------------------------------------------------------------------------- address translation */
/* Gemmini's DMA translates virtual addresses (FrontendTLB.scala): each client (the reader and the writer)
 * keeps its last translated page in a filter register; other pages go through ONE shared rocket-chip TLB
 * built with T_TLB_ENTRIES ways, which rocket-chip groups into sectored entries of T_TLB_SECTORS
 * consecutive pages (TLB.scala: nWays / nSectors entries) -- with the default 4 ways, a single entry that
 * holds up to 4 pages of one 16 KiB-aligned group. A miss goes to the page-table walker, one at a time, and
 * holds the TLB meanwhile. The table is updated in the order this one-pass model schedules requests. */
#define TLB_GROUPS (T_TLB_ENTRIES / T_TLB_SECTORS > 0 ? T_TLB_ENTRIES / T_TLB_SECTORS : 1)
enum { TLB_READER, TLB_WRITER, TLB_CLIENTS };
static uint64_t tlb_group[TLB_GROUPS], tlb_used[TLB_GROUPS], tlb_stamp;
static uint32_t tlb_sectors[TLB_GROUPS]; /* valid sectors (pages) of each entry; 0 = entry empty */
static uint64_t tlb_filter[TLB_CLIENTS]; /* page + 1 of each client's last translation; 0 = none */
static uint64_t tlb_free;                 /* when the TLB can take the next miss */
static uint64_t st_tlb_misses;

/* When a DMA request for `addr` that is ready at t may go out (its translation done). */
static uint64_t tlb_translate(int client, uint64_t addr, uint64_t t) {
  if (!T_VIRTUAL_MEMORY) return t;
  const uint64_t page = addr / T_PAGE_BYTES, group = page / T_TLB_SECTORS;
  const uint32_t sector = 1u << (page % T_TLB_SECTORS);
  if (tlb_filter[client] == page + 1) return t;
  tlb_filter[client] = page + 1;
  int victim = 0;
  for (int e = 0; e < TLB_GROUPS; e++) {
    if (tlb_sectors[e] && tlb_group[e] == group) {
      tlb_used[e] = ++tlb_stamp;
      if (tlb_sectors[e] & sector) return t + T_TLB_HIT_CYCLES;
      tlb_sectors[e] |= sector; /* a miss that refills a sector of this entry */
      tlb_free = max64(t, tlb_free) + T_TLB_MISS_CYCLES;
      st_tlb_misses++;
      return tlb_free;
    }
    if (tlb_used[e] < tlb_used[victim]) victim = e;
  }
  tlb_group[victim] = group, tlb_sectors[victim] = sector, tlb_used[victim] = ++tlb_stamp;
  tlb_free = max64(t, tlb_free) + T_TLB_MISS_CYCLES;
  st_tlb_misses++;
  return tlb_free;
}

/* ------------------------------------------------------------------ DMA pieces of the current command */

typedef struct {
  uint64_t addr;
  uint32_t bytes;
} piece_t;
static piece_t *pieces;
static size_t n_pieces, cap_pieces;
static int pieces_write;

void tm_note_dram(uint64_t addr, uint64_t n, int write) {
  if (n == 0) return;
  if (n_pieces && pieces_write != write) n_pieces = 0; /* a command moves data one way */
  pieces_write = write;
  piece_t *last = n_pieces ? &pieces[n_pieces - 1] : NULL;
  /* byte-wise writes (pooled mvout) of one row arrive one at a time: join them up to a Put */
  if (last && n == 1 && last->addr + last->bytes == addr && last->bytes < T_DMA_PUT_BYTES) {
    last->bytes += (uint32_t)n;
    return;
  }
  if (n_pieces == cap_pieces) {
    size_t cap = cap_pieces ? 2 * cap_pieces : 256;
    piece_t *p = realloc(pieces, cap * sizeof *p);
    if (!p) gm_fail("out of memory in the cycle model");
    pieces = p;
    cap_pieces = cap;
  }
  pieces[n_pieces++] = (piece_t){addr, (uint32_t)n};
}

/* ------------------------------------------------------------------------------------ scheduling */

static uint64_t queue_done[U_NUM][64]; /* completion of the last `depth` commands of each queue */
static uint64_t queue_pos[U_NUM];
static uint64_t unit_free[U_NUM];
static uint64_t mesh_feed_end;       /* when the mesh finished streaming its last compute */
static uint64_t ld_done[T_LD_CMDS_IN_FLIGHT]; /* completion of the last mvins (load tracker) */
static uint64_t ld_done_pos;
static uint64_t get_next, get_done[T_DMA_MAX_GETS], get_pos, merge_free; /* DMA reader */
static uint64_t put_next, put_ack[T_DMA_MAX_PUTS], put_pos;             /* DMA writer */

static int in_loop;                   /* a hardware loop is issuing: one issue stream per unit */
static uint64_t stream_issue[U_NUM];  /* next issue cycle of each of the current loop's streams */
static uint64_t stream_end[U_NUM];    /* where the previous loop's streams ended */
static uint64_t loops_idle;           /* every loop so far has issued all its commands */
static uint64_t loop_end[T_LOOP_CONCURRENT]; /* issue end of the last loops, oldest first */
static uint32_t loop_end_pos;
static uint32_t acc_offset;           /* accumulator rows of the current loop's half (timing only) */
static uint32_t loop_acc_cursor;

static uint64_t host_cmd_accept; /* first acceptance of the current host instruction */
static int host_cmd_accepted;
static uint64_t host_taken[T_FRONTEND_DEPTH]; /* when the last host commands left the front end */
static uint32_t host_taken_pos;

#define MAX_RANGES 64
typedef struct {
  int mem, write;
  uint32_t first, count, stride;
} range_t;
static range_t ranges[MAX_RANGES];
static int n_ranges;

void tm_reset(void) {
  memset(&T, 0, sizeof T);
  memset(&spad_deps, 0, sizeof spad_deps);
  memset(&acc_deps, 0, sizeof acc_deps);
  memset(queue_done, 0, sizeof queue_done);
  memset(queue_pos, 0, sizeof queue_pos);
  memset(unit_free, 0, sizeof unit_free);
  memset(ld_done, 0, sizeof ld_done);
  memset(get_done, 0, sizeof get_done);
  memset(put_ack, 0, sizeof put_ack);
  memset(stream_end, 0, sizeof stream_end);
  memset(loop_end, 0, sizeof loop_end);
  memset(host_taken, 0, sizeof host_taken);
  memset(dram_slot, 0, sizeof dram_slot);
  memset(dram_reads, 0, sizeof dram_reads);
  for (uint32_t s = 0; s < L2_HASH; s++) l2_hash[s] = NIL;
  l2_used = 0, l2_head = l2_tail = NIL;
  dram_reads_pos = 0;
  st_l2_hits = st_l2_misses = st_writebacks = st_gets = st_puts = st_l2_queued = 0;
  memset(tlb_group, 0, sizeof tlb_group), memset(tlb_used, 0, sizeof tlb_used);
  memset(tlb_sectors, 0, sizeof tlb_sectors), memset(tlb_filter, 0, sizeof tlb_filter);
  tlb_stamp = tlb_free = st_tlb_misses = 0;
  mesh_feed_end = ld_done_pos = get_next = get_pos = merge_free = put_next = put_pos = 0;
  loops_idle = 0, loop_end_pos = 0, acc_offset = 0, loop_acc_cursor = 0, host_taken_pos = 0;
  in_loop = 0;
  n_ranges = 0;
  n_pieces = 0;
}

static void add_range(int mem, uint32_t first, uint32_t count, uint32_t stride, int write) {
  if (count == 0) return;
  if (mem == MEM_ACC) first = (first + acc_offset) % ACC_ROWS;
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

void tm_read(int mem, uint32_t first, uint32_t count, uint32_t stride) { add_range(mem, first, count, stride, 0); }

void tm_write(int mem, uint32_t first, uint32_t count, uint32_t stride) { add_range(mem, first, count, stride, 1); }

uint64_t tm_dma_cycles(uint64_t rows, uint64_t row_bytes) {
  /* Kept for callers that size a transfer; the schedule itself moves the recorded DMA pieces through the
   * memory system. The channel time of whole lines at the DRAM rate. */
  return rows * ceil_div64(row_bytes, T_LINE_BYTES) * DRAM_SLOT_CYCLES;
}

static int ranges_use(int mem) {
  for (int r = 0; r < n_ranges; r++)
    if (ranges[r].mem == mem) return 1;
  return 0;
}

/* The load unit's DMA: every piece (a row) as Gets of the lines it touches, from `start`. Returns when the
 * last byte is in local memory; *issued_end = the cycle after the last Get went out. */
static uint64_t dma_read(uint64_t start, uint32_t local_row_bytes, uint64_t *issued_end) {
  uint64_t last = start;
  for (size_t p = 0; p < n_pieces; p++) {
    const uint64_t a0 = pieces[p].addr, a1 = a0 + pieces[p].bytes;
    for (uint64_t line = a0 / T_DMA_GET_BYTES; line * T_DMA_GET_BYTES < a1; line++) {
      const uint64_t lo = max64(line * T_DMA_GET_BYTES, a0);
      const uint64_t hi = (line + 1) * T_DMA_GET_BYTES < a1 ? (line + 1) * T_DMA_GET_BYTES : a1;
      uint64_t *slot = &get_done[get_pos];
      const uint64_t g = tlb_translate(TLB_READER, lo, max64(max64(start, get_next), *slot));
      get_next = g + 1;
      st_gets++;
      const uint64_t back = l2_get(line * T_DMA_GET_BYTES / T_LINE_BYTES, g);
      /* responses are merged in request order, one local row per cycle */
      const uint64_t merged = max64(back, merge_free) + ceil_div64(hi - lo, local_row_bytes);
      merge_free = merged;
      *slot = merged;
      get_pos = (get_pos + 1) % T_DMA_MAX_GETS;
      last = merged;
    }
  }
  *issued_end = get_next;
  return last;
}

/* The store unit's DMA: piece (row) r is ready at data_from + (r+1)*cycles_per_row; one Put per 64-byte
 * piece. Returns the last acknowledgement; *released = when all but T_ST_WRITE_SLACK Puts were accepted. */
static uint64_t dma_write(uint64_t data_from, double cycles_per_row, uint64_t *released) {
  uint64_t last_ack = data_from, n_puts = 0;
  for (size_t p = 0; p < n_pieces; p++)
    n_puts += ceil_div64(pieces[p].bytes + pieces[p].addr % T_DMA_PUT_BYTES, T_DMA_PUT_BYTES);
  uint64_t k = 0;
  *released = data_from;
  for (size_t p = 0; p < n_pieces; p++) {
    const uint64_t ready = data_from + (uint64_t)((double)(p + 1) * cycles_per_row + 0.999999);
    const uint64_t a0 = pieces[p].addr, a1 = a0 + pieces[p].bytes;
    for (uint64_t chunk = a0 / T_DMA_PUT_BYTES; chunk * T_DMA_PUT_BYTES < a1; chunk++, k++) {
      const uint64_t lo = max64(chunk * T_DMA_PUT_BYTES, a0);
      const uint64_t hi = (chunk + 1) * T_DMA_PUT_BYTES < a1 ? (chunk + 1) * T_DMA_PUT_BYTES : a1;
      uint64_t *slot = &put_ack[put_pos];
      const uint64_t put = tlb_translate(TLB_WRITER, lo, max64(max64(ready, put_next), *slot));
      put_next = put + ceil_div64(hi - lo, T_BUS_BYTES); /* the data beats on the system bus */
      st_puts++;
      const uint64_t ack = l2_put(lo, (uint32_t)(hi - lo), put);
      *slot = ack;
      put_pos = (put_pos + 1) % T_DMA_MAX_PUTS;
      last_ack = max64(last_ack, ack);
      if (k + T_ST_WRITE_SLACK + 1 == n_puts || (n_puts <= T_ST_WRITE_SLACK && k == 0)) *released = put + 1;
    }
  }
  return last_ack;
}

/* When the front end hands the current command to its queue. */
static uint64_t frontend_accept(int unit) {
  const uint32_t depth = queue_depth[unit];
  uint64_t *slot = &queue_done[unit][queue_pos[unit] % depth];
  uint64_t accept;
  if (in_loop) {
    accept = max64(stream_issue[unit], *slot);
    stream_issue[unit] = accept + T_FRONTEND_CYCLES;
  } else {
    accept = max64(max64(T.next_issue, loops_idle), *slot);
    T.next_issue = accept + T_FRONTEND_CYCLES;
  }
  if (!host_cmd_accepted) {
    host_cmd_accept = accept;
    host_cmd_accepted = 1;
  }
  return accept;
}

uint64_t tm_schedule(int unit, uint64_t occupancy, uint64_t latency, uint64_t dram_cycles) {
  (void)dram_cycles;
  const uint64_t accept = frontend_accept(unit);
  uint64_t *slot = &queue_done[unit][queue_pos[unit] % queue_depth[unit]];

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
        row %= ACC_ROWS;
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

  uint64_t start = ready, reads_end, free_at, done, last_activity;
  const int has_dma = n_pieces > 0;
  if (unit == U_LOAD) {
    start = max64(start, ld_done[ld_done_pos]); /* the load tracker holds T_LD_CMDS_IN_FLIGHT mvins */
    if (has_dma && !pieces_write) {
      const uint32_t local_row = ranges_use(MEM_ACC) ? DIM * (uint32_t)sizeof(acc_t) : T_SPAD_WRITE_BYTES;
      uint64_t issued_end;
      uint64_t landed = dma_read(start, local_row, &issued_end);
      landed = max64(landed, start + occupancy);
      free_at = max64(issued_end, start + 1); /* the next mvin's Gets follow this one's */
      done = landed + T_LD_COMPLETION_LAG;
    } else { /* zeros (no DRAM address) or a config: local writes only */
      free_at = start + occupancy;
      done = free_at;
    }
    reads_end = free_at;
    last_activity = done;
    ld_done[ld_done_pos] = done;
    ld_done_pos = (ld_done_pos + 1) % T_LD_CMDS_IN_FLIGHT;
  } else if (unit == U_EX) {
    if (latency > 0) { /* a compute: the mesh streams its rows, results commit later */
      if (occupancy < T_MESH_MIN_ROWS) occupancy = T_MESH_MIN_ROWS;
      if (start > mesh_feed_end) start += T_MESH_ISSUE_LATENCY;
      free_at = start + occupancy;
      mesh_feed_end = free_at;
      done = free_at + latency;
    } else {
      free_at = start + occupancy;
      done = free_at;
    }
    reads_end = free_at;
    last_activity = done;
  } else { /* U_STORE: serial, reads local rows one per cycle, then Puts */
    reads_end = start + 1 + occupancy;
    if (has_dma && pieces_write) {
      const uint64_t data_from = start + T_ST_PIPE_LATENCY + (ranges_use(MEM_ACC) ? T_ACC_READ_LATENCY : 0);
      uint64_t released;
      const uint64_t last_ack = dma_write(data_from, (double)occupancy / (double)n_pieces, &released);
      done = max64(reads_end, released) + T_ST_COMPLETION_LAG;
      last_activity = max64(done, last_ack);
    } else {
      reads_end = start + occupancy;
      done = reads_end;
      last_activity = done;
    }
    free_at = done;
  }

  unit_free[unit] = free_at;
  T.busy[unit] += free_at > start ? free_at - start : 0;
  T.all_done = max64(T.all_done, last_activity);
  *slot = done;
  queue_pos[unit]++;

  /* Record what this command uses: reads finish when it stops reading, writes land when it is done. */
  for (int r = 0; r < n_ranges; r++) {
    const range_t *g = &ranges[r];
    for (uint32_t i = 0; i < g->count; i++) {
      uint32_t row = g->first + i * g->stride;
      if (g->mem == MEM_ACC) row %= ACC_ROWS;
      else if (row >= SPAD_ROWS) continue;
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
        *rt = max64(*rt, reads_end);
      }
    }
  }
  n_ranges = 0;
  n_pieces = 0;
  return done;
}

/* A command that only passes the front end: a raw one (waits for the loops to be idle) ... */
void tm_frontend_only(void) {
  uint64_t accept = max64(T.next_issue, loops_idle);
  T.next_issue = accept + T_FRONTEND_CYCLES;
  if (!host_cmd_accepted) {
    host_cmd_accept = accept;
    host_cmd_accepted = 1;
  }
  n_ranges = 0;
  n_pieces = 0;
}

/* ... or a loop configuration / loop start, which LoopMatmul takes as soon as a loop slot is free: the
 * loop T_LOOP_CONCURRENT loops back has issued all its commands. */
void tm_frontend_loop(void) {
  uint64_t accept = max64(T.next_issue, loop_end[loop_end_pos]);
  T.next_issue = accept + T_FRONTEND_CYCLES;
  if (!host_cmd_accepted) {
    host_cmd_accept = accept;
    host_cmd_accepted = 1;
  }
  n_ranges = 0;
  n_pieces = 0;
}

/* The loop units have separate load, execute and store unrollers: each stream of generated commands
 * continues where the previous loop's stream of that kind ended, and waits only for its own queue. */
void tm_loop_begin(int alternate_acc, uint32_t acc_rows_used) {
  in_loop = 1;
  const uint64_t started = T.next_issue; /* the loop command itself was just accepted */
  for (int u = 0; u < U_NUM; u++) stream_issue[u] = max64(started, stream_end[u]);
  /* LoopMatmul alternates the accumulator half of successive loops that store C to DRAM (gperf
   * loop_matmul.cc, LoopMatmul.scala:1573); the functional model keeps Spike's addresses, so the timing
   * model moves the loop's accumulator rows to the half the hardware would use. */
  acc_offset = 0;
  if (alternate_acc && acc_rows_used <= ACC_ROWS / 2) {
    acc_offset = loop_acc_cursor;
    loop_acc_cursor = (loop_acc_cursor + ACC_ROWS / 2) % ACC_ROWS;
  }
}

/* LoopConv gates whole stages of a loop, not tiles: its execute unroller issues nothing until the loop's
 * input, weight and bias loaders have issued their last mvin (ld_ahead = lda/ldb/ldd_completed, each
 * "the loader moved on or is idle"), and its store unroller nothing until the execute unroller is done
 * (LoopConvSt: command valid only with io.ex_completed) -- gemmini LoopConv.scala at ucb-bar/gemmini
 * 03fa3d19. A loader runs at most max_lds mvins ahead of their completion (rob_overloaded), so a loop's
 * computes start only when nearly all its loads are done; the two loop slots overlap one loop's loads with
 * the previous loop's computes. LoopMatmul gates the same way only on its bias (ldd_ahead = ldd_completed);
 * A, B and C are gated per tile (lda_ahead / ldb_ahead / ex_ahead), which the row dependencies already
 * give. */
void tm_loop_stage(int earlier, int later) {
  if (in_loop) stream_issue[later] = max64(stream_issue[later], stream_issue[earlier]);
}

void tm_loop_end(void) {
  in_loop = 0;
  acc_offset = 0;
  uint64_t end = 0;
  for (int u = 0; u < U_NUM; u++) {
    stream_end[u] = stream_issue[u];
    end = max64(end, stream_issue[u]);
  }
  loops_idle = max64(loops_idle, end);
  loop_end[loop_end_pos] = end;
  loop_end_pos = (loop_end_pos + 1) % T_LOOP_CONCURRENT;
}

void tm_host_begin(void) {
  /* The core stalls while the front end holds T_FRONTEND_DEPTH commands it has not handed on. */
  T.host = max64(T.host, host_taken[host_taken_pos]);
  T.next_issue = max64(T.next_issue, T.host + T_FRONTEND_LATENCY);
  in_loop = 0;
  host_cmd_accepted = 0;
  n_ranges = 0;
  n_pieces = 0;
}

void tm_host_end(void) {
  host_taken[host_taken_pos] = host_cmd_accepted ? host_cmd_accept : T.host + T_FRONTEND_LATENCY;
  host_taken_pos = (host_taken_pos + 1) % T_FRONTEND_DEPTH;
  T.host += T_ROCC_ISSUE_CYCLES;
}

void tm_fence(void) { T.host = max64(T.host, T.all_done) + T_FENCE_CYCLES; }

void tm_charge_host(uint64_t cycles) { T.host += cycles; }

void tm_memory_stats(uint64_t out[TM_MEMORY_STATS]) {
  out[0] = st_gets, out[1] = st_puts, out[2] = st_l2_hits, out[3] = st_l2_misses, out[4] = st_writebacks;
  out[5] = st_tlb_misses, out[6] = st_l2_queued;
}
