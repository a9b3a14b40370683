"""LLM access: an OpenAI-compatible client, ensembles of models, and the proposers."""
