"""Offline moves for Gemmini kernels (filled in below)."""

from __future__ import annotations

from speedpatch.model import Kernel
from speedpatch.targets.base import Move


def offline_moves(source: str, kernel: Kernel) -> list[Move]:
    return []
