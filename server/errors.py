"""Errors meant for the user: each message says what was wrong and what to do."""


class UserError(Exception):
    """Bad input from the user (file, kernel name, option, configuration)."""


class ConfigError(UserError):
    """An invalid value in speedpatch.toml or in editor settings; the message names the key."""


class NotFoundError(UserError, KeyError):
    """A run, candidate, kernel, target or backend that is not there. Also a KeyError, for callers that
    look things up."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class StaleError(UserError):
    """The kernel in the file no longer matches what the run started from."""


class LLMError(Exception):
    """The LLM endpoint failed after retries (down, refusing, or answering garbage)."""


class LLMRequestError(LLMError):
    """One request was refused for what it asked (too long for the model's context, filtered, malformed):
    that sample fails and is recorded; the endpoint itself works, so the search goes on."""
