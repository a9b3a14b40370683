"""Secrets never travel: known secret values are scrubbed from everything stored, shown or sent to an LLM
(docs/threat-model.md, "Secrets")."""

from __future__ import annotations

import json
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


def test_credentials_written_into_a_url_are_secrets_in_any_variable():
    env = {"OPENAI_BASE_URL": "https://user:sk-in-userinfo-123@llm.example/v1",
           "HTTPS_PROXY": "http://proxy-user:proxy-pass-456@proxy:3128",
           "AZURE_ENDPOINT": "https://x.example/v1?api-version=2024-02-01&api-key=sk%2Din-query-789",
           "HOMEPAGE": "https://example.com/docs?page=12345678"}
    text = "sk-in-userinfo-123 proxy-pass-456 sk-in-query-789 sk%2Din-query-789 api-version=2024-02-01 page=12345678"
    assert redact.redact(text, redact.known_secrets(env)) == (
        "[redacted OPENAI_BASE_URL] [redacted HTTPS_PROXY] [redacted AZURE_ENDPOINT] [redacted AZURE_ENDPOINT] "
        "api-version=2024-02-01 page=12345678"
    )


def _leaks(secret: str, tmp_path, *procs: subprocess.CompletedProcess) -> list[str]:
    found = [f"output of {' '.join(p.args[3:5])}" for p in procs if secret in p.stdout + p.stderr]
    return found + [p.name for p in (tmp_path / ".speedpatch").iterdir() if secret.encode() in p.read_bytes()]


def test_a_key_in_the_base_urls_userinfo_reaches_the_endpoint_and_nothing_else(tmp_path):
    secret = f"sk-canary-{uuid.uuid4().hex}"
    write_toy(tmp_path)
    env = {**cli_env(), "COLUMNS": "1000"}  # one line per message: a wrapped secret would hide from the check
    reply = "Use sum.\n```python\ndef kernel_sum(xs):\n    return sum(xs)\n```\n"
    with FakeOpenAI(lambda request: reply) as server:
        url = server.base_url.replace("http://", f"http://user:{secret}@")
        proc = subprocess.run(cli("optimize", "sum.toy", "--base-url", url, "--model", "m", "-T", "1", "-B", "1",
                                  "-N", "1", "-K", "1", "--json"), cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=180)
        sent = [h.get("authorization", "") for h in server.headers]
    assert proc.returncode == 0, proc.stderr
    assert sent and all(a.startswith("Basic ") for a in sent)  # the URL's credentials were used
    run_id = json.loads(proc.stdout)["run_id"]
    shown = [subprocess.run(cli(*args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
             for args in (("runs",), ("runs", "--json"), ("show", run_id), ("show", run_id, "--json"))]
    assert all(p.returncode == 0 for p in shown), [p.stderr for p in shown]
    assert "[redacted llm.base_url]" in Store(tmp_path).get_run(run_id).config["llm"]["base_url"]
    assert _leaks(secret, tmp_path, proc, *shown) == []


def test_a_key_in_an_unreachable_base_url_is_in_no_error_message(tmp_path):
    secret = f"sk-canary-{uuid.uuid4().hex}"
    write_toy(tmp_path)
    (tmp_path / "speedpatch.toml").write_text("[llm]\nretries = 0\n")
    env = {**cli_env(), "COLUMNS": "1000"}
    # the closed port's error names the base URL; ftp:// is refused before the run, naming it too
    down = subprocess.run(cli("optimize", "sum.toy", "--base-url", f"http://user:{secret}@127.0.0.1:9/v1",
                              "--model", "m", "-T", "1"), cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=180)
    refused = subprocess.run(cli("optimize", "sum.toy", "--base-url", f"ftp://user:{secret}@127.0.0.1:9/v1",
                                 "--model", "m", "-T", "1"), cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=180)
    assert down.returncode == 3 and "failed after 1 attempts" in down.stdout + down.stderr
    assert refused.returncode == 2 and "is not an http:// or https:// URL" in refused.stderr
    assert _leaks(secret, tmp_path, down, refused) == []


def test_a_key_in_the_base_urls_query_is_in_no_echo_of_the_endpoint(tmp_path):
    """The SDK appends /chat/completions after the query; the endpoint's 404 names the path it got."""
    secret = f"sk-canary-{uuid.uuid4().hex}"
    write_toy(tmp_path)
    env = {**cli_env(), "COLUMNS": "1000"}
    with FakeOpenAI(lambda request: "unused") as server:
        proc = subprocess.run(cli("optimize", "sum.toy", "--base-url", f"{server.base_url}?api-key={secret}",
                                  "--model", "m", "-T", "1", "--json"), cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=180)
    assert "no route" in proc.stdout + proc.stderr  # the endpoint's answer was shown, scrubbed
    assert _leaks(secret, tmp_path, proc) == []


def test_resuming_a_run_whose_base_url_held_its_key_asks_for_the_url_again(tmp_path):
    secret = f"sk-canary-{uuid.uuid4().hex}"
    write_toy(tmp_path)
    (tmp_path / "speedpatch.toml").write_text("[llm]\nretries = 0\n")
    env = {**cli_env(), "COLUMNS": "1000"}
    env.pop("OPENAI_BASE_URL", None)
    started = subprocess.run(cli("optimize", "sum.toy", "--base-url", f"http://user:{secret}@127.0.0.1:9/v1",
                                 "--model", "m", "-T", "1", "--json"), cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=180)
    assert started.returncode == 3, started.stderr  # the endpoint is down: interrupted, resumable
    run_id = json.loads(started.stdout)["run_id"]
    asked = subprocess.run(cli("resume", run_id), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert asked.returncode == 2
    assert "credentials in it, which are not stored" in asked.stderr and "OPENAI_BASE_URL" in asked.stderr
    reply = "Use sum.\n```python\ndef kernel_sum(xs):\n    return sum(xs)\n```\n"
    with FakeOpenAI(lambda request: reply) as server:
        url = server.base_url.replace("http://", f"http://user:{secret}@")
        resumed = subprocess.run(cli("resume", run_id, "--json"), cwd=tmp_path, env={**env, "OPENAI_BASE_URL": url},
                                 capture_output=True, text=True, timeout=180)
        asked_llm = bool(server.requests)
    assert resumed.returncode == 0, resumed.stderr
    assert asked_llm and json.loads(resumed.stdout)["status"] == "finished"
    assert _leaks(secret, tmp_path, started, asked, resumed) == []
