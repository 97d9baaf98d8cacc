"""A domain profile (``profiles/*.json``): the knowledge and capability boundary as configuration.

Loaded and validated once per process by ``strategies.rules.profiles.load_profile``; the router,
the refusal/clarify/chitchat replies and the extractive answer's gate read it. Keys marked
``NotRequired`` may be left out (the readers' defaults apply); unknown keys are ignored.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

WhitelistMode = Literal["keywords", "kb_coverage"]


class ProfileDomain(TypedDict):
    """A whitelisted or blacklisted subject.

    Attributes:
        domain: Its name (reported as the turn's ``domain``).
        keywords: Words whose presence in the question selects it.
        examples: Example questions (whitelist only): the nearest one by embedding decides a
            question with no keyword.
        refusal: The reply that refuses it (blacklist only; else ``out_of_scope_reply``).

    """

    domain: str
    keywords: list[str]
    examples: NotRequired[list[str]]
    refusal: NotRequired[str]


class ProfileAction(TypedDict):
    """A request for data or a change that a tool serves.

    Attributes:
        intent: Its name (the turn's ``intent``).
        keywords: Words whose presence in the question names it.
        label: How the customer is told about it (「查询订单」).
        capability: The capability a registered tool must declare to serve it.
        tool: A tool name instead of a capability (the registry's name); ``null``: no tool serves it.
        priority: Ties between actions named by equally long keywords go to the higher one.
        args: Fixed arguments of the planned call.

    """

    intent: str
    keywords: list[str]
    label: NotRequired[str]
    capability: NotRequired[str | None]
    tool: NotRequired[str | None]
    priority: NotRequired[int]
    args: NotRequired[dict[str, Any]]


class ProfileChitchat(TypedDict):
    """Greetings: the words that make a short message one, and the fixed reply."""

    keywords: list[str]
    reply: str


class Profile(TypedDict):
    """A domain profile.

    Attributes:
        name: Its name (``shop``, ``kb-only``).
        description: What it is for (documentation only).
        whitelist_mode: ``keywords`` or ``kb_coverage`` (retrieval coverage decides).
        whitelist: Subjects the agent answers.
        blacklist: Subjects it refuses whatever the knowledge base holds.
        actions: Requests tools serve (empty: no tool routes).
        how_to_markers: Words that make a message naming an action a question about how it works.
        handoff_keywords: Words asking for a human.
        chitchat: Greetings and their reply.
        thresholds: Route → minimum confidence of an LLM route (below it the rules decide).
        min_coverage: The extractive gate's minimum term coverage.
        min_bigram_coverage: The relaxed gate's bigram share.
        min_dense_similarity: The semantic gate's cosine (``null`` disables it).
        semantic_coverage_share: The share of ``min_coverage`` the semantic gate requires.
        min_subject_share: The answerability gate's binding share: the (rarity-weighted) share of
            the question's subject terms a unit and its headings must carry (higher declines more
            related-but-unanswering evidence and also more paraphrased answerable questions).
        clarify_reply: The reply asking for a missing order id.
        no_capability_reply: The refusal when no tool serves an action (``{label}`` placeholder).
        out_of_scope_reply: The refusal of a subject outside the boundary.
        order_id_default_intent: The action a question about order data goes to.

    """

    name: str
    description: NotRequired[str]
    whitelist_mode: WhitelistMode
    whitelist: list[ProfileDomain]
    blacklist: list[ProfileDomain]
    actions: list[ProfileAction]
    how_to_markers: NotRequired[list[str]]
    handoff_keywords: list[str]
    chitchat: ProfileChitchat
    thresholds: dict[str, float]
    min_coverage: NotRequired[float]
    min_bigram_coverage: NotRequired[float]
    min_dense_similarity: NotRequired[float | None]
    semantic_coverage_share: NotRequired[float]
    min_subject_share: NotRequired[float]
    clarify_reply: str
    no_capability_reply: str
    out_of_scope_reply: str
    order_id_default_intent: NotRequired[str]


def empty_profile() -> Profile:
    """Return a profile with no subjects, actions or replies (a strategy that never reads one)."""
    return Profile(name="", whitelist_mode="kb_coverage", whitelist=[], blacklist=[], actions=[],
                   handoff_keywords=[], chitchat=ProfileChitchat(keywords=[], reply=""),
                   thresholds={}, clarify_reply="", no_capability_reply="", out_of_scope_reply="")
