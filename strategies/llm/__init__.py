"""LLM strategies: prompts, output schemas and the structured-call helper."""
