"""The extension's `speedpatch.*` settings, declared once.

The server reads the settings object the client sends through this table (settings.py), and the extension's
package.json `contributes.configuration` and the settings table of its README are generated from it, with the
`onLanguage:` activation events from the targets' language ids (`python -m speedpatch.lsp.settings_schema`
rewrites all three; tests/lsp/test_settings_schema.py fails when one differs). One `backends.<target>`
setting per built-in target comes from the targets themselves: their backends are its choices and each
backend's description is shown next to it, so a new target or backend needs no edit here.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from speedpatch.targets.base import Target

PACKAGE_JSON = Path(__file__).resolve().parents[2] / "client-vscode" / "package.json"
TOML_FALLBACK = "speedpatch.toml's value"


@dataclass(frozen=True)
class Setting:
    key: str  # below "speedpatch.", dotted as VS Code groups it, e.g. "search.beam"
    type: str | tuple[str, ...]  # JSON schema type(s); ("integer", "null") = unset by default
    default: Any
    description: str
    toml: str = ""  # the speedpatch.toml key it overrides ("section.key"); "" = read by the client only
    minimum: float | None = None
    items: str = ""  # element type of an array
    scope: str = ""  # VS Code's configuration scope; "" = its default (window)
    editor: bool = True  # False: sent to the server but never a VS Code setting (the API key: secret storage)
    enum: tuple[str, ...] = ()
    enum_descriptions: tuple[str, ...] = ()

    def contribution(self) -> dict[str, Any]:
        """This setting as a package.json `contributes.configuration.properties` entry."""
        entry: dict[str, Any] = {"type": list(self.type) if isinstance(self.type, tuple) else self.type}
        if self.items:
            entry["items"] = {"type": self.items}
        if self.enum:
            entry["enum"] = list(self.enum)
            entry["enumDescriptions"] = list(self.enum_descriptions)
        entry["default"] = self.default
        if self.minimum is not None:
            entry["minimum"] = self.minimum
        entry["description"] = self.description
        if self.scope:
            entry["scope"] = self.scope
        return entry


def _count(key: str, toml: str, what: str, kind: str = "integer") -> Setting:
    return Setting(key, (kind, "null"), None, f"{what} Null: {TOML_FALLBACK}.", toml=toml, minimum=1)


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "pythonPath",
        "string",
        "",
        "Python interpreter that runs the speedpatch language server (`python -m speedpatch.lsp`). Empty: the "
        "extension's own environment made by \"Install the Python package\" when there is one, else the Python "
        "extension's active interpreter, else `python3`.",
        scope="machine-overridable",
    ),
    Setting(
        "llm.baseUrl",
        "string",
        "",
        "OpenAI-compatible endpoint (base URL) of the LLM that plans and writes rewrites. Empty: the value in "
        "speedpatch.toml. The API key is set with the command \"speedpatch: Set API key\" and is kept in VS "
        "Code's secret storage, never in settings.",
        toml="llm.base_url",
    ),
    Setting(
        "llm.models",
        "array",
        [],
        "Model names to use (several form an ensemble). Empty: the models in speedpatch.toml.",
        toml="llm.models",
        items="string",
    ),
    Setting("llm.apiKey", "string", "", "The LLM's API key (from secret storage).", toml="llm.api_key", editor=False),
    _count("budget.maxLlmCalls", "budget.max_llm_calls", "Most LLM calls one run may make."),
    _count(
        "budget.maxEvaluations",
        "budget.max_evaluations",
        "Most candidate evaluations (compile + run + measure) one run may make.",
    ),
    _count(
        "budget.maxSeconds",
        "budget.max_seconds",
        "Wall-clock limit of one run in seconds; the best so far is kept when it ends.",
        kind="number",
    ),
    _count(
        "search.iterations",
        "search.iterations",
        "Beam-search iterations (each plans, writes and measures a new generation).",
    ),
    _count("search.beam", "search.beam", "Candidates kept per iteration (beam width)."),
    _count("search.plans", "search.plans", "Optimization plans proposed per beam member and iteration."),
    _count("search.codes", "search.codes", "Code rewrites written per plan."),
    Setting(
        "offline",
        ("boolean", "null"),
        None,
        f"true: search with the offline proposer (deterministic menu moves, no LLM calls). Null: {TOML_FALLBACK}.",
        toml="offline",
    ),
)
BACKENDS_KEY = "backends"  # backends.<target name>: that target's backend, overriding speedpatch.toml [backends]


def backend_setting(target: Target) -> Setting:
    """`backends.<target>`: one of the target's backends, or "" for speedpatch.toml's choice."""
    backends = target.backends()
    return Setting(
        f"{BACKENDS_KEY}.{target.name}",
        "string",
        "",
        f"Backend that runs {target.title or target.name} kernels ({', '.join(b.name for b in backends)}). Empty: speedpatch.toml's "
        f"choice ({target.default_backend} when it names none).",
        toml=f"{BACKENDS_KEY}.{target.name}",
        enum=("", *(b.name for b in backends)),
        enum_descriptions=("speedpatch.toml's choice", *(b.description for b in backends)),
    )


def contributes_configuration(targets: Iterable[Target]) -> dict[str, Any]:
    """package.json's `contributes.configuration`: every editor setting, then one backend setting per target."""
    settings = [s for s in SETTINGS if s.editor]
    # the backend choices sit before the last setting, where package.json has always listed them
    ordered = [*settings[:-1], *(backend_setting(t) for t in targets), settings[-1]]
    return {"title": "speedpatch", "properties": {f"speedpatch.{s.key}": s.contribution() for s in ordered}}


def builtin_targets() -> list[Target]:
    """The targets shipped with speedpatch (plugins cannot be in a static package.json)."""
    from speedpatch import targets

    return [targets.get_target(name) for name in targets.BUILTIN]


def activation_events(current: list[str], targets: Iterable[Target]) -> list[str]:
    """One onLanguage event per language id of the targets (the extension serves the documents of those
    languages, client-vscode/src/targets.ts), then the other events as they were."""
    languages = sorted({language for target in targets for language in target.language_ids})
    return [f"onLanguage:{language}" for language in languages] + [
        event for event in current if not event.startswith("onLanguage:")
    ]


def render_package_json(text: str, targets: Iterable[Target]) -> str:
    """package.json's text with its `contributes.configuration` and onLanguage activation events generated
    from the schema and the targets, everything else as it was."""
    package = json.loads(text)
    targets = list(targets)
    package["activationEvents"] = activation_events(package.get("activationEvents", []), targets)
    package["contributes"]["configuration"] = contributes_configuration(targets)
    return json.dumps(package, indent=2, ensure_ascii=False) + "\n"


README = PACKAGE_JSON.with_name("README.md")
README_BEGIN = "<!-- settings: generated from server/lsp/settings_schema.py by python -m speedpatch.lsp.settings_schema -->"
README_END = "<!-- /settings -->"


def readme_table(targets: Iterable[Target]) -> str:
    """The extension README's settings table: every editor setting, its default and its description."""
    rows = ["| setting | default | meaning |", "| --- | --- | --- |"]
    for key, entry in contributes_configuration(targets)["properties"].items():
        default = "" if entry["default"] in ("", []) else json.dumps(entry["default"])
        meaning = entry["description"].replace("|", "\\|")
        rows.append(f"| `{key}` | {f'`{default}`' if default else 'empty'} | {meaning} |")
    return "\n".join(rows)


def render_readme(text: str, targets: Iterable[Target]) -> str:
    """The README with the text between its settings markers generated (unchanged when it has none)."""
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        return text
    return text[: start + len(README_BEGIN)] + "\n\n" + readme_table(targets) + "\n\n" + text[end:]


def main(argv: list[str] | None = None) -> int:
    """Rewrite client-vscode/package.json's settings and languages and the README's settings table
    (`--check`: only say whether they differ)."""
    args = sys.argv[1:] if argv is None else argv
    found = builtin_targets()
    stale = []
    for path, render in ((PACKAGE_JSON, render_package_json), (README, render_readme)):
        current = path.read_text()
        wanted = render(current, found)
        if current == wanted:
            print(f"{path}: up to date")
            continue
        stale.append(path)
        if "--check" not in args:
            path.write_text(wanted)
            print(f"{path}: rewritten")
    if stale and "--check" in args:
        names = ", ".join(str(p) for p in stale)
        print(f"{names}: out of date; run python -m speedpatch.lsp.settings_schema", file=sys.stderr)
        return 1
    return 0

if __name__ == "__main__":
    sys.exit(main())
