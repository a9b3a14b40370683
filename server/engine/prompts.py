"""The two-phase prompts of the method (plan, then code) and the fix-on-failure prompt.

Menu dropout and the invent/different variants are drawn from a random generator the caller seeds per
prompt, so a run is reproducible and a resumed run asks exactly the same questions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from speedpatch.menu import OTHER, Menu

NORMAL, INVENT, DIFFERENT = "menu", "invent", "different"


@dataclass
class PlanChoice:
    mode: str
    items: list[str]


def draw_menu(menu: Menu, rng: random.Random, keep: float, invent: float, different: float) -> PlanChoice:
    roll = rng.random()
    mode = INVENT if roll < invent else DIFFERENT if roll < invent + different else NORMAL
    items = [item for item in menu.optimizations if rng.random() < keep]
    return PlanChoice(mode, items + [OTHER])


def numbered(items: list[str]) -> str:
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1))


def _metric(value: float | None, unit: str) -> str:
    if value is None:
        return "It has not been measured."
    shown = f"{value:,.0f}" if value >= 100 else f"{value:.4g}"
    return f"Its latency was {shown} {unit}."


def _code_section(language: str, source: str, kernel: str) -> str:
    return (
        f"The file below is a complete problem: the kernel `{kernel}` and the trusted harness that checks "
        f"and times it. Only `{kernel}` may change.\n\n```{language}\n{source.rstrip()}\n```"
    )


def plan_prompt(
    menu: Menu,
    language: str,
    source: str,
    kernel: str,
    value: float | None,
    unit: str,
    feedback: str,
    choice: PlanChoice,
    phase: int,
    phases: int,
    guidance: str = "",
) -> str:
    parts = []
    if menu.knowledge.strip():
        parts.append(menu.knowledge.strip())
    parts.append(_code_section(language, source, kernel))
    parts.append(_metric(value, unit))
    if feedback.strip():
        parts.append("Hardware feedback from its last run:\n" + feedback.strip())
    menu_text = numbered(choice.items)
    if guidance:
        ask = (
            "A similar kernel was made faster by a sequence of optimizations. The step of that schedule to "
            f"reuse now was:\n{guidance.strip()}\n\n"
            "Plan how to apply exactly this ONE optimization to this code, adapted to it (sizes and details "
            "may differ)."
        )
    elif choice.mode == INVENT:
        ask = (
            "Here is a list of optimizations for inspiration:\n" + menu_text + "\n\n"
            "Invent a NEW optimization strategy inspired by these, and plan how to apply exactly ONE such "
            "optimization to this code. Be specific to this code."
        )
    elif choice.mode == DIFFERENT:
        ask = (
            "Here is a list of optimizations:\n" + menu_text + "\n\n"
            "Plan how to apply exactly ONE optimization that is DIFFERENT from all of those, specific to "
            "this code."
        )
    else:
        ask = (
            "Here is a menu of optimizations:\n" + menu_text + "\n\n"
            "Plan how to apply exactly ONE of these optimizations, specific to this code."
        )
    parts.append(ask)
    rules = list(menu.plan_rules) + [
        "Keep the scope to the selected optimization.",
        "Describe the plan in words and short snippets; do not write the whole new code yet.",
    ]
    parts.append("Rules:\n" + numbered(rules))
    parts.append(f"This is phase {phase} of {phases} of the optimization process.")
    return "\n\n".join(parts)


def code_rules(menu: Menu, language: str, kernel: str) -> list[str]:
    return list(menu.code_rules) + [
        "The new code must be semantically equivalent to the original: same results for every input.",
        f"Only the kernel `{kernel}` may change. The problem's constants, macros, includes and harness "
        "(inputs, reference, timer, main) are fixed: they are always taken from the original file, and code "
        "that redefines them is rejected.",
        f"Reply with the complete new definition of `{kernel}` in ONE fenced ```{language} code block.",
    ]


def code_prompt(menu: Menu, language: str, source: str, kernel: str, plan: str) -> str:
    parts = []
    if menu.knowledge.strip():
        parts.append(menu.knowledge.strip())
    parts.append(_code_section(language, source, kernel))
    parts.append("Optimize it following this plan:\n" + plan.strip())
    rules = code_rules(menu, language, kernel)
    parts.append("Rules:\n" + numbered(rules))
    return "\n\n".join(parts)


def fix_prompt(menu: Menu, language: str, source: str, kernel: str, plan: str, status: str, output: str) -> str:
    parts = []
    if menu.knowledge.strip():
        parts.append(menu.knowledge.strip())
    parts.append(
        f"This version of the file was written to apply the plan below, but it failed ({status}):\n\n"
        f"```{language}\n{source.rstrip()}\n```\n\nPlan:\n{plan.strip()}"
    )
    parts.append("Compiler / program output (lines cut to 400 characters):\n```\n" + output.strip() + "\n```")
    parts.append("Fix the error while keeping the optimization.")
    rules = code_rules(menu, language, kernel)
    parts.append("Rules:\n" + numbered(rules))
    return "\n\n".join(parts)


REPAIR_MARK = "Your previous reply could not be used"
REPLY_SHOWN = 3000  # characters of the unusable reply quoted back to the model


def repair_prompt(prompt: str, reply: str, error: str, kernel: str, language: str) -> str:
    """The same request once more, with the unusable reply and what was wrong with it."""
    shown = (reply or "").strip()
    if len(shown) > REPLY_SHOWN:
        shown = shown[:REPLY_SHOWN] + f"\n[... {len(shown) - REPLY_SHOWN} characters cut ...]"
    return (
        f"{prompt}\n\n{REPAIR_MARK}: {error}.\n\nYour previous reply was:\n~~~~\n{shown or '(empty)'}\n~~~~\n\n"
        f"Reply again with the complete definition of `{kernel}` in ONE fenced ```{language} code block."
    )
