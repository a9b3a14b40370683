"""The LLM proposer: the method's two-phase prompts sent to an ensemble of models.

Every reply is stored under a key that names its place in the search (iteration, parent, plan, sample),
so a resumed run replays stored replies instead of asking again. A reply becomes a candidate only through
the trust boundary: the kernel (and its helpers) is taken from it by name and spliced into the parent's
kernel region, never the reply's constants or harness. A reply with no usable kernel gets ONE repair
prompt that says what was wrong (a counted, stored call like any other). In edits mode ([search]
code_format = "edits") the code and fix prompts ask for a JSON list of old/new edits of the parent's
kernel region instead of its whole code (extract.edited_kernel); a whole rewrite is still accepted.

Every prompt is fit to the context of the model it goes to (prompts.fit: feedback, examples, listing and
notes are cut before the code, which is never cut); a prompt whose code alone is too long is not sent and
fails its sample with the sizes in the message. A plan request that fails that way (or is refused by the
endpoint) leaves a visible "(no plan: ...)" plan whose samples are rejected with the reason.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from speedpatch.config import Config
from speedpatch.engine import boundary, prompts
from speedpatch.engine.budget import Budget
from speedpatch.engine.extract import edited_kernel, kernel_code
from speedpatch.engine.proposer import BudgetExhausted, Cancelled, Code, Plan, Slot
from speedpatch.errors import LLMError, LLMRequestError
from speedpatch.llm.client import ChatClient
from speedpatch.llm.ensemble import code_turn, model_at, plan_turn
from speedpatch.menu import Menu
from speedpatch.model import Candidate, Problem
from speedpatch.redact import redact
from speedpatch.store import Store
from speedpatch.targets.base import Target, truncate_output

REPLY_TOKENS = 8192  # kept free for the reply when llm.max_tokens does not say


class LLMProposer:
    name = "llm"

    def __init__(
        self,
        config: Config,
        target: Target,
        problem: Problem,
        menu: Menu,
        store: Store,
        run_id: str,
        budget: Budget,
        cancelled: Callable[[], bool],
        client: ChatClient | None = None,
    ) -> None:
        self.config, self.target, self.problem, self.menu = config, target, problem, menu
        self.kernel = problem.kernel
        self.problem_names = target.problem_names(problem.source, problem.kernel)
        self.store, self.run_id, self.budget, self.cancelled = store, run_id, budget, cancelled
        self.client = client or ChatClient(config.llm)
        self.plan_models = config.llm.plan_models or config.llm.models
        self.code_models = config.llm.code_models or config.llm.models
        if not self.plan_models or not self.code_models:
            raise LLMError("no LLM models configured: set llm.models in speedpatch.toml or pass --model")
        self.language = target.prompt_language()
        self.edits = config.search.code_format == "edits"  # replies may be edits of the parent's kernel
        self._dead: dict[str, str] = {}  # model -> why its endpoint is unusable for the rest of the run
        self._dead_lock = threading.Lock()
        self._failed_plans: dict[str, str] = {}  # slot key -> why its plan request failed

    def window(self, model: str) -> prompts.Window:
        """How much of `model`'s context a prompt may use ([llm] context_tokens / context_by_model): what
        max_tokens asks for is kept free for the reply, else a quarter of the context (at most REPLY_TOKENS)."""
        llm = self.config.llm
        context = llm.context_by_model.get(model, llm.context_tokens)
        return prompts.Window(model, context, llm.max_tokens or min(REPLY_TOKENS, context // 4))

    def slots(self, parent: Candidate, plans: int) -> int:
        return plans

    def codes(self, codes: int) -> int:
        return codes

    # one stored-or-fresh call ---------------------------------------------------------------------
    def _live(self, models: list[str], turn: int) -> str:
        """The model whose turn it is, skipping models whose endpoint failed for good; none left means
        the whole ensemble is down, and only that interrupts the run."""
        with self._dead_lock:
            for i in range(len(models)):
                model = model_at(models, turn + i)
                if model not in self._dead:
                    return model
            raise LLMError("every model of the ensemble failed: " + "; ".join(self._dead.values()))

    def _ask_turn(self, key: str, phase: str, models: list[str], turn: int, prompt: prompts.Prompt) -> tuple[str, str]:
        """(reply, model): the call goes to the model whose turn it is; a model that fails for good (not
        one refused request) is set aside and its turn goes to the next live one."""
        while True:
            model = self._live(models, turn)
            try:
                return self._ask(key, phase, model, prompt), model
            except LLMRequestError:
                raise
            except LLMError as exc:
                with self._dead_lock:
                    self._dead[model] = str(exc)

    def _ask(self, key: str, phase: str, model: str, whole: prompts.Prompt) -> str:
        # prompts carry candidate output: no known secret leaves this machine (redacted before it is measured)
        redacted = prompts.Prompt(tuple(prompts.Part(redact(p.text), p.cut, p.name) for p in whole.parts))
        prompt = prompts.fit(redacted, self.window(model))  # PromptTooLong: this sample only
        stored = self.store.get_llm_call(self.run_id, key)
        if stored is not None and stored["prompt"] == prompt:
            return stored["reply"]
        if self.cancelled():
            raise Cancelled()
        if not self.budget.take_llm_call():
            raise BudgetExhausted(self.budget.exhausted)
        reply = self.client.chat(model, prompt)
        self.store.save_llm_call(
            self.run_id, key, phase, model, prompt, reply.text, reply.prompt_tokens, reply.completion_tokens,
            reply.seconds,
        )
        return reply.text

    def _candidate(self, parent_source: str, reply: str) -> tuple[str | None, str]:
        """The candidate file a reply makes from its parent, or None and why the reply is unusable."""
        parent = boundary.region_kernel(self.problem, parent_source)
        if parent is None:  # cannot happen: every parent passed the boundary before it was evaluated
            return None, f"the parent is not a rewrite of {self.problem.path}"
        edited = edited_kernel(reply, self.target, self.kernel, parent.text) if self.edits else None
        found = edited or kernel_code(reply, self.target, self.kernel, parent.text)
        if found.code is None:
            return None, found.error
        code = self.target.extract_kernel(found.code, self.kernel, self.problem_names)
        return self.target.splice(parent_source, parent, code), ""

    def _code_from(self, key: str, phase: str, turn: int, prompt: prompts.Prompt, parent_source: str) -> Code:
        """Ask, and when the reply is unusable ask once more with what was wrong. A request the endpoint
        refuses (too long for the model, filtered) fails this sample only, recorded with the reason."""
        model = self._live(self.code_models, turn)
        try:
            reply, model = self._ask_turn(key, phase, self.code_models, turn, prompt)
        except LLMRequestError as exc:
            return Code(None, model, _failed("the LLM request", exc))
        source, error = self._candidate(parent_source, reply)
        if source is not None:
            return Code(source, model)
        repair = prompts.repair_prompt(prompt, reply, error, self.kernel.name, self.language, self.edits)
        try:
            again = self._ask(f"{key}:repair", "repair", model, repair)
        except LLMRequestError as exc:
            return Code(None, model, f"{error}; {_failed('the repair request', exc)}")
        source, second = self._candidate(parent_source, again)
        if source is not None:
            return Code(source, model)
        return Code(None, model, f"{error}; after one repair prompt: {second}")

    # the three phases -----------------------------------------------------------------------------
    def plan(self, slot: Slot) -> Plan | None:
        s = self.config.search
        rng = slot.rng(s.seed)
        choice = prompts.draw_menu(self.menu, rng, s.dropout_keep, s.invent_fraction, s.different_fraction)
        parent = slot.parent
        ev = parent.evaluation
        feedback = self.target.feedback_text(ev) if ev and s.hardware_feedback else ""
        prompt = prompts.plan_prompt(
            self.menu, self.language, parent.source, self.kernel.name, ev.value if ev else None,
            ev.unit if ev else "", feedback, choice, slot.iteration, slot.iterations, slot.guidance,
        )
        turn = plan_turn(slot.position)
        model = self._live(self.plan_models, turn)
        try:
            reply, model = self._ask_turn(f"{slot.key}:plan", "plan", self.plan_models, turn, prompt)
        except LLMRequestError as exc:
            # this slot plans nothing and the others go on; its samples say why (search records them)
            why = _failed("the plan request", exc)
            self._failed_plans[slot.key] = why
            return Plan(text=f"(no plan: {why})", model=model)
        text = reply.strip()
        if not text:
            return None
        return Plan(text=text, model=model)

    def code(self, slot: Slot, plan: Plan, sample: int) -> Code:
        if slot.key in self._failed_plans:
            return Code(None, plan.model, self._failed_plans[slot.key])
        prompt = prompts.code_prompt(self.menu, self.language, slot.parent.source, self.kernel.name, plan.text,
                                     self.edits)
        turn = code_turn(slot.position, sample, self.config.search.codes)
        return self._code_from(f"{slot.key}:code{sample}", "code", turn, prompt, slot.parent.source)

    def fix(self, slot: Slot, plan: Plan, sample: int, child: Candidate) -> Code | None:
        ev = child.evaluation
        if ev is None or not child.source:
            return None
        output = truncate_output(f"{ev.message}\n{ev.log}", limit=8000)
        prompt = prompts.fix_prompt(
            self.menu, self.language, child.source, self.kernel.name, plan.text, ev.status, output, self.edits
        )
        turn = code_turn(slot.position, sample, self.config.search.codes)
        return self._code_from(f"{slot.key}:fix{sample}", "fix", turn, prompt, child.source)


def _failed(what: str, exc: LLMRequestError) -> str:
    if isinstance(exc, prompts.PromptTooLong):
        return f"{what} was not sent: {exc}"
    return f"{what} failed: {exc}"
