"""Strategies: how each step decides, behind one protocol per step (``strategies.protocols``).

``rules/`` holds the deterministic strategies with their word lists and constants, ``llm/`` the
LLM strategies with their prompts and output schemas, ``combined.py`` the explicit
combinations. The runtime that builds ``Deps`` chooses them (``strategies.combined.select``).
"""
