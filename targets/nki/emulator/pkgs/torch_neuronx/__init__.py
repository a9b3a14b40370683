"""Emulated `torch_neuronx` (speedpatch): only `nki_jit`, the decorator older NKI documentation examples
import (`from torch_neuronx import nki_jit`, e.g. the SPMD matmul examples); it is nki.jit here."""

from speedpatch.targets.nki.emulator.jit import jit as nki_jit  # noqa: F401
