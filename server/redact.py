"""Secrets never travel: one scrub function for everything speedpatch stores, logs, shows or sends to an
LLM.

A secret is a value speedpatch knows to be one: the value of any environment variable whose name looks
like a credential (*KEY*, *TOKEN*, *SECRET*, *PASSWORD*, *PASSWD*, *CREDENTIAL*, *AUTH*) with at least
MIN_LENGTH characters, and any value registered at run time (the API key an editor hands over from its
secret storage, the configured `llm.api_key_env`). A URL's credentials are secrets too, in any environment
variable (OPENAI_BASE_URL, HTTPS_PROXY) and in the configured `llm.base_url`: the password of its userinfo
(`https://user:KEY@host/v1`; a user name alone, `https://KEY@host/v1`, as tokens are given) and the values
of its query parameters with credential-like names (`?api-key=KEY`). Values are matched exactly, wherever
they appear in a text, as written and percent-decoded; shorter values are not secrets worth the false
positives ("true", "1").

The boundaries that call `redact`: every process output (targets/sandbox.py, so candidate output is clean
before any backend parses it), everything the run store writes (server/store/sqlite.py), and every prompt
before it is sent (server/llm/proposer.py).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, unquote_plus, urlsplit

MIN_LENGTH = 8
# Names that hold credentials by convention. Matched against the upper-cased variable name.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH")
# Always secrets, whatever their value's length (the names speedpatch itself reads its key from).
KNOWN_NAMES = ("SPEEDPATCH_API_KEY", "OPENAI_API_KEY")

REDACTED = "[redacted "  # how every replaced value starts
_registered: dict[str, str] = {}  # value -> label
_lock = threading.Lock()


def is_secret_name(name: str) -> bool:
    """True when an environment variable of this name must never reach a candidate or a record."""
    upper = name.upper()
    return upper in KNOWN_NAMES or bool(SECRET_NAME.search(upper))


def register(value: str | None, label: str = "secret") -> None:
    """Treat `value` as a secret from now on (for the life of this process)."""
    if value and len(value) >= MIN_LENGTH:
        with _lock:
            _registered[value] = label


def register_env_name(name: str | None) -> None:
    """The value of environment variable `name` is a secret (the configured llm.api_key_env)."""
    if name:
        register(os.environ.get(name), name)


def url_secrets(url: str) -> list[str]:
    """The credentials written into a URL (userinfo, credential-like query values), as written and decoded."""
    if "://" not in url:
        return []
    try:
        parts = urlsplit(url.strip())
        userinfo, query = parts.netloc.rpartition("@")[0], parts.query
    except ValueError:  # a malformed URL ("[::1"): its credentials still stand between "://" and "@"
        userinfo, query = url.split("://", 1)[1].split("/", 1)[0].rpartition("@")[0], ""
    user, _, password = userinfo.partition(":")
    found = [userinfo, password or user, unquote(userinfo), unquote(password or user)]
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if is_secret_name(unquote_plus(name)) or name.lower() == "sig":
            found += [value, unquote_plus(value)]
    return [v for v in dict.fromkeys(found) if len(v) >= MIN_LENGTH]


def register_url(url: str | None, label: str) -> None:
    """The credentials in `url` (the configured llm.base_url) are secrets from now on."""
    for value in url_secrets(url or ""):
        register(value, label)


def known_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every secret value known now, mapped to a label that names where it came from."""
    env = os.environ if environ is None else environ
    found = {secret: name for name, value in env.items() if "://" in value for secret in url_secrets(value)}
    found.update({value: name for name, value in env.items() if is_secret_name(name) and len(value) >= MIN_LENGTH})
    with _lock:
        found.update(_registered)
    return found


def redact(text: str, secrets: Mapping[str, str] | None = None) -> str:
    """`text` with every known secret value replaced by `[redacted NAME]`."""
    if not text:
        return text
    values = known_secrets() if secrets is None else secrets
    # the longest first, so that a secret containing another is replaced whole
    for value in sorted(values, key=len, reverse=True):
        if value in text:
            text = text.replace(value, f"{REDACTED}{values[value]}]")
    return text


def redact_data(data: Any, secrets: Mapping[str, str] | None = None) -> Any:
    """The same for JSON-like data: every string inside dicts and lists (keys included) is scrubbed."""
    values = known_secrets() if secrets is None else secrets
    if not values:
        return data
    if isinstance(data, str):
        return redact(data, values)
    if isinstance(data, dict):
        return {redact_data(k, values): redact_data(v, values) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_data(v, values) for v in data]
    return data
