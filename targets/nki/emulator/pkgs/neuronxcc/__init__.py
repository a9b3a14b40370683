"""Emulated legacy `neuronxcc` namespace (speedpatch); only `neuronxcc.nki` is provided."""
