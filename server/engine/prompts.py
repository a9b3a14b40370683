"""The two-phase prompts of the method (plan, then code) and the fix-on-failure prompt.

Menu dropout and the invent/different variants are drawn from a random generator the caller seeds per
prompt, so a run is reproducible and a resumed run asks exactly the same questions.

A prompt is a list of parts, each marked with how readily it may be cut. Before a prompt is sent it is fit
to the model's context window (`fit`): hardware feedback and quoted replies go first, then the in-context
examples, the API listing and the target notes, the program output of a fix prompt last; the code, the
plan, the request and the rules are never cut. When even those do not fit, `PromptTooLong` names the
sizes and the sample fails. Token counts are an estimate (`estimate_tokens`): UTF-8 bytes / 3, which
overcounts the 3.5-4 bytes per token that BPE tokenizers give typical English and C/Python code, so a
prompt that fits by the estimate fits in practice; a request the endpoint still refuses fails its sample
as before (LLMRequestError).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from speedpatch.errors import LLMRequestError
from speedpatch.menu import OTHER, Example, Menu

NORMAL, INVENT, DIFFERENT = "menu", "invent", "different"

# How readily a part is cut when a prompt is too long for the model: higher is cut first, KEEP never.
KEEP, OUTPUT, KNOWLEDGE, API, EXAMPLES, FEEDBACK = 0, 1, 2, 3, 4, 5
BYTES_PER_TOKEN = 3  # the estimate's divisor: see the module docstring
CUT_MIN = 300  # a part that would keep fewer characters than this is left out altogether


@dataclass(frozen=True)
class Part:
    text: str
    cut: int = KEEP
    name: str = ""  # what the part is, named in the note left where it was cut ("code" is the problem file)


@dataclass(frozen=True)
class Prompt:
    parts: tuple[Part, ...]

    def text(self) -> str:
        return "\n\n".join(p.text for p in self.parts if p.text)

    def __add__(self, more: tuple[Part, ...]) -> Prompt:
        return Prompt(self.parts + tuple(more))


@dataclass(frozen=True)
class Window:
    """What of a model's context a prompt may use: the context minus what is kept free for the reply."""

    model: str
    context: int  # tokens; 0 = unknown, prompts are sent whole
    reply: int  # tokens kept free for the reply

    @property
    def limit(self) -> int:
        return max(0, self.context - self.reply)


class PromptTooLong(LLMRequestError):
    """Even with every cuttable part left out, the prompt does not fit the model: that sample fails."""


def estimate_tokens(text: str) -> int:
    return -(-len(text.encode("utf-8")) // BYTES_PER_TOKEN)


def _shorten(part: Part, over: int) -> Part:
    """The part with about `over` characters fewer (its middle cut, so both ends stay), or a one-line note
    when too little of it would remain."""
    note = f"[... {{}} characters of the {part.name} cut to fit the model's context ...]"
    keep = len(part.text) - over - len(note) - 8
    if keep < CUT_MIN:
        return Part(f"[{part.name} left out to fit the model's context]", part.cut, part.name)
    head, tail = part.text[: keep // 2], part.text[len(part.text) - (keep - keep // 2):]
    cut = len(part.text) - len(head) - len(tail)
    return Part(f"{head}\n{note.format(cut)}\n{tail}", part.cut, part.name)


def fit(prompt: Prompt, window: Window) -> str:
    """The prompt's text within the window: cuttable parts shortened or left out, highest cut level first
    (within a level, last part first); PromptTooLong when what may not be cut is already too long."""
    text = prompt.text()
    if window.context <= 0 or estimate_tokens(text) <= window.limit:
        return text
    parts = list(prompt.parts)
    order = sorted((i for i, p in enumerate(parts) if p.cut != KEEP and p.text),
                   key=lambda i: (-parts[i].cut, -i))
    for i in order:
        over = (estimate_tokens(text) - window.limit) * BYTES_PER_TOKEN
        if over <= 0:
            break
        parts[i] = _shorten(parts[i], over)
        text = Prompt(tuple(parts)).text()
    needed = estimate_tokens(text)
    if needed <= window.limit:
        return text
    code = sum(estimate_tokens(p.text) for p in parts if p.name == "code")
    raise PromptTooLong(
        f"the prompt does not fit {window.model}'s context even with notes, listing, examples and feedback "
        f"cut: it needs ~{needed:,} tokens (the code alone ~{code:,}), and {window.limit:,} are available "
        f"({window.context:,}-token context minus {window.reply:,} kept for the reply; tokens estimated as "
        f"UTF-8 bytes / {BYTES_PER_TOKEN}). If the model's context is larger, set it in speedpatch.toml: "
        f"[llm.context_by_model] \"{window.model}\" = TOKENS"
    )


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


def _code_section(language: str, source: str, kernel: str) -> Part:
    return Part(
        f"The file below is a complete problem: the kernel `{kernel}` and the trusted harness that checks "
        f"and times it. Only `{kernel}` may change.\n\n```{language}\n{source.rstrip()}\n```",
        KEEP, "code",
    )


def _knowledge(menu: Menu) -> list[Part]:
    return [Part(menu.knowledge.strip(), KNOWLEDGE, "target notes")] if menu.knowledge.strip() else []


def _api(menu: Menu) -> list[Part]:
    if not menu.api.strip():
        return []
    return [Part("Instructions and APIs the kernel may use (one line each):\n" + menu.api.strip(), API,
                 "API listing")]


def _example(example: Example, language: str) -> str:
    return (f"Example: {example.title.strip()}\nBefore:\n```{language}\n{example.before.strip()}\n```\n"
            f"After:\n```{language}\n{example.after.strip()}\n```")


def _examples(menu: Menu, language: str) -> list[Part]:
    if not menu.examples:
        return []
    shown = "\n\n".join(_example(e, language) for e in menu.examples)
    return [Part("Examples of optimizations applied to other kernels of this target (for illustration only: "
                 "they are not the code to optimize):\n\n" + shown, EXAMPLES, "examples")]


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
) -> Prompt:
    parts = _knowledge(menu) + _api(menu)
    parts.append(_code_section(language, source, kernel))
    parts.append(Part(_metric(value, unit)))
    if feedback.strip():
        parts.append(Part("Hardware feedback from its last run:\n" + feedback.strip(), FEEDBACK, "hardware feedback"))
    menu_text = numbered(choice.items)
    # Each variant says for itself how many optimizations to plan and where they come from: the rules below
    # are shared by all of them, so they must not say "from the list" (the guided variant shows no list).
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
    parts.append(Part(ask))
    rules = list(menu.plan_rules) + [
        "Keep the scope to the selected optimization.",
        "Describe the plan in words and short snippets; do not write the whole new code yet.",
    ]
    parts.append(Part("Rules:\n" + numbered(rules)))
    parts.append(Part(f"This is phase {phase} of {phases} of the optimization process."))
    return Prompt(tuple(parts))


def edits_rule(kernel: str) -> str:
    """The reply format of edits mode: replacements in the kernel's region instead of its whole code."""
    return (
        f"Reply with your changes as edits to the code of `{kernel}` (its region of the file above, helpers "
        'included), not as whole code: a JSON list of {"old": "exact current text", "new": "its replacement"} '
        'objects in ONE fenced ```json block, applied in order; each "old" must occur exactly once in that '
        "region. Where a rule above asks for the complete code in a code block, these edits take its place."
    )


def code_rules(menu: Menu, language: str, kernel: str, edits: bool = False) -> list[str]:
    """The code and fix prompts' rules; `edits`: the reply is a list of edits (edits_rule), not whole code."""
    return list(menu.code_rules) + [
        "The new code must be semantically equivalent to the original: same results for every input.",
        f"Only the kernel `{kernel}` may change. The problem's constants, macros, includes and harness "
        "(inputs, reference, timer, main) are fixed: they are always taken from the original file, and code "
        "that redefines them is rejected.",
        edits_rule(kernel) if edits else
        f"Reply with the complete new definition of `{kernel}` in ONE fenced ```{language} code block.",
    ]


def code_prompt(menu: Menu, language: str, source: str, kernel: str, plan: str, edits: bool = False) -> Prompt:
    parts = _knowledge(menu) + _examples(menu, language)
    parts.append(_code_section(language, source, kernel))
    parts.append(Part("Optimize it following this plan:\n" + plan.strip()))
    parts.append(Part("Rules:\n" + numbered(code_rules(menu, language, kernel, edits))))
    return Prompt(tuple(parts))


def fix_prompt(menu: Menu, language: str, source: str, kernel: str, plan: str, status: str, output: str,
               edits: bool = False) -> Prompt:
    parts = _knowledge(menu)
    parts.append(Part(
        f"This version of the file was written to apply the plan below, but it failed ({status}):\n\n"
        f"```{language}\n{source.rstrip()}\n```\n\nPlan:\n{plan.strip()}",
        KEEP, "code",
    ))
    parts.append(Part("Compiler / program output (lines cut to 400 characters):\n```\n" + output.strip() + "\n```",
                      OUTPUT, "program output"))
    parts.append(Part("Fix the error while keeping the optimization."))
    parts.append(Part("Rules:\n" + numbered(code_rules(menu, language, kernel, edits))))
    return Prompt(tuple(parts))


REPAIR_MARK = "Your previous reply could not be used"
REPLY_SHOWN = 3000  # characters of the unusable reply quoted back to the model


def repair_prompt(prompt: Prompt, reply: str, error: str, kernel: str, language: str, edits: bool = False) -> Prompt:
    """The same request once more, with the unusable reply and what was wrong with it (in edits mode a
    whole rewrite is accepted as well)."""
    shown = (reply or "").strip()
    if len(shown) > REPLY_SHOWN:
        shown = shown[:REPLY_SHOWN] + f"\n[... {len(shown) - REPLY_SHOWN} characters cut ...]"
    return prompt + (
        Part(f"{REPAIR_MARK}: {error}."),
        Part(f"Your previous reply was:\n~~~~\n{shown or '(empty)'}\n~~~~", FEEDBACK, "previous reply"),
        Part("Reply again with the edits in ONE fenced ```json block, or with the complete definition of "
             f"`{kernel}` in ONE fenced ```{language} code block." if edits else
             f"Reply again with the complete definition of `{kernel}` in ONE fenced ```{language} code block."),
    )
