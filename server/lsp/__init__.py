"""speedpatch's language server: a thin LSP adapter over the engine (see server.py)."""
