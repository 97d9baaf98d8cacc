"""Small adapters every node shares: the run's context, the profile, the turn for the strategies."""

from __future__ import annotations

from langgraph.runtime import Runtime

from contracts.context import Context
from contracts.question import empty_question
from contracts.state import State
from strategies.deps import Deps
from strategies.protocols import Profile, Turn
from strategies.rules.profiles import load_profile
from strategies.rules.question import vocabulary_for


def context_of(runtime: Runtime[Context] | None) -> Context:
    """Return the run's context (the defaults, read from the environment, when none was given)."""
    context = runtime.context if runtime is not None else None
    return context if context is not None else Context()


def profile_of(runtime: Runtime[Context] | None) -> Profile:
    """Return the domain profile the run's context names."""
    return load_profile(context_of(runtime).domain_profile)


def turn_of(state: State, runtime: Runtime[Context] | None, deps: Deps) -> Turn:
    """Return what the strategies read about this turn (question, facts, profile, tools)."""
    question = state.get("analysis") or empty_question(state.get("question", ""))
    return Turn(question=question, facts=list(state.get("facts") or []),
                profile=profile_of(runtime), tools=tuple(deps.shop.specs()),
                vocab=vocabulary_for(deps.retriever))  # [answer]
