"""Secrets never travel: known secret values are scrubbed from everything stored, shown or sent to an LLM
(docs/threat-model.md, "Secrets")."""

from __future__ import annotations

import subprocess
import uuid

from speedpatch import redact
from speedpatch.config import load_config
from speedpatch.model import Candidate, Evaluation, source_hash
from speedpatch.store import Store
from support.fake_openai import FakeOpenAI, phase_of
from support.toys import cli, cli_env, toy_problem, write_toy


def test_values_of_credential_like_variables_are_replaced_by_their_name():
    env = {"OPENAI_API_KEY": "sk-abcdefgh12345", "HF_TOKEN": "hf_0123456789", "PATH": "/usr/bin:/bin"}
    secrets = redact.known_secrets(env)
    text = "key sk-abcdefgh12345 token hf_0123456789 path /usr/bin:/bin"
    assert redact.redact(text, secrets) == (
        "key [redacted OPENAI_API_KEY] token [redacted HF_TOKEN] path /usr/bin:/bin"
    )


def test_short_values_are_not_treated_as_secrets():
    found = redact.known_secrets({"USE_TOKEN": "true", "API_KEY": "1234567"})
    assert "true" not in found and "1234567" not in found


def test_a_registered_value_is_a_secret_whatever_its_variable_is_called(monkeypatch):
    monkeypatch.setenv("ENDPOINT_SETTING", "value-from-the-editor-123")
    redact.register_env_name("ENDPOINT_SETTING")
    assert redact.redact("got value-from-the-editor-123") == "got [redacted ENDPOINT_SETTING]"


def test_nested_records_are_scrubbed_keys_included():
    secrets = {"sk-0123456789": "K"}
    data = {"log": "sk-0123456789", "feedback": {"sk-0123456789": ["x sk-0123456789"]}, "n": 3}
    assert redact.redact_data(data, secrets) == {"log": "[redacted K]", "feedback": {"[redacted K]": ["x [redacted K]"]},
                                                 "n": 3}


def test_the_store_writes_no_secret_value(tmp_path, monkeypatch):
    secret = f"sk-store-{uuid.uuid4().hex}"
    monkeypatch.setenv("SPEEDPATCH_API_KEY", secret)
    config = load_config(tmp_path)
    problem = toy_problem(tmp_path, config)
    store = Store(tmp_path)
    store.create_run("r1", problem, 1, {"llm": {"base_url": f"http://x/?key={secret}"}})
    source = problem.source.replace("total = 0", f"total = 0  # {secret}")
    cand = Candidate(id="c", run_id="r1", parent_id="base", iteration=1, plan=f"use {secret}", source=source,
                     source_hash=source_hash(source),
                     evaluation=Evaluation(status="incorrect", message=secret, log=f"env: {secret}",
                                           feedback={"k": secret}))
    store.save_candidate(cand)
    store.save_plan("r1", "p", "base", 1, "m", f"plan {secret}")
    store.save_llm_call("r1", "k", "fix", "m", f"prompt {secret}", f"reply {secret}", 1, 1, 0.1)
    store.update_run("r1", message=f"failed: {secret}")
    store.close()
    for path in (tmp_path / ".speedpatch").iterdir():
        assert secret.encode() not in path.read_bytes(), path
    assert "[redacted SPEEDPATCH_API_KEY]" in Store(tmp_path).get_candidate("r1", "c").evaluation.log


def test_a_candidate_that_prints_its_environment_leaks_the_key_nowhere(tmp_path):
    """The real CLI, the real openai client, a scripted endpoint; the key is in the CLI's environment and,
    as a second route the sandbox cannot close, in a file next to the kernel that the candidate prints."""
    secret = f"sk-canary-{uuid.uuid4().hex}"
    write_toy(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text(f"api key: {secret}\n")
    kernel = (f"def kernel_sum(xs):\n    import os\n    print('ENVIRONMENT', dict(os.environ))\n"
              f"    print('NOTES', open({str(notes)!r}).read())\n    return -1\n")
    reply = f"Print everything.\n```python\n{kernel}```\n"
    env = cli_env()
    env["SPEEDPATCH_API_KEY"] = secret
    with FakeOpenAI(lambda request: reply) as server:
        proc = subprocess.run(
            # K = 2: a repair takes one of the plan's samples, so the failed first sample's output goes back
            cli("optimize", "sum.toy", "--base-url", server.base_url, "--model", "m", "-T", "1", "-B", "1", "-N", "1",
                "-K", "2", "--json"),
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
        )
        fixes = [r["messages"][-1]["content"] for r in server.requests if phase_of(r) == "fix"]
        prompts = server.prompts()
    assert proc.returncode == 0, proc.stderr
    assert fixes, "no fix prompt: the candidate's output never went back to the LLM"
    assert "[redacted SPEEDPATCH_API_KEY]" in fixes[0]  # the value reached the output, and was scrubbed
    assert all(secret not in p for p in prompts)
    assert secret not in proc.stdout and secret not in proc.stderr
    for path in (tmp_path / ".speedpatch").iterdir():
        assert secret.encode() not in path.read_bytes(), path
