"""Graph nodes: one module per step, prompts and LLM output schemas."""
