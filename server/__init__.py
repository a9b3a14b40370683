"""speedpatch: LLM-driven beam search that makes tensor-accelerator kernels faster."""

__version__ = "0.1.0"
