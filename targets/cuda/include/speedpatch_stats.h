// speedpatch harness kit: host-only statistics and checks (plain C++17, no CUDA), shared by the timing
// header and tested on its own with g++. Everything here is trusted harness code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace spd {

// Deterministic input generation: splitmix64, so a seed names the same inputs on every machine.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline void fill_uniform(float* out, size_t n, uint64_t seed, float lo, float hi) {
  uint64_t state = seed * 0x2545F4914F6CDD1Dull + 1;
  for (size_t i = 0; i < n; ++i) {
    double u = double(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    out[i] = float(lo + (hi - lo) * u);
  }
}

// Median and a distribution-free confidence interval from order statistics: for a sorted sample of n,
// [x_(j), x_(n-j+1)] covers the true median with probability 1 - 2 * P(Binomial(n, 1/2) <= j - 1).
struct Summary {
  double median = NAN;
  double low = NAN;    // CI bounds
  double high = NAN;
  double min = NAN;
  double coverage = 0;  // achieved confidence of [low, high]
  size_t n = 0;
};

inline double binomial_half_cdf(size_t k, size_t n) {  // P(Binomial(n, 1/2) <= k)
  double total = 0;
  for (size_t i = 0; i <= k && i <= n; ++i) {
    double log_p = std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1) -
                   double(n) * std::log(2.0);
    total += std::exp(log_p);
  }
  return std::min(total, 1.0);
}

inline Summary summarize(std::vector<double> xs, double confidence = 0.95) {
  Summary s;
  s.n = xs.size();
  if (xs.empty()) return s;
  std::sort(xs.begin(), xs.end());
  size_t n = xs.size();
  s.min = xs.front();
  s.median = (n % 2) ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
  // Largest j (1-based) whose interval still reaches the requested confidence; j = 0 means too few samples.
  double alpha = 1.0 - confidence;
  size_t best = 0;
  for (size_t j = 1; j <= n / 2; ++j) {
    if (binomial_half_cdf(j - 1, n) <= alpha / 2) best = j; else break;
  }
  if (best == 0) {  // n too small for this confidence: the honest interval is the whole range
    s.low = xs.front();
    s.high = xs.back();
    s.coverage = 1.0 - 2.0 * std::pow(0.5, double(n));
  } else {
    s.low = xs[best - 1];
    s.high = xs[n - best];
    s.coverage = 1.0 - 2.0 * binomial_half_cdf(best - 1, n);
  }
  return s;
}

// Result of comparing an output with its reference.
struct Check {
  bool ok = true;
  size_t mismatches = 0;
  size_t first_bad = 0;     // index of the first mismatch
  double max_abs_err = 0;
  double got = 0, want = 0;  // values at first_bad
  std::string why;
};

// allclose: |got - want| <= atol + rtol * |want| everywhere, NaN/Inf in the output are mismatches.
inline Check compare(const float* got, const float* want, size_t n, double rtol, double atol) {
  Check c;
  for (size_t i = 0; i < n; ++i) {
    double g = got[i], w = want[i];
    double err = std::fabs(g - w);
    bool bad = !std::isfinite(g) || err > atol + rtol * std::fabs(w);
    if (std::isfinite(err)) c.max_abs_err = std::max(c.max_abs_err, err);
    if (bad) {
      if (c.mismatches == 0) { c.first_bad = i; c.got = g; c.want = w; }
      ++c.mismatches;
    }
  }
  if (c.mismatches) {
    c.ok = false;
    c.why = std::to_string(c.mismatches) + " of " + std::to_string(n) + " outputs differ from the reference (first at index " +
            std::to_string(c.first_bad) + ": got " + std::to_string(c.got) + ", want " + std::to_string(c.want) + ")";
  }
  return c;
}

// A reference that some single constant matches within tolerance (zeros, its mean, its midrange) cannot
// tell a right kernel from one that writes that constant: such a problem is rejected rather than trusted.
inline bool is_degenerate(const float* want, size_t n, double rtol, double atol) {
  if (n == 0) return true;
  double lo = want[0], hi = want[0], sum = 0;
  for (size_t i = 0; i < n; ++i) {
    lo = std::min(lo, double(want[i]));
    hi = std::max(hi, double(want[i]));
    sum += want[i];
  }
  for (double c : {0.0, sum / double(n), 0.5 * (lo + hi)}) {
    bool all_close = true;
    for (size_t i = 0; i < n && all_close; ++i) all_close = std::fabs(c - want[i]) <= atol + rtol * std::fabs(double(want[i]));
    if (all_close) return true;
  }
  return false;
}

// Minimal JSON helpers for the one result line the harness prints.
inline std::string json_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) out += ' '; else out += ch;
    }
  }
  return out;
}

inline std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

inline std::string json_summary(const Summary& s) {
  return "{\"median\":" + json_number(s.median) + ",\"low\":" + json_number(s.low) + ",\"high\":" +
         json_number(s.high) + ",\"min\":" + json_number(s.min) + ",\"coverage\":" + json_number(s.coverage) +
         ",\"n\":" + std::to_string(s.n) + "}";
}

}  // namespace spd
