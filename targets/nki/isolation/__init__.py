"""Kernel isolation for the emulated NKI backend: the candidate's kernel module runs in its own sandboxed
process that holds only handles (kernel_side.py); the trusted process serves its nki calls against the
emulator (server.py), owns inputs, reference, cost accounting and verdict (evaluate.py), and checks
provenance, required work and the hardware's bound (physics.py). Design: docs/threat-model.md, "NKI"."""
