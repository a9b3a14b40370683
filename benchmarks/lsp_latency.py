"""Code-action and code-lens latency of the speedpatch language server, idle and while a search runs.

Starts the real server (`python -m speedpatch.lsp`) over stdio in a scratch workspace, opens a kernel,
measures N code-action and N code-lens round trips with nothing running, then starts an offline search
and measures again while it runs. Prints p50/p95/max per phase; asserts nothing (goal: p95 < 50 ms).

    .venv/bin/python benchmarks/lsp_latency.py [--example gemmini|toy] [--requests 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

REPO = Path(__file__).resolve().parents[1]
TOY_DIR = REPO / "tests" / "toy"


def workspace(example: str) -> tuple[Path, Path, dict[str, str]]:
    root = Path(tempfile.mkdtemp(prefix="speedpatch-lsp-bench-"))
    env = dict(os.environ)
    if example == "gemmini":
        path = Path(shutil.copy(REPO / "examples" / "gemmini" / "matmul_128.c", root / "matmul_128.c"))
    else:
        sys.path.insert(0, str(TOY_DIR))
        from toy_target import EXAMPLE

        path = root / "sum.toy"
        # the harness sleeps so that the search lasts through the measurement
        path.write_text("import time\ntime.sleep(0.3)\n" + EXAMPLE)
        env["PYTHONPATH"] = os.pathsep.join([str(TOY_DIR), env.get("PYTHONPATH", "")])
        env["SPEEDPATCH_TARGET_MODULES"] = "toy_target"
    return root, path, env


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def report(label: str, samples: list[float]) -> None:
    ms = [s * 1000 for s in samples]
    print(
        f"  {label:<12} n={len(ms):<4} p50={statistics.median(ms):6.1f} ms  p95={percentile(ms, 0.95):6.1f} ms"
        f"  max={max(ms):6.1f} ms"
    )


async def measure(client: LanguageClient, uri: str, line: int, n: int) -> tuple[list[float], list[float]]:
    doc = types.TextDocumentIdentifier(uri=uri)
    here = types.Range(
        start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)
    )
    actions, lenses = [], []
    for _ in range(n):
        t = time.perf_counter()
        await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=doc, range=here, context=types.CodeActionContext(diagnostics=[])
            )
        )
        actions.append(time.perf_counter() - t)
        t = time.perf_counter()
        await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc))
        lenses.append(time.perf_counter() - t)
    return actions, lenses


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--example", choices=["gemmini", "toy"], default="gemmini")
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()

    root, path, env = workspace(args.example)
    client = LanguageClient("speedpatch-bench", "1")
    updates: list[dict[str, Any]] = []

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def create(params: Any) -> None:
        return None

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(params: Any) -> None:
        return None

    @client.feature(types.PROGRESS)
    def progress(params: Any) -> None:
        return None

    @client.feature("speedpatch/runUpdate")
    def run_update(params: Any) -> None:
        updates.append({"status": params.status, "iteration": params.iteration})

    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "speedpatch.lsp", env=env, cwd=str(root))
    caps = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True))
    settings = {"offline": True, "search": {"iterations": 4, "beam": 2, "plans": 4, "codes": 1}}
    await client.initialize_async(
        types.InitializeParams(
            capabilities=caps,
            root_uri=from_fs_path(str(root)),
            initialization_options=settings,
            process_id=os.getpid(),
        )
    )
    client.initialized(types.InitializedParams())
    uri = from_fs_path(str(path)) or ""
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="c", version=1, text=path.read_text())
        )
    )
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    print(
        f"server up, first code lens after {time.perf_counter() - started:.2f} s: {lenses[0].command.title}"
    )
    kernel = lenses[0].command.arguments[0]["kernel"]
    line = lenses[0].range.start.line

    await asyncio.sleep(3)  # the server imports the engine in the background after start-up; let it finish
    print(f"idle ({args.example}):")
    actions, lens_times = await measure(client, uri, line, args.requests)
    report("codeAction", actions)
    report("codeLens", lens_times)

    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="speedpatch.optimize", arguments=[{"uri": uri, "kernel": kernel}])
    )
    await asyncio.sleep(0.5)  # let the search get going (baseline evaluation)
    print(f"while search {result['runId']} runs:")
    actions, lens_times = await measure(client, uri, line, args.requests)
    still_running = not any(u["status"] in ("finished", "cancelled", "failed") for u in updates)
    report("codeAction", actions)
    report("codeLens", lens_times)
    print(f"  search still running at the end of the measurement: {still_running}")

    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="speedpatch.cancel", arguments=[{"runId": result["runId"]}])
    )
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
