"""Code actions on the kernels under the cursor (and the quick fix on a ready-rewrite diagnostic)."""

from __future__ import annotations

import dataclasses
from typing import Any

from lsprotocol import types
from speedpatch.states import Freshness

from .arguments import CancelArgs, CandidateArgs, DocumentArgs, OptimizeArgs, RunArgs, to_wire
from .diagnostics import READY, SOURCE
from .formatting import speedup_text
from .gpu import CONFIGURE_GPU
from .lenses import APPLY, CANCEL, OPTIMIZE, RESUMABLE, RESUME, SHOW_DIFF, optimize_title
from .settings import QUICK_OVERRIDES
from .views import KernelView

KIND = types.CodeActionKind.RefactorRewrite
QUICK_ITERATIONS = QUICK_OVERRIDES["search"]["iterations"]


def _action(title: str, command: str, args: list[dict[str, Any]], kind: types.CodeActionKind = KIND, *,
            is_preferred: bool | None = None,
            diagnostics: list[types.Diagnostic] | None = None) -> types.CodeAction:
    return types.CodeAction(
        title=title, kind=kind, command=types.Command(title=title, command=command, arguments=args),
        is_preferred=is_preferred, diagnostics=diagnostics,
    )


def actions_for(view: KernelView, uri: str) -> list[types.CodeAction]:
    name = view.kernel.name
    target = OptimizeArgs(uri=uri, kernel=name)
    if not view.runnable:
        # shown greyed out with the reason, so the user learns why nothing is offered
        out = [
            types.CodeAction(
                title=optimize_title(view),
                kind=KIND,
                disabled=types.CodeActionDisabled(reason=view.reason),
            )
        ]
        if view.untimed:  # the way forward: a backend that can time it
            out.append(_action("Configure a GPU backend…", CONFIGURE_GPU, [to_wire(DocumentArgs(uri=uri))], kind=types.CodeActionKind.QuickFix))
        return out
    if view.job is not None:
        return [_action(f"Cancel optimization of {name}", CANCEL, [to_wire(CancelArgs(run_id=view.job.run_id))])]
    out = [
        _action(optimize_title(view), OPTIMIZE, [to_wire(target)]),
        _action(f"Optimize {name} (quick: {QUICK_ITERATIONS} iteration, fewer candidates)", OPTIMIZE,
                [to_wire(dataclasses.replace(target, quick=True))]),
    ]
    record = view.record
    if record is not None and record.status in RESUMABLE and view.freshness == Freshness.FRESH:
        # the stored run continues where it stopped: stored LLM replies and evaluations are reused
        out.append(_action(f"Resume optimization of {name} ({record.status})", RESUME, [to_wire(RunArgs(run_id=record.run_id))]))
    if record is not None and view.has_winner and view.freshness == Freshness.FRESH:
        run = [to_wire(RunArgs(run_id=record.run_id))]
        out.append(_action("Show diff", SHOW_DIFF, [to_wire(CandidateArgs(run_id=record.run_id))]))
        out.append(
            _action(f"Apply rewrite ({speedup_text(record.speedup)} faster)", APPLY, run, is_preferred=True)
        )
    return out


def quick_fixes(diagnostics: list[types.Diagnostic]) -> list[types.CodeAction]:
    out = []
    for diag in diagnostics:
        data = diag.data if isinstance(diag.data, dict) else {}
        if diag.source == SOURCE and diag.code == READY and data.get("runId"):
            out.append(
                _action(
                    f"Apply rewrite ({speedup_text(data.get('speedup'))} faster)",
                    APPLY,
                    [to_wire(RunArgs(run_id=str(data["runId"])))],
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    is_preferred=True,
                )
            )
    return out
