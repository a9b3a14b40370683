"""The Gemmini target: C kernels for UC Berkeley's Gemmini systolic-array accelerator, optimized on a
bit-exact instruction-level model with a cycle model (gemmini-native), on Spike (gemmini-spike) or on a
user-configured FireSim/Chipyard command (gemmini-command)."""
