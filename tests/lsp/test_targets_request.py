"""speedpatch/targets: the server tells the editor which targets and backends it has (the extension lists
none itself): each target's languages, file extensions and backends, and whether each backend can run here."""

from __future__ import annotations

import pytest
from lsp_editor import OFFLINE

pytestmark = pytest.mark.asyncio


async def test_the_server_lists_every_target_with_its_files_and_backends(start_editor, toy_workspace):
    editor = await start_editor(toy_workspace, OFFLINE)
    answer = await editor.request("speedpatch/targets", {})
    by_name = {t["name"]: t for t in answer["targets"]}
    assert {"gemmini", "nki", "cuda", "toy"} <= set(by_name)  # the built-in ones and a plugin target
    toy = by_name["toy"]
    assert toy["languages"] == ["toy", "python"] and toy["extensions"] == [".toy"]
    assert toy["backend"] == toy["defaultBackend"] == "toy-count"
    (backend,) = toy["backends"]
    assert backend["name"] == "toy-count" and backend["measuredOn"] == "model"
    assert backend["usable"] and backend["description"].startswith("counts executed Python lines")
    assert by_name["gemmini"]["languages"] == ["c", "cpp"] and by_name["gemmini"]["fenceLanguage"] == "c"
    assert [b["name"] for b in by_name["cuda"]["backends"]] == ["cuda-local", "cuda-ssh", "cuda-compile"]
    assert answer["notLoaded"] == {}


async def test_a_compile_only_backend_is_listed_as_unable_to_run_a_search(start_editor, toy_workspace):
    editor = await start_editor(toy_workspace, OFFLINE)
    answer = await editor.request("speedpatch/targets", {})
    (cuda,) = [t for t in answer["targets"] if t["name"] == "cuda"]
    (compile_only,) = [b for b in cuda["backends"] if b["name"] == "cuda-compile"]
    assert not compile_only["measuresSpeed"] and not compile_only["usable"]
    assert "cannot time" in compile_only["reason"]


async def test_the_chosen_backend_follows_the_editor_settings(start_editor, toy_workspace):
    editor = await start_editor(toy_workspace, {**OFFLINE, "backends": {"toy": "toy-turbo"}})
    uri = editor.open(toy_workspace / "sum.toy")
    answer = await editor.request("speedpatch/targets", {"uri": uri})
    (toy,) = [t for t in answer["targets"] if t["name"] == "toy"]
    assert toy["backend"] == "toy-turbo" and toy["defaultBackend"] == "toy-count"
