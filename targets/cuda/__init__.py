"""The CUDA target: .cu problem files (trusted harness + solution), KernelBench-style PyTorch problems,
and the cuda-local / cuda-ssh / cuda-compile backends."""
