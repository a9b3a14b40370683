// A host stand-in for the few CUDA runtime calls the speedpatch harness kit makes, so the kit's harness
// logic (checks, alternation, re-check, statistics, result line) runs and is tested on machines without
// a GPU, compiled by g++. "Device" memory is host memory, launches are synchronous host calls, events
// read a steady clock. Work handed to fake_defer() runs at the next cudaDeviceSynchronize(), like work
// on a stream the harness's events do not see. Test-only: never used by a real build.
#pragma once

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

enum cudaError_t { cudaSuccess = 0, cudaErrorNoDevice = 100, cudaErrorNotSupported = 801 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
enum cudaDeviceAttr { cudaDevAttrClockRate = 13, cudaDevAttrMemoryClockRate = 36 };

struct cudaDeviceProp {
  char name[256];
  int major, minor, multiProcessorCount, l2CacheSize, memoryBusWidth;
};

using cudaEvent_t = std::chrono::steady_clock::time_point*;
using cudaStream_t = void*;

inline std::vector<std::function<void()>>& fake_deferred() {
  static std::vector<std::function<void()>> work;
  return work;
}
inline void fake_defer(std::function<void()> fn) { fake_deferred().push_back(std::move(fn)); }

inline const char* cudaGetErrorString(cudaError_t e) { return e == cudaErrorNoDevice ? "no CUDA-capable device is detected" : "fake error"; }
inline cudaError_t cudaGetDeviceCount(int* n) {
  if (std::getenv("FAKE_CUDA_NO_DEVICE")) { *n = 0; return cudaErrorNoDevice; }
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  std::memset(p, 0, sizeof *p);
  std::strcpy(p->name, "Host stand-in");
  p->major = 9; p->minor = 0; p->multiProcessorCount = 2; p->l2CacheSize = 1 << 20; p->memoryBusWidth = 64;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr, int) { *v = 1000000; return cudaSuccess; }
inline cudaError_t cudaDriverGetVersion(int* v) { *v = 0; return cudaSuccess; }
inline cudaError_t cudaRuntimeGetVersion(int* v) { *v = 0; return cudaSuccess; }
template <class T> cudaError_t cudaMalloc(T** p, size_t bytes) { *p = static_cast<T*>(std::malloc(bytes)); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) { std::memcpy(d, s, n); return cudaSuccess; }
inline cudaError_t cudaMemset(void* d, int v, size_t n) { std::memset(d, v, n); return cudaSuccess; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaCtxResetPersistingL2Cache() { return cudaErrorNotSupported; }
inline cudaError_t cudaDeviceSynchronize() {
  for (auto& fn : fake_deferred()) fn();
  fake_deferred().clear();
  return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = new std::chrono::steady_clock::time_point(); return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) { *e = std::chrono::steady_clock::now(); return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(*b - *a).count();
  return cudaSuccess;
}
