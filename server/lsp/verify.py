"""Accept-on-save re-verification results, kept in .speedpatch/ so they survive a restart.

The file holds measurements only (no settings, no secrets). Writes are atomic (write + rename).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from speedpatch.model import Evaluation
from speedpatch.states import EvalStatus, VerificationState
from speedpatch.verdict import source_of

from .formatting import speedup_of, value_text

log = logging.getLogger(__name__)


@dataclass
class Verification:
    run_id: str
    kernel: str
    kernel_hash: str  # hash of the kernel text that was verified
    file_hash: str  # hash of the whole saved file (harness changes re-trigger verification)
    state: str = VerificationState.VERIFYING  # a plain str when loaded from the JSON file
    value: float | None = None
    unit: str = ""
    baseline_value: float | None = None
    speedup: float | None = None
    backend: str = ""
    message: str = ""
    source: str = ""  # where the figure comes from: "hardware", "model", "emulator" (speedpatch.verdict)


def judge(v: Verification, evaluation: Evaluation) -> Verification:
    """Does the saved rewrite still hold? Correct, and (when the backend measures) faster than the run's
    baseline on the same backend."""
    v.value, v.unit = evaluation.value, evaluation.unit or v.unit
    v.source = source_of(evaluation)
    if evaluation.status == EvalStatus.NOT_MEASURED:
        v.state = VerificationState.HOLDS
        v.message = "correct on re-verification (this backend does not measure time)"
        return v
    if evaluation.status != EvalStatus.OK:
        v.state = VerificationState.FAILED
        v.message = f"re-verification failed ({evaluation.status}): {evaluation.message}".strip()
        return v
    v.speedup = speedup_of(v.baseline_value, v.value)
    if v.speedup is None or v.speedup <= 1.0:
        v.state = VerificationState.FAILED
        v.message = (
            f"no longer faster: re-measured {value_text(v.value, v.unit)} vs baseline "
            f"{value_text(v.baseline_value, v.unit)} ({v.backend})"
        )
        return v
    v.state = VerificationState.HOLDS
    v.message = f"re-verified on save: {value_text(v.value, v.unit)}, {v.speedup:.2f}x faster ({v.backend})"
    return v


class Verifications:
    def __init__(self, path: Path):
        self._path = path
        self._lock = threading.Lock()
        self._items: dict[str, Verification] = self._load()

    def _load(self) -> dict[str, Verification]:
        try:
            raw = json.loads(self._path.read_text(encoding="utf-8"))
            names = {f.name for f in fields(Verification)}
            items = [Verification(**{k: v for k, v in d.items() if k in names}) for d in raw]
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError) as exc:
            log.warning("ignoring unreadable %s: %s", self._path, exc)
            return {}
        # a verification interrupted by a restart never finished: forget it, the next save redoes it
        return {v.run_id: v for v in items if v.state != VerificationState.VERIFYING}

    def get(self, run_id: str) -> Verification | None:
        with self._lock:
            return self._items.get(run_id)

    def put(self, v: Verification) -> None:
        with self._lock:
            self._items[v.run_id] = v
            data = [asdict(x) for x in self._items.values() if x.state != VerificationState.VERIFYING]
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
            os.replace(tmp, self._path)
        except OSError as exc:
            log.warning("cannot save verifications: %s", exc)
