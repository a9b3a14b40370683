"""speedpatch's language server: a thin LSP adapter over the engine (protocol: docs/lsp-protocol.md).

Modules, one job each:
  server.py       the LSP feature handlers (module-level), create_server(), main() over stdio
  state.py        the server object and its state: settings -> config per folder, the parts below, refresh
  docviews.py     documents -> kernel views (buffer or disk, detection, the run and job of each kernel)
  staleness.py    whether a stored run still describes its kernel (edited, or changed on disk outside)
  controller.py   the run controller: start/resume/cancel, job events -> progress, runUpdate, messages
  documents.py    kernel detection per document text (cached, size-capped, never raises)
  views.py        what to show for one kernel: fresh / applied / stale, the live job, the latest run
  failures.py     failed candidates counted by why, for the report, the Runs view and the messages
  lenses.py, hints.py, diagnostics.py, actions.py    the editor features, from views
  commands.py, requests.py    workspace/executeCommand and the speedpatch/* requests
  runs.py         the run queue: engine searches on a worker thread, events folded into jobs
  progress.py     work-done progress for runs (cancellable)
  accept.py       accept on save: re-verify an applied winner on its backend
  verify.py       re-verification verdicts, persisted in .speedpatch/lsp-verifications.json
  index.py        in-memory view of the run store, reloaded when its data_version changes
  watcher.py      watchdog: external file edits, speedpatch.toml, store writes by the CLI
  settings.py     editor settings -> config overrides; backends.py: backend choice and availability
  settings_schema.py    the speedpatch.* settings declared once; generates package.json's settings
  targetinfo.py   speedpatch/targets: the targets and backends this server has, for the editor
  arguments.py    the commands' and requests' arguments as typed records, parsed from what pygls hands over
  engine.py       lazy import of speedpatch.api; positions.py, formatting.py, reports.py: helpers
"""
