"""Events the engine emits while a run progresses (the CLI draws them, the language server maps them
to LSP progress and notifications)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

RUN_STARTED = "run_started"
BASELINE = "baseline"
ITERATION_STARTED = "iteration_started"
CANDIDATE = "candidate"
ITERATION_FINISHED = "iteration_finished"
REVERIFYING = "reverifying"  # the winner is being re-checked on an independent backend
RUN_FINISHED = "run_finished"
WARNING = "warning"


@dataclass
class Event:
    kind: str
    run_id: str
    data: dict[str, Any] = field(default_factory=dict)


EventSink = Callable[[Event], None]
