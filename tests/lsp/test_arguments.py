"""Command and request arguments are typed records (server/lsp/arguments.py): a wrong one is refused with
an error that names the field and the command; unknown fields are ignored; what the server itself sends in
its lenses and code actions parses back into the same record."""

from __future__ import annotations

import pytest
from lsp_editor import action_parts
from pygls.exceptions import JsonRpcInvalidParams
from speedpatch.lsp.arguments import (
    CancelArgs,
    CandidateArgs,
    DocumentArgs,
    NoArgs,
    OptimizeArgs,
    RunArgs,
    TargetsArgs,
    parse,
    to_wire,
)

ON_SERVER = pytest.mark.asyncio(loop_scope="module")  # one server for the module's async tests (shared_editor)
KERNEL_LINE = 7  # `def kernel_sum(xs):` in the toy example


@ON_SERVER
async def test_a_missing_field_is_named_with_the_command(shared_editor):
    uri = shared_editor.open(shared_editor.root / "sum.toy")
    with pytest.raises(JsonRpcInvalidParams, match=r"speedpatch\.optimize: missing field 'kernel' \(string\)"):
        await shared_editor.command("speedpatch.optimize", {"uri": uri})


@ON_SERVER
async def test_a_null_field_counts_as_missing(shared_editor):
    with pytest.raises(JsonRpcInvalidParams, match=r"speedpatch/runReport: missing field 'runId'"):
        await shared_editor.request("speedpatch/runReport", {"runId": None})


@ON_SERVER
async def test_a_mistyped_field_is_named_with_its_expected_and_actual_type(shared_editor):
    uri = shared_editor.open(shared_editor.root / "sum.toy")
    with pytest.raises(
        JsonRpcInvalidParams, match=r"speedpatch\.optimize: field 'quick' must be a boolean, got string 'yes'"
    ):
        await shared_editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum", "quick": "yes"})


@ON_SERVER
async def test_a_mistyped_request_field_is_named_with_the_request(shared_editor):
    with pytest.raises(JsonRpcInvalidParams, match=r"speedpatch/candidate: field 'runId' must be a string, got number 42"):
        await shared_editor.request("speedpatch/candidate", {"runId": 42})


@ON_SERVER
async def test_an_empty_required_string_is_refused(shared_editor):
    with pytest.raises(JsonRpcInvalidParams, match=r"speedpatch\.apply: field 'runId' must not be empty"):
        await shared_editor.command("speedpatch.apply", {"runId": ""})


@ON_SERVER
async def test_an_argument_that_is_not_an_object_is_refused(shared_editor):
    with pytest.raises(JsonRpcInvalidParams, match=r"speedpatch\.resume: expected one object argument, got string"):
        await shared_editor.command("speedpatch.resume", "run-1")


@ON_SERVER
async def test_more_than_one_argument_is_refused(shared_editor):
    with pytest.raises(JsonRpcInvalidParams, match=r"speedpatch\.apply: expected one object argument, got 2"):
        await shared_editor.command("speedpatch.apply", {"runId": "a"}, {"runId": "b"})


@ON_SERVER
async def test_cancel_needs_a_run_id_or_a_kernel(shared_editor):
    uri = shared_editor.open(shared_editor.root / "sum.toy")
    with pytest.raises(JsonRpcInvalidParams, match=r"speedpatch\.cancel: give 'runId', or both 'uri' and 'kernel'"):
        await shared_editor.command("speedpatch.cancel", {"uri": uri})


@ON_SERVER
async def test_unknown_fields_are_ignored(shared_editor):
    # a newer client may send fields this server does not read; the call is answered as without them
    answer = await shared_editor.command("speedpatch.cancel", {"runId": "no-such-run", "reason": "user"})
    assert answer == {"cancelled": False}


@ON_SERVER
async def test_the_servers_own_code_action_arguments_parse_back_into_their_records(shared_editor):
    uri = shared_editor.open(shared_editor.root / "sum.toy")
    parts = [action_parts(a) for a in await shared_editor.actions(uri, KERNEL_LINE)]
    optimize = [parse(OptimizeArgs, args[0], name) for _, name, args in parts if name == "speedpatch.optimize"]
    assert optimize == [
        OptimizeArgs(uri=uri, kernel="kernel_sum"),
        OptimizeArgs(uri=uri, kernel="kernel_sum", quick=True),
    ]


@pytest.mark.parametrize(
    "record",
    [
        OptimizeArgs(uri="file:///w/a.c", kernel="k", quick=True),
        RunArgs(run_id="r1"),
        CandidateArgs(run_id="r1", candidate_id="c2"),
        CancelArgs(uri="file:///w/a.c", kernel="k"),
        DocumentArgs(uri="file:///w/a.c"),
        TargetsArgs(),
        NoArgs(),
    ],
    ids=lambda r: type(r).__name__,
)
def test_every_record_round_trips_through_its_wire_json(record):
    wire = to_wire(record)
    assert all("_" not in key for key in wire)  # camelCase on the wire, as protocol.ts declares
    assert parse(type(record), wire, "test") == record
