"""Failed candidates surface in the editor: counted by why (from the stored evaluations) in the run report,
the live run summary and the message at the end of a search, with a button to the report."""

from __future__ import annotations

import pytest
from lsp_editor import Editor, toy_file
from speedpatch.lsp.failures import tally
from speedpatch.model import Candidate, Evaluation

ON_SHARED_SERVER = pytest.mark.asyncio(loop_scope="module")  # the module's one server (conftest.shared_editor)

# the toy harness with moves that are all worse or wrong: nothing faster, two failures of two kinds
NOTHING_FASTER = '''\
INPUTS = [([1, 2, 3, 4, 5, 6, 7, 8],), ([5] * 16,), (list(range(30)),)]


def reference(xs):
    return sum(xs)


def kernel_sum(xs):
    return sum(xs)


MOVES = {
    "Drop the last element (wrong on purpose).": "def kernel_sum(xs):\\n    return sum(xs[:-1])\\n",
    "Forget a parenthesis.": "def kernel_sum(xs):\\n    return sum(xs\\n",
}
'''


def _cand(cid: str, status: str | None, message: str = "", parent: str | None = "base") -> Candidate:
    cand = Candidate(id=cid, run_id="r", parent_id=parent, iteration=1, plan="p", source="", source_hash="", model="")
    cand.evaluation = Evaluation(status=status, message=message) if status else None
    return cand


def test_failures_are_counted_by_why_without_the_baseline_or_unevaluated_candidates():
    found = tally([
        _cand("base", "incorrect", parent=None),  # the user's own code is not a candidate
        _cand("a", "ok"),
        _cand("b", "not_measured"),  # correct, only not timed
        _cand("c", "incorrect", "output differs from the reference\nmismatch for ([1],)"),
        _cand("d", "rejected", "uses a cached result"),
        _cand("e", "incorrect", "second"),
        _cand("f", None),  # cancelled before it was evaluated
    ])
    assert (found.evaluated, found.failed) == (5, 3)
    assert found.text() == "3 of 5 candidates failed: 2 incorrect, 1 rejected"
    shape = found.to_dict()
    assert [(k["status"], k["count"]) for k in shape["byStatus"]] == [("incorrect", 2), ("rejected", 1)]
    assert shape["byStatus"][0]["example"] == "output differs from the reference"  # the first one's first line
    assert "trust boundary" in shape["byStatus"][1]["meaning"]


def test_a_run_without_failures_says_nothing_about_them():
    assert tally([_cand("a", "ok")]).text() == ""


async def _run(editor: Editor, uri: str) -> dict:
    started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    return await editor.run_end(started["runId"])


@ON_SHARED_SERVER
async def test_the_report_lists_failed_candidates_by_why_with_each_ones_reason(shared_editor):
    editor = shared_editor
    uri = editor.open(toy_file(editor.root, "failed_report.toy"))
    summary = await _run(editor, uri)
    report = await editor.request("speedpatch/runReport", {"runId": summary["runId"]})
    failures = report["failures"]
    wrong = [c for c in report["candidates"] if c["status"] == "incorrect"]
    assert wrong and all(c["message"] == "output differs from the reference" for c in wrong)
    evaluated = [c for c in report["candidates"] if c["parentId"] and c["status"] != "pending"]
    assert failures["evaluated"] == len(evaluated) and failures["failed"] == len(wrong)
    assert failures["text"] == f"{len(wrong)} of {len(evaluated)} candidates failed: {len(wrong)} incorrect"
    # the live summary at the end says the same
    assert summary["failures"]["text"] == failures["text"]


@ON_SHARED_SERVER
async def test_a_search_that_finds_nothing_faster_says_which_candidates_failed_and_opens_the_report(shared_editor):
    editor = shared_editor
    path = editor.root / "nothing_faster.toy"
    path.write_text(NOTHING_FASTER)
    uri = editor.open(path)
    editor.answer = "Show report"
    try:
        summary = await _run(editor, uri)

        def told() -> list:
            return [r for r in editor.message_requests if "nothing_faster.toy" in r.message]

        (request,) = await editor.until(told, what="the end-of-search message")
        assert request.message == (
            "speedpatch: no faster version of kernel_sum in nothing_faster.toy found; "
            "2 of 2 candidates failed: 1 did not compile, 1 incorrect — see the report"
        )
        assert [a.title for a in request.actions] == ["Show report"]
        await editor.until(
            lambda: any(r["runId"] == summary["runId"] for r in editor.open_reports), what="speedpatch/openReport"
        )
    finally:
        editor.answer = None
