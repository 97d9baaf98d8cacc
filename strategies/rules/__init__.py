"""Deterministic strategies (the offline mode and every LLM step's fallback), word lists, constants."""
