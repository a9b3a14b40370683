// speedpatch harness kit: the trusted main() of a .cu problem file.
//
// A problem file has two parts separated by a line `// speedpatch: solution`:
//   above it, the trusted HARNESS: `#include "speedpatch_timing.cuh"`, constants, a host reference and
//   `static spd::Spec problem()`; below it, the SOLUTION: kernels and
//   `void launch(const float* const* inputs, float* output)` taking device pointers.
// The buffers' element type is float unless the harness selects another before the #include:
//   #define SPEEDPATCH_ELEMENT __half           (or __nv_bfloat16)
// and launch then takes `const __half* const*` and `__half*`. Inputs are drawn as floats, rounded to the
// element type, and the host reference (float signature) receives those rounded values; the output is
// widened back to float before it is compared with the reference.
// Only the solution is ever rewritten. speedpatch builds one binary from three translation units:
// the harness with main() (SPEEDPATCH_SPLIT defined), the baseline solution in namespace sp_baseline
// and the candidate solution in namespace sp_candidate, then alternates them trial by trial.
// Compiled directly (`nvcc -I<this dir> file.cu`) the file checks and times its own solution against itself.
#pragma once

#include <cuda_runtime.h>

// The element type, chosen by a token the preprocessor can test: SPD_ELEMENT_ID_<type> names each kind.
#ifndef SPEEDPATCH_ELEMENT
#define SPEEDPATCH_ELEMENT float
#endif
#define SPD_ELEMENT_ID_float 1
#define SPD_ELEMENT_ID___half 2
#define SPD_ELEMENT_ID___nv_bfloat16 3
#define SPD_CAT_(a, b) a##b
#define SPD_CAT(a, b) SPD_CAT_(a, b)
#define SPD_ELEMENT_ID SPD_CAT(SPD_ELEMENT_ID_, SPEEDPATCH_ELEMENT)
#if SPD_ELEMENT_ID == 2
#include <cuda_fp16.h>  // only then: it costs about a second of compile time per translation unit
#elif SPD_ELEMENT_ID == 3
#include <cuda_bf16.h>
#elif SPD_ELEMENT_ID != 1
#error "SPEEDPATCH_ELEMENT must be float, __half or __nv_bfloat16"
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "speedpatch_element.h"

// A solution unit (baseline.cu, candidate.cu, harness_only.cu: SPEEDPATCH_SOLUTION_UNIT defined) sees the
// element type and spd::Spec, which the problem's harness part needs, and nothing of the measuring code:
// the solution cannot name the harness's internals, and each candidate compiles in about two thirds of the
// host-compiler time (no <random>, <chrono> or run_main templates to parse).
#ifndef SPEEDPATCH_SOLUTION_UNIT
#include <chrono>
#include <random>

#include "speedpatch_stats.h"
#endif

namespace spd {

using elem = SPEEDPATCH_ELEMENT;  // the type of every input and of the output on the device
using LaunchFn = void (*)(const elem* const* inputs, elem* output);  // device pointers
using ReferenceFn = void (*)(const float* const* inputs, float* output);  // host pointers, always float

// Host-side rounding to the element type and widening back (speedpatch_element.h), by bits: no device
// intrinsics, so a host-only build runs the same conversions.
#if SPD_ELEMENT_ID == 1
inline const char* element_name() { return "fp32"; }
inline elem to_elem(float x) { return x; }
inline float to_float(elem x) { return x; }
#else
static_assert(sizeof(elem) == 2, "16-bit element types only");
#if SPD_ELEMENT_ID == 2
inline const char* element_name() { return "fp16"; }
inline uint16_t narrow_bits(float x) { return float_to_half_bits(x); }
inline float widen_bits(uint16_t b) { return half_bits_to_float(b); }
#else
inline const char* element_name() { return "bf16"; }
inline uint16_t narrow_bits(float x) { return float_to_bf16_bits(x); }
inline float widen_bits(uint16_t b) { return bf16_bits_to_float(b); }
#endif
inline elem to_elem(float x) {
  uint16_t bits = narrow_bits(x);
  elem e;
  std::memcpy(static_cast<void*>(&e), &bits, sizeof e);
  return e;
}
inline float to_float(elem x) {
  uint16_t bits;
  std::memcpy(&bits, static_cast<const void*>(&x), sizeof bits);
  return widen_bits(bits);
}
#endif

struct Input {
  const char* name;
  size_t count;
  float lo = -1.0f;  // inputs are uniform in [lo, hi)
  float hi = 1.0f;
};

struct Spec {
  std::string name;
  std::vector<Input> inputs;
  size_t output_count = 0;
  ReferenceFn reference = nullptr;
  double rtol = 1e-4, atol = 1e-4;
  double flops = 0;  // per call, for the achieved FLOP rate (0 = not meaningful)
  double bytes = 0;  // minimum DRAM traffic per call, for the achieved bandwidth
  std::string shapes;  // for the receipt, e.g. "A 512x512, B 512x512"
};

#ifndef SPEEDPATCH_SOLUTION_UNIT
struct Options {
  int seeds = 3;      // independent input sets checked against the reference (timed trials: fresh sets)
  uint64_t seed0 = 0;  // first seed
  int warmup = 3;
  int trials = 100;   // per side
  double confidence = 0.95;
};

// Everything the harness reports goes through one JSON line so the backend never parses prose. The line
// goes to the verdict channels, which the backend reads instead of the program output (the candidate runs
// in this process and could print a line of its own): the pipe named by $SPEEDPATCH_RESULT_FD (the
// sandbox's result channel) and the file named by --result (a file is read whole; remote hosts use it).
// With --nonce stdin, the first line of stdin is a per-evaluation secret, read before any solution code
// runs; it goes into the channels' copies of the line (not the printed one), and the backend accepts only
// a verdict that carries it.
inline std::string& result_file() {
  static std::string path;
  return path;
}
inline std::string& result_nonce() {
  static std::string nonce;
  return nonce;
}

inline void emit(const std::string& status, const std::string& message, const std::string& extra = "") {
  std::string json = "{\"status\":\"" + status + "\",\"message\":\"" + json_escape(message) + "\"" +
                     (extra.empty() ? "" : ",") + extra + "}";
  std::printf("SPEEDPATCH_RESULT %s\n", json.c_str());
  std::fflush(stdout);
  std::string sealed = json;
  if (!result_nonce().empty()) sealed = "{\"nonce\":\"" + json_escape(result_nonce()) + "\"," + json.substr(1);
  if (const char* fd = std::getenv("SPEEDPATCH_RESULT_FD")) {
    if (FILE* f = fdopen(std::atoi(fd), "w")) {
      std::fprintf(f, "SPEEDPATCH_RESULT %s\n", sealed.c_str());
      std::fflush(f);  // not closed: a later emit (none is expected) must not reuse a closed descriptor
    }
  }
  if (!result_file().empty()) {
    if (FILE* f = std::fopen(result_file().c_str(), "w")) {
      std::fprintf(f, "SPEEDPATCH_RESULT %s\n", sealed.c_str());
      std::fclose(f);
    }
  }
}

inline Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i];
    const char* val = argv[i + 1];
    if (key == "--seeds") o.seeds = std::max(1, std::atoi(val));
    else if (key == "--seed") o.seed0 = std::strtoull(val, nullptr, 10);
    else if (key == "--warmup") o.warmup = std::max(0, std::atoi(val));
    else if (key == "--trials") o.trials = std::max(1, std::atoi(val));
    else if (key == "--confidence") o.confidence = std::atof(val);
    else if (key == "--result") result_file() = val;
    else if (key == "--nonce" && std::string(val) == "stdin") {
      char line[256] = {0};
      if (std::fgets(line, sizeof line, stdin)) result_nonce() = std::string(line, std::strcspn(line, "\r\n"));
    }
  }
  return o;
}

// A kernel the harness launches itself to evict L2: writes every byte of a buffer bigger than L2.
#ifdef __CUDACC__
static __global__ void spd_flush_kernel(unsigned int* buf, size_t words, unsigned int value) {
  size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride) buf[i] = value + unsigned(i);
}
inline void flush_l2(unsigned int* buf, size_t words, unsigned int value, int sms) {
  spd_flush_kernel<<<4 * sms, 256>>>(buf, words, value);
}
#else
// Built by a plain C++ compiler against a host stand-in for the CUDA runtime (the kit's own tests run
// the harness logic this way on machines without a GPU): the same writes, on the host.
inline void flush_l2(unsigned int* buf, size_t words, unsigned int value, int) {
  for (size_t i = 0; i < words; ++i) buf[i] = value + unsigned(i);
}
#endif

struct Device {
  cudaDeviceProp prop{};
  int id = 0;
  double peak_gbps = 0;    // theoretical DRAM bandwidth from device attributes
  double peak_gflops = 0;  // theoretical FP32 FMA rate from SM count, clock and cores per SM
  std::string json() const {
    char buf[768];
    std::snprintf(buf, sizeof buf,
                  "{\"name\":\"%s\",\"cc\":\"%d.%d\",\"sms\":%d,\"l2_bytes\":%d,\"peak_gbps\":%s,\"peak_gflops_fp32\":%s,"
                  "\"driver\":%d,\"runtime\":%d}",
                  json_escape(prop.name).c_str(), prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize,
                  json_number(peak_gbps).c_str(), json_number(peak_gflops).c_str(), driver, runtime);
    return buf;
  }
  int driver = 0, runtime = 0;
};

inline int fp32_cores_per_sm(int major, int minor) {
  if (major == 7) return 64;
  if (major == 8) return minor == 0 ? 64 : 128;
  return major >= 9 ? 128 : 64;
}

// Returns false (after printing the result line) when there is no usable device.
inline bool open_device(Device& d) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    emit("no_device", std::string("no CUDA device: ") + (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices"));
    return false;
  }
  cudaGetDevice(&d.id);
  cudaGetDeviceProperties(&d.prop, d.id);
  int mem_khz = 0, sm_khz = 0;
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, d.id);
  cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, d.id);
  d.peak_gbps = 2.0 * mem_khz * 1e3 * (d.prop.memoryBusWidth / 8.0) / 1e9;
  d.peak_gflops = 2.0 * d.prop.multiProcessorCount * fp32_cores_per_sm(d.prop.major, d.prop.minor) * sm_khz * 1e3 / 1e9;
  cudaDriverGetVersion(&d.driver);
  cudaRuntimeGetVersion(&d.runtime);
  return true;
}

// One side of the A/B comparison: its own device inputs (rewritten from the pristine sets before each
// call, so a kernel that writes its inputs or caches by pointer gains nothing) and its own output.
struct Side {
  const char* label;
  LaunchFn launch;
  std::vector<elem*> live;  // device inputs passed to launch
  elem* out = nullptr;
  std::vector<double> ms;        // CUDA-event time per trial
  std::vector<double> wall_ms;   // host time to device-wide idle per trial (catches work off the stream)
  int last_set = -1;
};

#define SPD_CHECK(call, what)                                                                       \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      emit("runtime_error", std::string(what) + ": " + cudaGetErrorString(e_));                    \
      std::exit(4);                                                                                 \
    }                                                                                               \
  } while (0)

class Bench {
 public:
  Bench(const Spec& spec, const Options& opt, const Device& dev) : spec_(spec), opt_(opt), dev_(dev) {}

  int run(LaunchFn baseline, LaunchFn candidate) {
    if (spec_.reference == nullptr || spec_.output_count == 0 || spec_.inputs.empty()) {
      emit("bad_problem", "problem() must set inputs, output_count and reference");
      return 2;
    }
    make_inputs();
    Side a{"baseline", baseline}, b{"candidate", candidate};
    alloc(a);
    alloc(b);
    // Correctness first, on every seed. The reference output of a seed is computed only after both sides
    // have produced theirs: while the candidate runs on a seed for the first time, its gold result does not
    // exist anywhere in the process. The baseline must pass its own harness, then the candidate.
    // Each side's output is read back before the other side runs: preparing a call poisons every output
    // buffer, so neither side can copy the other's answer.
    for (int s = 0; s < opt_.seeds; ++s) {
      call(a, s, nullptr);
      std::vector<float> got_a = fetch(a);
      call(b, s, nullptr);
      std::vector<float> got_b = fetch(b);
      compute_reference(s);
      if (is_degenerate(refs_[s].data(), refs_[s].size(), spec_.rtol, spec_.atol)) {
        emit("bad_problem", "the reference output for seed " + std::to_string(opt_.seed0 + s) +
                                " is matched by a constant within tolerance, so it cannot tell a correct kernel from one writing that constant");
        return 2;
      }
      for (Side* side : {&a, &b}) {
        Check c = compare((side == &a ? got_a : got_b).data(), refs_[size_t(s)].data(), spec_.output_count, spec_.rtol,
                          spec_.atol);
        if (!c.ok) {
          std::string status = side == &a ? "baseline_incorrect" : "incorrect";
          emit(status, std::string(side->label) + " is wrong on seed " + std::to_string(opt_.seed0 + s) + ": " + c.why,
               "\"max_abs_err\":" + json_number(c.max_abs_err));
          return 1;
        }
      }
    }
    // Warm-ups (not timed), then trials alternating A,B / B,A so neither side always goes first.
    for (int i = 0; i < opt_.warmup; ++i) {
      call(a, i % opt_.seeds, nullptr);
      call(b, i % opt_.seeds, nullptr);
    }
    // Every timed trial runs both sides on inputs never seen before, drawn from a source the solution cannot
    // read: with the seeds' inputs rotated through the trials, a solution that kept each input set it saw with
    // its output, and copied the kept output when the inputs matched, was correct in every call and timed at
    // copy speed. The gold of a fresh set is the baseline's output (checked against the reference on every
    // seed), within twice the tolerance (both sides are each within it of the reference).
    // Every timed output of the candidate is compared, right after its call (the next call poisons it), outside
    // the timed region: the schedule of calls is fixed by --seeds/--warmup/--trials, so a solution counting its
    // calls knows which are only timed; with only the last output checked it skipped the work in those.
    const int fresh = opt_.seeds;  // the slot after the seeds' sets
    for (int i = 0; i < opt_.trials; ++i) {
      fresh_trial_inputs();
      std::vector<float> got_a, got_b;
      if (i % 2 == 0) {
        timed(a, fresh);
        got_a = fetch(a);
        timed(b, fresh);
        got_b = fetch(b);
      } else {
        timed(b, fresh);
        got_b = fetch(b);
        timed(a, fresh);
        got_a = fetch(a);
      }
      std::string why = disagreement(got_b, got_a);
      if (!why.empty()) {
        emit("incorrect", "candidate output is wrong in the timing loop (timed call " + std::to_string(i + 1) + " of " +
                              std::to_string(opt_.trials) + ", on fresh inputs): " + why);
        return 1;
      }
    }
    // Each side runs once more on a seed's set (not seed 0: pointer caches), and that output is checked against
    // the reference: right once is not enough (a kernel that drifts, or caches by pointer, fails here).
    for (Side* side : {&a, &b}) {
      int set = 1 % opt_.seeds;
      call(*side, set, nullptr);
      Check c = check(*side, set);
      if (!c.ok) {
        emit(side == &a ? "baseline_incorrect" : "incorrect",
             std::string(side->label) + " output is wrong after the timing loop: " + c.why);
        return 1;
      }
    }
    report(a, b);
    return 0;
  }

 private:
  void make_inputs() {
    pristine_.resize(size_t(opt_.seeds) + 1);  // the seeds' sets, then the timed trials' fresh set
    for (const Input& in : spec_.inputs) {
      elem* dev = nullptr;
      SPD_CHECK(cudaMalloc(&dev, in.count * sizeof(elem)), "allocating inputs");
      pristine_[size_t(opt_.seeds)].push_back(dev);
    }
    refs_.resize(size_t(opt_.seeds));
    host_inputs_.resize(size_t(opt_.seeds));
    for (int s = 0; s < opt_.seeds; ++s) {
      std::vector<std::vector<float>>& host = host_inputs_[size_t(s)];
      host.resize(spec_.inputs.size());
      for (size_t k = 0; k < spec_.inputs.size(); ++k) {
        const Input& in = spec_.inputs[k];
        host[k].resize(in.count);
        fill_uniform(host[k].data(), in.count, (opt_.seed0 + uint64_t(s)) * 1000003ull + k, in.lo, in.hi);
        // Rounded to the element type; the reference sees the very values the kernel sees.
        std::vector<elem> narrow(in.count);
        for (size_t i = 0; i < in.count; ++i) {
          narrow[i] = to_elem(host[k][i]);
          host[k][i] = to_float(narrow[i]);
        }
        elem* dev = nullptr;
        SPD_CHECK(cudaMalloc(&dev, in.count * sizeof(elem)), "allocating inputs");
        SPD_CHECK(cudaMemcpy(dev, narrow.data(), in.count * sizeof(elem), cudaMemcpyHostToDevice), "copying inputs");
        pristine_[s].push_back(dev);
      }
    }
    // At least 1.5x L2, so a trial never starts with the previous trial's data cached.
    flush_words_ = std::max<size_t>(size_t(dev_.prop.l2CacheSize) * 3 / 2, size_t(64) << 20) / sizeof(unsigned int);
    SPD_CHECK(cudaMalloc(&flush_, flush_words_ * sizeof(unsigned int)), "allocating the L2 flush buffer");
    SPD_CHECK(cudaEventCreate(&start_), "creating events");
    SPD_CHECK(cudaEventCreate(&stop_), "creating events");
  }

  // A fresh input set for the next timed trial, in the slot after the seeds' sets: uniform in each input's range
  // and rounded to the element type like the seeds' sets, from seeds drawn from std::random_device (not
  // derived from --seed, which a solution could recover from the inputs it is given).
  void fresh_trial_inputs() {
    std::random_device draw;
    for (size_t k = 0; k < spec_.inputs.size(); ++k) {
      const Input& in = spec_.inputs[k];
      uint64_t seed = (uint64_t(draw()) << 32) ^ uint64_t(draw());
      trial_host_.resize(in.count);
      trial_narrow_.resize(in.count);
      fill_uniform(trial_host_.data(), in.count, seed, in.lo, in.hi);
      for (size_t i = 0; i < in.count; ++i) trial_narrow_[i] = to_elem(trial_host_[i]);
      SPD_CHECK(cudaMemcpy(pristine_[size_t(opt_.seeds)][k], trial_narrow_.data(), in.count * sizeof(elem),
                           cudaMemcpyHostToDevice), "copying a timed trial's inputs");
    }
  }

  // Why the candidate's output of a fresh set is not the baseline's within twice the tolerance ("" when it is).
  std::string disagreement(const std::vector<float>& got, const std::vector<float>& base) const {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      double g = got[i], w = base[i];
      // each side within atol + rtol*|ref| of the reference: within twice that of each other, |ref| at most the
      // larger of the two (plus a tolerance: the 1% slack)
      double bound = 2.02 * (spec_.atol + spec_.rtol * std::max(std::fabs(w), std::fabs(g)));
      if (!std::isfinite(g) || std::fabs(g - w) > bound) {
        if (bad++ == 0) first = i;
      }
    }
    if (bad == 0) return "";
    return std::to_string(bad) + " of " + std::to_string(got.size()) + " outputs differ from the baseline's on the "
           "same inputs by more than twice the tolerance (first at index " + std::to_string(first) + ": got " +
           std::to_string(got[first]) + ", baseline " + std::to_string(base[first]) + ")";
  }

  // The host reference on the rounded inputs of seed `s` (run after both sides have produced that seed's output).
  void compute_reference(int s) {
    std::vector<const float*> ptrs;
    for (const std::vector<float>& in : host_inputs_[size_t(s)]) ptrs.push_back(in.data());
    refs_[size_t(s)].assign(spec_.output_count, 0.0f);
    spec_.reference(ptrs.data(), refs_[size_t(s)].data());
    host_inputs_[size_t(s)].clear();  // no longer needed
    host_inputs_[size_t(s)].shrink_to_fit();
  }

  void alloc(Side& side) {
    for (const Input& in : spec_.inputs) {
      elem* dev = nullptr;
      SPD_CHECK(cudaMalloc(&dev, in.count * sizeof(elem)), "allocating inputs");
      side.live.push_back(dev);
    }
    SPD_CHECK(cudaMalloc(&side.out, spec_.output_count * sizeof(elem)), "allocating the output");
    outs_.push_back(side.out);
  }

  // Fresh inputs, NaN-filled output (a kernel that skips writing cannot pass), L2 flushed, all idle.
  // All-ones bytes are a NaN in fp32, fp16 and bf16 alike (exponent all ones, fraction not zero).
  void prepare(Side& side, int set) {
    for (size_t k = 0; k < spec_.inputs.size(); ++k)
      SPD_CHECK(cudaMemcpy(side.live[k], pristine_[set][k], spec_.inputs[k].count * sizeof(elem), cudaMemcpyDeviceToDevice),
                "restoring inputs");
    for (elem* out : outs_)  // every side's output: a call cannot pick up the other side's answer
      SPD_CHECK(cudaMemset(out, 0xFF, spec_.output_count * sizeof(elem)), "clearing the outputs");
    flush_l2(flush_, flush_words_, ++flush_value_, dev_.prop.multiProcessorCount);
    SPD_CHECK(cudaGetLastError(), "L2 flush");
    // Persisting-L2 lines would survive the flush: drop them (the static guards also forbid setting them).
    cudaCtxResetPersistingL2Cache();
    cudaGetLastError();  // not supported on every device; harmless then
    SPD_CHECK(cudaDeviceSynchronize(), "before the timed call");
  }

  void call(Side& side, int set, double* ms) {
    prepare(side, set);
    auto t0 = std::chrono::steady_clock::now();
    SPD_CHECK(cudaEventRecord(start_, 0), "recording the start event");
    side.launch(side.live.data(), side.out);
    SPD_CHECK(cudaEventRecord(stop_, 0), "recording the stop event");
    cudaError_t launch_err = cudaGetLastError();
    cudaError_t sync_err = cudaDeviceSynchronize();  // waits for work on every stream the call started
    auto t1 = std::chrono::steady_clock::now();
    if (launch_err != cudaSuccess || sync_err != cudaSuccess) {
      cudaError_t e = launch_err != cudaSuccess ? launch_err : sync_err;
      emit("runtime_error", std::string(side.label) + " failed: " + cudaGetErrorString(e));
      std::exit(4);
    }
    side.last_set = set;
    if (ms) {
      float event_ms = 0;
      SPD_CHECK(cudaEventElapsedTime(&event_ms, start_, stop_), "reading events");
      *ms = event_ms;
      side.wall_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  }

  void timed(Side& side, int set) {
    double ms = 0;
    call(side, set, &ms);
    side.ms.push_back(ms);
  }

  std::vector<float> fetch(Side& side) {
    std::vector<elem> raw(spec_.output_count);
    SPD_CHECK(cudaMemcpy(raw.data(), side.out, raw.size() * sizeof(elem), cudaMemcpyDeviceToHost), "reading the output");
    std::vector<float> got(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) got[i] = to_float(raw[i]);
    return got;
  }

  Check check(Side& side, int set) {
    std::vector<float> got = fetch(side);
    return compare(got.data(), refs_[set].data(), got.size(), spec_.rtol, spec_.atol);
  }

  void report(const Side& a, const Side& b) {
    Summary sa = summarize(a.ms, opt_.confidence), sb = summarize(b.ms, opt_.confidence);
    Summary wa = summarize(a.wall_ms, opt_.confidence), wb = summarize(b.wall_ms, opt_.confidence);
    std::vector<double> ratios;  // paired: trial i of the baseline against trial i of the candidate
    for (size_t i = 0; i < a.ms.size() && i < b.ms.size(); ++i)
      if (b.ms[i] > 0) ratios.push_back(a.ms[i] / b.ms[i]);
    Summary sr = summarize(ratios, opt_.confidence);
    // Work the events did not see (another stream, a host thread) shows up as host time far beyond them.
    double hidden_ms = wb.median - sb.median;
    if (hidden_ms > 0.05 + 0.5 * sb.median && hidden_ms > 2.0 * std::max(0.0, wa.median - sa.median) + 0.05) {
      emit("rejected", "the candidate keeps the device busy " + json_number(hidden_ms) +
                           " ms beyond its timed stream: work outside the default stream is not allowed");
      return;
    }
    std::string extra;
    extra += "\"problem\":\"" + json_escape(spec_.name) + "\",\"shapes\":\"" + json_escape(spec_.shapes) + "\"";
    extra += ",\"element\":\"" + std::string(element_name()) + "\",\"element_bytes\":" + std::to_string(sizeof(elem));
    extra += ",\"device\":" + dev_.json();
    extra += ",\"seeds\":" + std::to_string(opt_.seeds) + ",\"seed0\":" + std::to_string(opt_.seed0);
    extra += ",\"warmup\":" + std::to_string(opt_.warmup) + ",\"trials\":" + std::to_string(opt_.trials);
    extra += ",\"flush_bytes\":" + std::to_string(flush_words_ * sizeof(unsigned int));
    extra += ",\"rtol\":" + json_number(spec_.rtol) + ",\"atol\":" + json_number(spec_.atol);
    extra += ",\"baseline_ms\":" + json_summary(sa) + ",\"candidate_ms\":" + json_summary(sb);
    extra += ",\"baseline_wall_ms\":" + json_summary(wa) + ",\"candidate_wall_ms\":" + json_summary(wb);
    extra += ",\"speedup\":" + json_summary(sr);
    double sec = sb.median / 1e3;
    extra += ",\"flops\":" + json_number(spec_.flops) + ",\"bytes\":" + json_number(spec_.bytes);
    extra += ",\"achieved_gflops\":" + json_number(spec_.flops > 0 && sec > 0 ? spec_.flops / sec / 1e9 : NAN);
    extra += ",\"achieved_gbps\":" + json_number(spec_.bytes > 0 && sec > 0 ? spec_.bytes / sec / 1e9 : NAN);
    emit("ok", "correct on " + std::to_string(opt_.seeds) + " seeds; median " + json_number(sb.median) + " ms vs baseline " +
                   json_number(sa.median) + " ms",
         extra);
  }

  const Spec& spec_;
  Options opt_;
  const Device& dev_;
  std::vector<std::vector<elem*>> pristine_;  // [seed][input] device copies never handed to a kernel; last: the trial's
  std::vector<float> trial_host_;              // scratch for fresh_trial_inputs
  std::vector<elem> trial_narrow_;
  std::vector<std::vector<float>> refs_;       // [seed] host reference outputs
  std::vector<elem*> outs_;                     // every side's device output (poisoned before every call)
  std::vector<std::vector<std::vector<float>>> host_inputs_;  // [seed][input] rounded host inputs, until the reference ran
  unsigned int* flush_ = nullptr;
  size_t flush_words_ = 0;
  unsigned int flush_value_ = 0;
  cudaEvent_t start_{}, stop_{};
};

inline int run_main(const Spec& spec, LaunchFn baseline, LaunchFn candidate, int argc, char** argv) {
  Options opt = parse_options(argc, argv);
  Device dev;
  if (!open_device(dev)) return 3;
  Bench bench(spec, opt, dev);
  return bench.run(baseline, candidate);
}

#endif  // SPEEDPATCH_SOLUTION_UNIT

}  // namespace spd

#ifndef SPEEDPATCH_SPLIT
// Standalone build of a problem file: its own solution against itself (a self-check of the file).
static spd::Spec problem();
void launch(const spd::elem* const* inputs, spd::elem* output);
int main(int argc, char** argv) { return spd::run_main(problem(), launch, launch, argc, argv); }
#endif
