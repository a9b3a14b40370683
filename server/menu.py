"""Optimization menus as data: menus/<target>.toml, overridable per workspace.

Keys: knowledge (text for the LLM about the target), optimizations (the menu), plan_rules, code_rules,
api (a compact listing of the instructions/APIs a kernel may use, one line each, for the plan prompt) and
examples (optional `[[examples]]` tables with `title`, `before` and `after`: short in-context examples of
one optimization, for the code prompt). The shipped listing is its own file, menus/<target>.api.txt, so it
reads as a plain list; a menu file's `api` key replaces it ("" drops it).
A plug-in target ships its own pair of files in the folder its `menu_dir` names.
A workspace override is `.speedpatch/menus/<target>.toml` or the file named in speedpatch.toml
[menus] <target> = "path"; its keys replace the shipped ones (and `extra_optimizations` appends).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from speedpatch.config import tomllib
from speedpatch.errors import ConfigError

OTHER = "Other methods not listed here."


@dataclass(frozen=True)
class Example:
    """One in-context example: a short kernel before and after one optimization."""

    title: str
    before: str
    after: str


@dataclass
class Menu:
    target: str
    knowledge: str = ""
    optimizations: list[str] = field(default_factory=list)
    plan_rules: list[str] = field(default_factory=list)
    code_rules: list[str] = field(default_factory=list)
    api: str = ""
    examples: list[Example] = field(default_factory=list)
    source: str = ""


def _read(path_or_text: str, origin: str) -> dict:
    try:
        data = tomllib.loads(path_or_text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{origin}: not valid TOML: {exc}") from exc
    for key in ("optimizations", "plan_rules", "code_rules", "extra_optimizations"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{origin}: {key} must be a list of strings")
    for key in ("knowledge", "api"):
        if not isinstance(data.get(key, ""), str):
            raise ConfigError(f"{origin}: {key} must be a string")
    examples = data.get("examples", [])
    if not isinstance(examples, list):
        raise ConfigError(f"{origin}: examples must be [[examples]] tables with title, before and after")
    for i, example in enumerate(examples, 1):
        if not isinstance(example, dict) or set(example) != {"title", "before", "after"} or not all(
            isinstance(v, str) and v.strip() for v in example.values()
        ):
            raise ConfigError(f"{origin}: examples[{i}] must have exactly title, before and after, each a non-empty string")
    return data


def shipped_menu_text(target: str, folder: Path | None = None) -> str | None:
    """menus/<target>.toml as speedpatch ships it, or as a plug-in target ships it in its own `folder`."""
    if folder is not None:
        path = Path(folder) / f"{target}.toml"
        return path.read_text(encoding="utf-8") if path.is_file() else None
    try:
        return resources.files("speedpatch.menus").joinpath(f"{target}.toml").read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return None


def shipped_api_text(target: str, folder: Path | None = None) -> str:
    """The shipped instruction/API listing of a target (menus/<target>.api.txt), "" when there is none."""
    if folder is not None:
        path = Path(folder) / f"{target}.api.txt"
        return path.read_text(encoding="utf-8") if path.is_file() else ""
    try:
        return resources.files("speedpatch.menus").joinpath(f"{target}.api.txt").read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return ""


def load_menu(target: str, workspace: str | Path | None = None, override: str | None = None,
              shipped: Path | None = None) -> Menu:
    """shipped: the folder a plug-in target ships its menu in (Target.menu_dir); None: speedpatch's menus/."""
    menu = Menu(target=target, api=shipped_api_text(target, shipped))
    text = shipped_menu_text(target, shipped)
    layers: list[tuple[str, str]] = []
    if text is not None:
        layers.append((text, str(Path(shipped) / f"{target}.toml") if shipped else f"menus/{target}.toml"))
    candidates = []
    if override:
        p = Path(override)
        candidates.append(p if p.is_absolute() or not workspace else Path(workspace) / p)
    elif workspace:
        candidates.append(Path(workspace) / ".speedpatch" / "menus" / f"{target}.toml")
    for path in candidates:
        if path.is_file():
            layers.append((path.read_text(encoding="utf-8"), str(path)))
        elif override:
            raise ConfigError(f"menus.{target}: menu file {path} does not exist")
    for body, origin in layers:
        data = _read(body, origin)
        menu.knowledge = data.get("knowledge", menu.knowledge)
        menu.optimizations = list(data.get("optimizations", menu.optimizations))
        menu.optimizations += data.get("extra_optimizations", [])
        menu.plan_rules = list(data.get("plan_rules", menu.plan_rules))
        menu.code_rules = list(data.get("code_rules", menu.code_rules))
        menu.api = data.get("api", menu.api)
        if "examples" in data:
            menu.examples = [Example(e["title"], e["before"], e["after"]) for e in data["examples"]]
        menu.source = origin
    menu.optimizations = [o for o in menu.optimizations if o.strip() != OTHER]
    return menu
