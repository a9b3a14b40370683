"""The server's JSON is what the extension's protocol.ts says it is: every field the server sends is declared
there (with the right nesting), and every field protocol.ts requires is sent. Checked on the real server's
answers to speedpatch/runs, speedpatch/runReport, speedpatch/candidate and speedpatch/targets, and on its
runUpdate summaries."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from lsp_editor import Editor, toy_file

pytestmark = pytest.mark.asyncio(loop_scope="module")

PROTOCOL_TS = Path(__file__).resolve().parents[2] / "client-vscode" / "src" / "protocol.ts"


def _interfaces() -> dict[str, dict[str, tuple[bool, str]]]:
    """interface name -> field -> (optional, its type as written)."""
    text = PROTOCOL_TS.read_text()
    found: dict[str, dict[str, tuple[bool, str]]] = {}
    for name, body in re.findall(r"export interface (\w+) \{\n(.*?)\n\}", text, re.S):
        fields = {}
        for line in body.splitlines():
            match = re.match(r"\s+(\w+)(\??): ([^;]+);", line)
            if match:
                fields[match[1]] = (match[2] == "?", match[3].strip())
        found[name] = fields
    return found


INTERFACES = _interfaces()


def _problems(value: Any, interface: str, where: str) -> list[str]:
    """What in `value` disagrees with protocol.ts's `interface` (nested interfaces followed)."""
    declared = INTERFACES[interface]
    problems = [f"{where}.{k} is sent but not in protocol.ts's {interface}" for k in value if k not in declared]
    for key, (optional, ts_type) in declared.items():
        if key not in value:
            if not optional:
                problems.append(f"{where}.{key} is required by protocol.ts's {interface} but not sent")
            continue
        element = re.fullmatch(r"(\w+)(\[\])?", ts_type)
        if element and element[1] in INTERFACES and value[key] is not None:
            items = value[key] if element[2] else [value[key]]
            for i, item in enumerate(items):
                problems += _problems(item, element[1], f"{where}.{key}[{i}]" if element[2] else f"{where}.{key}")
    return problems


async def test_the_servers_json_matches_protocol_ts(shared_editor: Editor):
    editor = shared_editor
    uri = editor.open(toy_file(editor.root, "shapes.toy"))
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    await editor.run_end(started["runId"])
    run = {"runId": started["runId"]}
    assert {"RunSummary", "RunReport", "CandidateResponse", "Failures"} <= set(INTERFACES)

    updates = [u for u in editor.run_updates if u["runId"] == started["runId"]]
    summaries = [s for s in await editor.request("speedpatch/runs", {}) if s["runId"] == started["runId"]]
    report = await editor.request("speedpatch/runReport", run)
    candidate = await editor.request("speedpatch/candidate", run)
    problems = [p for i, u in enumerate(updates) for p in _problems(u, "RunSummary", f"runUpdate[{i}]")]
    problems += _problems(summaries[0], "RunSummary", "runs[0]")
    problems += _problems(report, "RunReport", "runReport")
    problems += _problems(candidate, "CandidateResponse", "candidate")
    assert not problems, "\n".join(problems)
    # the check looked inside: the report's candidates and failures, the candidate's lineage and verdict
    assert report["candidates"] and report["failures"]["byStatus"] and candidate["lineage"] and candidate["verdict"]


async def test_the_targets_answer_matches_protocol_ts(shared_editor: Editor):
    answer = await shared_editor.request("speedpatch/targets", {})
    problems = _problems(answer, "TargetsResponse", "targets")
    assert not problems, "\n".join(problems)
    assert answer["targets"] and all(t["backends"] for t in answer["targets"])  # the check looked inside
