"""Split plan and code work across an ensemble of models, as the method does."""

from __future__ import annotations


def plan_model(models: list[str], slot: int) -> str:
    return models[slot % len(models)]


def code_model(models: list[str], sample: int) -> str:
    return models[sample % len(models)]


def ensemble_warnings(plan_models: list[str], code_models: list[str], plans: int, codes: int) -> list[str]:
    warnings = []
    if plans < len(plan_models):
        idle = ", ".join(plan_models[plans:])
        warnings.append(
            f"plans per parent ({plans}) < planning models ({len(plan_models)}): {idle} will never plan; "
            f"raise --plans to at least {len(plan_models)}"
        )
    if codes < len(code_models):
        idle = ", ".join(code_models[codes:])
        warnings.append(
            f"code samples per plan ({codes}) < code models ({len(code_models)}): {idle} will never write "
            f"code; raise --codes to at least {len(code_models)}"
        )
    return warnings
