"""speedpatch.toml: search parameters, LLM endpoint and models, budgets, backends.

Layers, later wins: built-in defaults < <workspace>/speedpatch.toml < overrides (CLI flags, editor settings).
Every value is checked; a bad one raises ConfigError naming the key and what is allowed.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from speedpatch.errors import ConfigError
from speedpatch.redact import redact, url_secrets
from speedpatch.targets.sandbox import Limits

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

CONFIG_FILE = "speedpatch.toml"


@dataclass
class SearchConfig:
    iterations: int = 8
    beam: int = 4
    plans: int = 4  # plans per parent (N)
    codes: int = 2  # code samples per plan (K)
    dropout_keep: float = 0.25  # probability of keeping each menu item in a plan prompt
    invent_fraction: float = 0.1  # share of plan prompts that ask for a new strategy
    different_fraction: float = 0.1  # share that ask for one different from the menu
    early_stop: int = 0  # stop after this many iterations without improvement (0 = never)
    fix_on_failure: bool = True
    hardware_feedback: bool = True  # the parent's hardware feedback (utilization, memory use) in plan prompts
    code_format: str = "rewrite"  # code replies: "rewrite" (the whole kernel) or "edits" (JSON old/new list)
    reverify: bool = True  # re-check the winner on the backend's independent functional backend, if it has one
    fix_within_samples: bool = True  # a repair is one of the plan's K samples (false: an extra one)
    preset: str = ""  # "paper": the paper-era Gemmini hyper-parameters (PRESETS), explicit keys still win
    executor: str = "local"  # where candidates are evaluated: "local" (this machine) or "ray" (the [ray] cluster)
    seed: int = 0
    workers: int = 0  # parallel evaluations (0 = CPU count)
    eval_timeout: float = 120.0  # seconds per candidate evaluation (build + run)
    regression_slack: float = 1.1  # a child may be this much slower than its parent early on
    slack_iterations: int = 2  # ... in the first this-many iterations
    # schedule reuse (engine/schedule.py): "auto" (a finished run on a related problem, if any), "off", or a
    # run id whose schedule to follow
    reuse: str = "auto"
    reuse_schedules: bool = True  # older spelling: false is reuse = "off"

    def reuse_mode(self) -> str:
        """The reuse setting in effect: "off" when either spelling turns it off."""
        return "off" if not self.reuse_schedules else self.reuse


@dataclass
class LLMConfig:
    base_url: str = ""
    models: list[str] = field(default_factory=list)
    plan_models: list[str] = field(default_factory=list)  # default: models
    code_models: list[str] = field(default_factory=list)  # default: models
    api_key_env: str = "SPEEDPATCH_API_KEY"  # falls back to OPENAI_API_KEY
    temperature: float = 1.0
    reasoning_effort: str = ""  # for reasoning models, instead of temperature
    max_concurrency: int = 8
    timeout: float = 180.0
    retries: int = 4
    max_tokens: int = 0  # 0 = let the endpoint decide
    # A model's context window in tokens: prompts longer than it (less room for the reply) are shortened
    # before they are sent, feedback and notes first, never the code (engine/prompts.py). 32768 is a
    # conservative default (most current models take 128k or more; small local models often 8k-32k); 0 =
    # never shorten. context_by_model sets it per model name.
    context_tokens: int = 32768
    context_by_model: dict[str, int] = field(default_factory=dict)
    api_key: str = field(default="", repr=False)  # runtime only, never stored

    def resolved_api_key(self) -> str:
        return self.api_key or os.environ.get(self.api_key_env, "") or os.environ.get("OPENAI_API_KEY", "")

    @property
    def configured(self) -> bool:
        return bool(self.base_url or self.models)


@dataclass
class BudgetConfig:
    max_llm_calls: int = 0  # 0 = unlimited
    max_evaluations: int = 0
    max_seconds: float = 0.0


@dataclass
class SandboxConfig:
    """[sandbox]: how candidates are isolated (targets/sandbox.py, docs/threat-model.md)."""

    required: bool = False  # true: refuse to run candidates where bubblewrap cannot isolate them
    memory_gib: float = 4.0  # address space per candidate process (GiB); 0 = unlimited
    processes: int = 1024  # processes of your user while a candidate runs (RLIMIT_NPROC); 0 = unlimited
    file_size_mib: int = 1024  # largest file a candidate process may write (MiB); 0 = unlimited
    cpu_seconds: int = 0  # CPU seconds per candidate process; 0 = the evaluation timeout

    def limits(self) -> Limits:
        """These settings as the rlimits run_process applies (0 = unlimited)."""
        return Limits(
            memory_bytes=int(self.memory_gib * (1 << 30)) or None,
            processes=self.processes or None,
            file_bytes=self.file_size_mib * (1 << 20) or None,
            cpu_seconds=self.cpu_seconds or None,
        )


@dataclass
class RayConfig:
    """[ray]: the cluster that evaluates candidates when search.executor = "ray" (docs/distributed.md)."""

    address: str = "auto"  # "auto" (a cluster started on this machine), "HOST:PORT" or "ray://HOST:PORT"
    namespace: str = "speedpatch"
    connect_timeout: float = 15.0  # seconds to wait for the head node before giving up
    # backend -> what one evaluation asks of a node, e.g. {"cuda-local" = {GPU = 1}}; defaults: a GPU for
    # cuda-local, neuron_cores for nki-neuron, firesim for gemmini-command, one CPU otherwise
    resources: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass
class Config:
    search: SearchConfig = field(default_factory=SearchConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    offline: bool = False
    backends: dict[str, str] = field(default_factory=dict)  # target -> backend name
    backend_settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # backend -> table
    menus: dict[str, str] = field(default_factory=dict)  # target -> menu file (workspace override)
    workspace: str = ""

    @property
    def use_llm(self) -> bool:
        return not self.offline and self.llm.configured

    def to_dict(self, secrets: bool = False) -> dict[str, Any]:
        data = asdict(self)
        if not secrets:  # what is stored or shown: no key, none in the base URL either
            data["llm"].pop("api_key", None)
            url = data["llm"]["base_url"]
            data["llm"]["base_url"] = redact(url, {value: "llm.base_url" for value in url_secrets(url)})
        return data


# the Autocomp paper's Gemmini settings: beam 6, 12 plans per parent, 4 code samples per plan, 10
# iterations, menu items kept with probability 0.3, a child kept only when strictly faster than its parent
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"beam": 6, "plans": 12, "codes": 4, "iterations": 10, "dropout_keep": 0.3,
              "regression_slack": 1.0, "slack_iterations": 0},
}

_SECTIONS = {"search": SearchConfig, "llm": LLMConfig, "budget": BudgetConfig, "sandbox": SandboxConfig,
             "ray": RayConfig}
EXECUTORS = ("local", "ray")
CODE_FORMATS = ("rewrite", "edits")


def _check(key: str, value: Any, default: Any) -> Any:
    if key.endswith("ray.resources"):
        return _resources(key, value)
    if key.endswith("llm.context_by_model"):
        return _context_by_model(key, value)
    if key.endswith("llm.api_key_env"):
        return _env_name(key, value)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true or false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        if value < 0:
            raise ConfigError(f"{key}: must be >= 0, got {value}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        if value < 0:
            raise ConfigError(f"{key}: must be >= 0, got {value}")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return value
    if isinstance(default, list):
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            example = f"[{value!r}]" if isinstance(value, str) else '["a", "b"]'
            raise ConfigError(f"{key}: expected a list of non-empty strings such as {example}, got {value!r}")
        return list(value)
    return value


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _env_name(key: str, value: Any) -> str:
    """llm.api_key_env names the variable that holds the key; a value that is no such name is most likely
    the key itself, pasted in the wrong place: refused without repeating it."""
    if not isinstance(value, str) or not _ENV_NAME.fullmatch(value):
        raise ConfigError(f"{key}: expected the name of the environment variable that holds the API key, such as "
                          "SPEEDPATCH_API_KEY (the value given is not one, and is not repeated here in case it is "
                          "the key: a key belongs in that variable, never in a settings file)")
    return value


def _resources(key: str, value: Any) -> dict[str, dict[str, float]]:
    """[ray.resources]: backend name -> {resource name: amount > 0}."""
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected a table of backend = {{RESOURCE = AMOUNT}}, got {value!r}")
    checked: dict[str, dict[str, float]] = {}
    for backend, wanted in value.items():
        if not isinstance(wanted, dict) or not wanted:
            raise ConfigError(f"{key}.{backend}: expected {{RESOURCE = AMOUNT, ...}} such as {{GPU = 1}}, got {wanted!r}")
        for name, amount in wanted.items():
            if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount <= 0:
                raise ConfigError(f"{key}.{backend}.{name}: expected a positive number, got {amount!r}")
        checked[backend] = {name: float(amount) for name, amount in wanted.items()}
    return checked


def _context_by_model(key: str, value: Any) -> dict[str, int]:
    """[llm.context_by_model]: model name -> its context window in tokens (> 0)."""
    if not isinstance(value, dict):
        raise ConfigError(f'{key}: expected a table of "model" = TOKENS, got {value!r}')
    for model, tokens in value.items():
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens <= 0:
            raise ConfigError(f"{key}.{model}: expected a positive number of tokens, got {tokens!r}")
    return dict(value)


_POSITIVE = {"search.iterations", "search.beam", "search.plans", "search.codes", "llm.max_concurrency"}
_FRACTIONS = {"search.dropout_keep", "search.invent_fraction", "search.different_fraction"}
# command-line flags for keys, so that an error in an option names the option the user typed
_FLAGS = {"search.iterations": "--iterations/-T", "search.beam": "--beam/-B", "search.plans": "--plans/-N",
          "search.codes": "--codes/-K", "search.seed": "--seed", "search.executor": "--executor",
          "search.reuse": "--reuse", "llm.models": "--model", "llm.base_url": "--base-url"}


def _apply(config: Config, data: dict[str, Any], origin: str) -> None:
    for name, value in data.items():
        if name in _SECTIONS:
            if not isinstance(value, dict):
                raise ConfigError(f"{origin}: [{name}] must be a table")
            section = getattr(config, name)
            known = {f.name for f in fields(section)}
            if name == "search" and "preset" in value:  # the preset first, so that keys beside it win
                preset = value["preset"]
                if preset not in PRESETS and preset != "":
                    raise ConfigError(f"search.preset: expected one of {', '.join(PRESETS)} (or \"\"), got {preset!r}")
                section.preset = preset
                for key, v in PRESETS.get(preset, {}).items():
                    setattr(section, key, v)
                value = {k: v for k, v in value.items() if k != "preset"}
            for key, v in value.items():
                if key not in known or (name == "llm" and key == "api_key" and origin != "overrides"):
                    allowed = ", ".join(sorted(known - {"api_key"}))
                    raise ConfigError(f"{origin}: unknown key {name}.{key} (known: {allowed})")
                full = f"{name}.{key}"
                label = f"{_FLAGS[full]} ({full})" if origin == "overrides" and full in _FLAGS else full
                if full in _POSITIVE and isinstance(v, int) and not isinstance(v, bool) and v < 1:
                    raise ConfigError(f"{label}: must be at least 1, got {v}")
                checked = _check(label, v, getattr(section, key))
                if full == "search.executor" and checked not in EXECUTORS:
                    raise ConfigError(f"{label}: expected one of {', '.join(EXECUTORS)}, got {checked!r}")
                if full == "search.code_format" and checked not in CODE_FORMATS:
                    raise ConfigError(f"{label}: expected one of {', '.join(CODE_FORMATS)}, got {checked!r}")
                if full == "search.reuse" and not checked.strip():
                    raise ConfigError(f"{label}: expected \"auto\", \"off\" or a run id, got {checked!r}")
                if full in _FRACTIONS and not 0 <= checked <= 1:
                    raise ConfigError(f"{full}: must be between 0 and 1, got {checked}")
                setattr(section, key, checked)
        elif name == "offline":
            config.offline = _check("offline", value, False)
        elif name in ("backends", "menus"):
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise ConfigError(f"{origin}: [{name}] must map target names to strings")
            getattr(config, name).update(value)
        elif name == "backend":
            if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
                raise ConfigError(f"{origin}: [backend.<name>] tables expected under 'backend'")
            for backend, table in value.items():
                config.backend_settings.setdefault(backend, {}).update(table)
        else:
            raise ConfigError(
                f"{origin}: unknown key {name!r} (known: search, llm, budget, sandbox, ray, offline, backends, backend, menus)"
            )


def load_config(workspace: Path | str | None = None, overrides: dict[str, Any] | None = None) -> Config:
    config = Config()
    if workspace:
        config.workspace = str(workspace)
        path = Path(workspace) / CONFIG_FILE
        if path.is_file():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
            try:
                _apply(config, data, str(path))
            except ConfigError as exc:  # name the file: it may be a parent folder's, found by walking up
                if str(exc).startswith(str(path)):
                    raise
                raise ConfigError(f"{path}: {exc}") from exc
    if overrides:
        _apply(config, overrides, "overrides")
    return config


def config_from_dict(data: dict[str, Any]) -> Config:
    """Rebuild a stored config (to_dict output) - used when resuming a run."""
    config = Config()
    data = dict(data)
    workspace = data.pop("workspace", "")
    data.pop("schedule", None)  # stored beside the config by api.optimize
    settings = data.pop("backend_settings", {})
    _apply(config, {k: v for k, v in data.items() if v not in ({}, None)}, "overrides")
    config.backend_settings = settings
    config.workspace = workspace
    return config
