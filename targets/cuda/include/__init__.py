"""The harness kit headers (speedpatch_timing.cuh, speedpatch_stats.h), shipped as package data."""
