"""The LLM answerer: a grounded answer whose every factual sentence carries 【来源:id】.

Never worse than offline (issue 10.2/10.4):

- A factual sentence the model left without a source tag gets one by code when exactly that
  sentence passes the code checks against one evidence unit (:func:`attach_citations`); the
  verifier then checks it like any other sentence. A small model that forgot a tag is not sent
  back to reflect on it.
- A reflection round (the verifier rejected the model's draft) asks the model again with the
  rejected claims as feedback; a draft that states a rejected claim again gets the extractive
  answer at once (the model cannot fix it; its verdict is known); the LAST round (``final_round``) is answered by the extractive
  answerer instead (the offline gate decides whether there is an answer at all), so the
  verified extractive answer comes before a handoff.
- A draft that states nothing (a bare 「无」 with a tag: no content words, no value) is not an
  answer: the gate found answering evidence, so the extractive answer is given instead.
- The model's answer is never less than the verified extractive one: a sentence of the
  extractive answer (evidence text with its tag) whose key facts the model's draft leaves out,
  or whose content it does not cover, is appended (:func:`complete_with`); a model that says it
  cannot answer where the extractive answerer can gets the extractive answer. A small model's
  true-but-partial sentence (the status without the items) no longer costs the customer the rest.
- Self-consistency for high-value turns (a question about an amount, or a turn that reports a
  write tool's result: an order change, a refund, a compensation): ``samples`` extra drafts at ``temperature``; when their key facts (numbers with
  units, dates, order ids) differ from the temperature-0 draft's, the extractive answer is
  used instead. Off when ``samples`` is 0 (``CSAGENT_LLM_CONSISTENCY_SAMPLES``, default 2);
  ordinary questions never pay for it.
"""

from __future__ import annotations

import os
import re

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from contracts.evidence import Evidence
from strategies.llm.prompts import GENERATE_SYSTEM, GENERATE_USER, REFLECT_FEEDBACK
from strategies.llm.schemas import GeneratedAnswer
from strategies.llm.structured import structured_call
from strategies.protocols import Answerer, AnswerRequest, Draft, StepFailed
from strategies.rules.answer import NO_ANSWER, RulesAnswerer, tool_failed
from strategies.rules.claims import (
    bigram_coverage,
    content_bigrams,
    extract_facts,
    parse_citations,
    split_sentences,
    strip_citations,
)
from strategies.rules.evidence import render_evidence
from strategies.rules.facts import render_facts
from strategies.rules.normalize import normalize_for_compare
from strategies.rules.verify import BOILERPLATE, check_sentence

CONSISTENCY_SAMPLES = int(os.environ.get("CSAGENT_LLM_CONSISTENCY_SAMPLES", "2") or 0)
CONSISTENCY_TEMPERATURE = 0.7
HIGH_VALUE_SLOTS = ("amount",)  # question slots whose answers are money: sampled for agreement


def attach_citations(answer: str, evidence: list[Evidence], question: str = "") -> tuple[str, int]:
    """Tag each untagged factual sentence with the one evidence unit it is supported by.

    A sentence is tagged only when the code checks find no problem with it against that unit
    alone (numbers, dates, terms, conditions, parties, content coverage); the best-covering
    such unit wins. Boilerplate and unsupported sentences stay as they are.

    Returns:
        The answer and how many tags were attached.

    """
    current = [e for e in evidence if not e.get("superseded")]
    out: list[str] = []
    attached = 0
    for sentence in split_sentences(answer):
        plain = strip_citations(sentence)
        if parse_citations(sentence) or any(b in plain for b in BOILERPLATE) \
                and not extract_facts(plain).numbers:
            out.append(sentence)
            continue
        scored = [(bigram_coverage(plain, str(e.get("text", ""))), str(e["id"])) for e in current
                  if not check_sentence(sentence, [str(e.get("text", ""))], question)]
        if not scored:
            out.append(sentence)
            continue
        tag = f"【来源:{max(scored)[1]}】"
        body = sentence.rstrip("。！？!?；; ")
        out.append(f"{body}{tag}{sentence[len(body):]}")
        attached += 1
    return "".join(out), attached


def _plain(text: str) -> str:
    return re.sub(r"[\s，,。．.！!？?；;：:、]", "", normalize_for_compare(strip_citations(text)))


def repeats_rejected(draft: str, rejected: list[str]) -> bool:
    """Return True when a reflection draft states a claim the verifier already rejected, again.

    A model that answers the feedback with the same claim cannot fix it; re-verifying the
    repeat would cost a verifier call (and self-consistency samples) for a known verdict.
    """
    text = _plain(draft)
    return any(claim and claim in text for claim in (_plain(c) for c in rejected))


def says_something(answer: str) -> bool:
    """Return True when some sentence of ``answer`` states content (words or a value), not only a tag."""
    plain = strip_citations(answer)
    return len(content_bigrams(plain)) >= 2 or bool(key_facts(plain))


def key_facts(text: str) -> frozenset[str]:
    """Return the facts samples must agree on: numbers with units, dates, order ids."""
    facts = extract_facts(strip_citations(text))
    numbers = {f"{n.low}-{n.high}{n.unit}" for n in facts.numbers}
    return frozenset(numbers | set(facts.dates) | set(facts.order_ids))


COVERED = 0.5  # share of a value-free extractive sentence's bigrams the draft must hold to cover it


def complete_with(draft: str, extractive: str) -> tuple[str, int]:
    """Append the sentences of ``extractive`` that ``draft`` leaves out; return the text and count.

    Left out: a sentence whose key facts (:func:`key_facts`) are not all in the draft, or, for a
    sentence without such facts, less than ``COVERED`` of whose content bigrams the draft holds.
    """
    have = key_facts(draft)
    body = strip_citations(draft)
    out, added = draft, 0
    for sentence in split_sentences(extractive):
        plain = strip_citations(sentence)
        facts = key_facts(plain)
        if not facts and not content_bigrams(plain):
            continue
        missing = not facts <= have if facts else bigram_coverage(plain, body) < COVERED
        if missing:
            out, added = out + sentence, added + 1
            have, body = have | facts, body + plain
    return out, added


def high_value(request: AnswerRequest, write_tools: frozenset[str] = frozenset()) -> bool:
    """Return True for turns worth sampling: money questions and reports of a write tool's result."""
    slot = str(request.turn.question.get("slot") or "")
    writes = write_tools or frozenset(s.name for s in request.turn.tools if s.write)
    wrote = any(e.get("kind") == "tool" and str(dict(e.get("result") or {}).get("source")) in writes
                for e in request.evidence)
    return slot in HIGH_VALUE_SLOTS or wrote


class LLMAnswerer:
    """Answer with the chat model from the rendered evidence (see the module doc).

    Args:
        llm: The chat model.
        extractive: The answerer for reflection rounds and disagreeing samples (default: rules).
        samples: Extra samples for high-value turns (0: no self-consistency check).

    """

    def __init__(self, llm: BaseChatModel, extractive: Answerer | None = None,
                 samples: int = CONSISTENCY_SAMPLES) -> None:
        self.llm = llm
        self.extractive = extractive or RulesAnswerer()
        self.samples = max(0, samples)

    def _messages(self, request: AnswerRequest) -> list[BaseMessage]:
        prompt = GENERATE_USER.format(
            evidence=render_evidence(request.evidence), facts=render_facts(request.turn.facts),
            feedback=REFLECT_FEEDBACK.format(claims="\n".join(f"- {c}" for c in request.feedback))
            if request.feedback else "", question=request.turn.question["text"])
        return [SystemMessage(GENERATE_SYSTEM), HumanMessage(prompt)]

    def _agrees(self, request: AnswerRequest, first: str) -> bool:
        """Return True when every extra sample states the same key facts as ``first``."""
        bind = getattr(self.llm, "model_copy", None)
        if bind is None:
            return True
        hot = bind(update={"temperature": CONSISTENCY_TEMPERATURE})
        want = key_facts(first)
        for _ in range(self.samples):
            outcome = structured_call(hot, GeneratedAnswer, self._messages(request), retries=0)
            if outcome.value is None:
                return False  # cannot show agreement: treat as disagreement
            if key_facts(outcome.value.answer) != want:
                return False
        return True

    def answer(self, request: AnswerRequest) -> Draft:
        """Return the model's draft (tags attached by code), or the extractive one (see above).

        Raises:
            StepFailed: the call failed.

        """
        if not request.evidence:  # nothing to answer from: no model call
            return Draft(text=NO_ANSWER, fail_reason="no_evidence")
        if request.final_round:  # the model's drafts were rejected: the verified extractive answer
            return self.extractive.answer(request)
        outcome = structured_call(self.llm, GeneratedAnswer, self._messages(request))
        if outcome.value is None:
            raise StepFailed(f"generate: {outcome.error}")
        if outcome.value.cannot_answer or not outcome.value.answer.strip():
            return self.extractive.answer(request)  # the offline gate decides (no answer: NO_ANSWER)
        if not says_something(outcome.value.answer):  # e.g. a bare 「无」: the gate found an answer
            return self.extractive.answer(request)
        text, _ = attach_citations(outcome.value.answer.strip(), request.evidence,
                                   request.turn.question["text"])
        if request.feedback and repeats_rejected(text, request.feedback):
            return self.extractive.answer(request)  # it cannot fix what was rejected: no re-check
        if self.samples and high_value(request) and not self._agrees(request, text):
            return self.extractive.answer(request)
        floor = self.extractive.answer(request)
        if floor.text != NO_ANSWER:
            text, _ = complete_with(text, floor.text)
        failed = tool_failed(request.evidence)
        return Draft(text=text, fail_reason="tool_failure" if failed else None)

