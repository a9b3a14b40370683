"""Split plan and code work across an ensemble of models, as the method does: every plan slot of an
iteration and every code sample takes its turn round the models, so each model plans and writes code
whatever K and N are."""

from __future__ import annotations


def plan_turn(position: int) -> int:
    """Whose turn it is to plan the slot at `position` among the iteration's slots."""
    return position


def code_turn(position: int, sample: int, codes: int) -> int:
    """Whose turn it is to write code sample `sample` of the slot at `position` (K = `codes` per plan)."""
    return position * max(1, codes) + sample


def model_at(models: list[str], turn: int) -> str:
    """The model whose turn `turn` is, round the list."""
    return models[turn % len(models)]


plan_model = code_model = model_at  # the same rotation for both roles; the names say which list is meant


def ensemble_warnings(plan_models: list[str], code_models: list[str], plans: int, codes: int,
                      beam: int = 1) -> list[str]:
    """Models that would never get a call: the widest iteration has beam x plans slots, each with
    `codes` samples."""
    warnings = []
    slots = max(1, beam) * plans
    if slots < len(plan_models):
        idle = ", ".join(plan_models[slots:])
        warnings.append(
            f"plan slots per iteration (beam {beam} x plans {plans} = {slots}) < planning models "
            f"({len(plan_models)}): {idle} will never plan; raise --plans or --beam"
        )
    if slots * codes < len(code_models):
        idle = ", ".join(code_models[slots * codes:])
        warnings.append(
            f"code samples per iteration ({slots * codes}) < code models ({len(code_models)}): {idle} will "
            f"never write code; raise --codes, --plans or --beam"
        )
    return warnings
