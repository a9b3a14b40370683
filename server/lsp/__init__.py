"""speedpatch's language server: a thin LSP adapter over the engine (protocol: LSP_PROTOCOL.md).

Modules, one job each:
  server.py       creation, LSP feature handlers, main() over stdio (`python -m speedpatch.lsp`)
  session.py      state and glue: settings -> config, documents -> kernel views, runs -> LSP messages
  documents.py    kernel detection per document text (cached, size-capped, never raises)
  views.py        what to show for one kernel: fresh / applied / stale, the live job, the latest run
  lenses.py, hints.py, diagnostics.py, actions.py    the editor features, from views
  commands.py, requests.py    workspace/executeCommand and the speedpatch/* requests
  runs.py         the run queue: engine searches on a worker thread, events folded into jobs
  progress.py     work-done progress for runs (cancellable)
  accept.py       accept on save: re-verify an applied winner on its backend
  verify.py       re-verification verdicts, persisted in .speedpatch/lsp-verifications.json
  index.py        in-memory view of the run store, reloaded when its data_version changes
  watcher.py      watchdog: external file edits, speedpatch.toml, store writes by the CLI
  settings.py     editor settings -> config overrides; backends.py: backend choice and availability
  engine.py       lazy import of speedpatch.api; positions.py, formatting.py, params.py, reports.py: helpers
"""
