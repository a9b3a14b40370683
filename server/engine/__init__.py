"""The search engine: beam search over plan/code proposals, evaluated by a backend. Knows nothing of LSP."""
