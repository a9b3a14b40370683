"""AWS Trainium NKI target: kernel detection, a NumPy emulator with an engine-level cost model, and
backends for the real Neuron toolchain. See target.py for the harness format a kernel file uses."""
