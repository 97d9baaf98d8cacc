"""Tool contracts: result codes, ``ToolResult``, ``ToolSpec`` (+ ``Answers``), planned calls, records.

Result codes: 0 ok; 404 not found / empty; 403 not the caller's; 400 bad arguments; 408
timeout; 422 the request is understood but not allowed by the rules (e.g. after-sales outside
the 7-day window, cancelling a shipped order); 429 the loop breaker cut the call off; 500 the
tool raised; 502 the backend service could not be reached or answered nonsense.

A tool backend (the demo SQLite shop, an HTTP order service, a shop's own) implements
:class:`ToolBackend`; the graph sees tools only through these shapes. (``ToolSpec``/``Answers``
are maintained by helper "tools"; ``tools.types`` re-exports them.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NotRequired, Protocol

from typing_extensions import TypedDict

CODE_OK = 0
CODE_BAD_ARGS = 400
CODE_FORBIDDEN = 403
CODE_NOT_FOUND = 404
CODE_TIMEOUT = 408
CODE_REJECTED = 422
CODE_LOOP = 429
CODE_ERROR = 500
CODE_UNAVAILABLE = 502


class ToolResult(TypedDict):
    """What every tool returns; ``valid`` is False whenever ``data`` must not be stated as fact."""

    code: int
    data: Any
    valid: bool
    source: str  # the tool name
    timestamp: float  # unix seconds
    message: str  # a plain Chinese sentence saying what happened (for the observation / the customer)


# Question forms a read tool can serve (the rules planner maps a question to one of them):
FORM_RECORD = "record"  # one record the question names by id: 「SO… 发货了吗」
FORM_LISTING = "listing"  # the caller's own records, no id needed: 「列出我还没寄出的单子」
FORM_SEARCH = "search"  # a free-text query: 「推荐一款降噪耳机」
FORMS = (FORM_RECORD, FORM_LISTING, FORM_SEARCH)


@dataclass(frozen=True, kw_only=True)
class Answers:
    """What a tool answers, declared once, so that planners need no tool names.

    Attributes:
        subject: The kind of record the tool is about (``"order"``); its id argument is
            ``f"{subject}_id"`` and that argument's schema ``pattern`` is the id format.
        fields: The data fields the tool returns that a question can ask for (the rules
            planner's asked fields, e.g. ``("status", "pay_method")``).
        default_fields: The fields stated when a question asks for none in particular.
        forms: The question forms it serves (``FORMS``).
        when_status: The subject's states for which the tool has data at all (empty: any);
            e.g. a shipment tracker has nothing for an order that has not shipped.
        labels: Field → the customer-facing label, where the tool's meaning of a field
            differs from the general one (an after-sales ticket's ``status`` is 工单状态).
        noun: The customer-facing name of what it returns (「订单」「物流信息」).
        summary_fields: The few fields a short answer mentions after the asked ones.
        arg_sources: Argument → what a planner fills it with: ``"question"`` (the customer's
            words, cut to the schema's ``maxLength``) or ``"budget"`` (an amount ceiling the
            question states, e.g. 「200元以内」). The subject id is always filled from the
            resolved reference and needs no entry.

    """

    subject: str = ""
    fields: tuple[str, ...] = ()
    default_fields: tuple[str, ...] = ()
    forms: tuple[str, ...] = ()
    when_status: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    noun: str = ""
    summary_fields: tuple[str, ...] = ()
    arg_sources: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """Return the declaration as plain JSON data (for an HTTP service's ``/tools``)."""
        return {
            "subject": self.subject,
            "fields": list(self.fields),
            "default_fields": list(self.default_fields),
            "forms": list(self.forms),
            "when_status": list(self.when_status),
            "labels": dict(self.labels),
            "noun": self.noun,
            "summary_fields": list(self.summary_fields),
            "arg_sources": dict(self.arg_sources),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Answers:
        """Return the declaration ``to_json`` produced."""
        def strings(key: str) -> tuple[str, ...]:
            return tuple(str(v) for v in data.get(key) or ())

        return cls(subject=str(data.get("subject") or ""), fields=strings("fields"),
                   default_fields=strings("default_fields"), forms=strings("forms"),
                   when_status=strings("when_status"), labels=dict(data.get("labels") or {}),
                   noun=str(data.get("noun") or ""), summary_fields=strings("summary_fields"),
                   arg_sources=dict(data.get("arg_sources") or {}))


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """A tool that really exists: the capability boundary is the set of registered specs."""

    name: str
    description: str  # Chinese, one line, shown to the customer in "what I can do"
    parameters: dict[str, Any] = field(default_factory=dict, hash=False)  # JSON schema (generated)
    write: bool = False  # changes data: needs the high-risk confirmation step
    capabilities: tuple[str, ...] = ()  # action labels it covers, e.g. ("refund", "return")
    answers: Answers = field(default_factory=Answers)

    @property
    def id_arg(self) -> str | None:
        """Return the argument naming the tool's subject record (``order_id``), if it has one."""
        key = f"{self.answers.subject}_id" if self.answers.subject else ""
        return key if key and key in self.parameters.get("properties", {}) else None

    @property
    def needs_id(self) -> bool:
        """Return True when the tool cannot run without its subject's id."""
        return bool(self.id_arg) and self.id_arg in self.parameters.get("required", [])

    def id_pattern(self) -> str | None:
        """Return the regular expression the subject id must match (from the schema), if any."""
        if not self.id_arg:
            return None
        pattern = self.parameters["properties"][self.id_arg].get("pattern")
        return str(pattern) if pattern else None


class ToolBackend(Protocol):
    """The business tools that really exist (the capability boundary)."""

    def specs(self) -> list[ToolSpec]:
        """Return every registered tool spec."""
        ...

    def call(self, name: str, args: dict[str, Any], *, user_id: str) -> ToolResult:
        """Run a tool for ``user_id`` with a timeout; never raises, returns a ToolResult."""
        ...


class ToolCallPlan(TypedDict):
    """One planned tool call (arguments never include the user id) and the planner's hints.

    ``when_status``: skip this call when this turn's earlier call on the same record shows a
    state not in the list (a shipment tracker for an unshipped order); ``resolve``/``then``:
    after listing the customer's records, follow up with tool ``then`` on the one record the
    question names; ``ref``/``ref_suffix``: the partial reference the customer wrote, resolved
    only against their own listed records; ``resolved``: this call is such a follow-up.
    """

    name: str
    args: dict[str, Any]
    when_status: NotRequired[list[str]]
    resolve: NotRequired[bool]
    then: NotRequired[str]
    ref: NotRequired[str]
    ref_suffix: NotRequired[bool]
    resolved: NotRequired[bool]


class ToolCallRecord(TypedDict):
    """A tool call that ran this turn: what was asked, what came back, whether it writes.

    ``focus`` holds the order ids the answer is about (carried into the next turn).
    """

    name: str
    args: dict[str, Any]
    result: ToolResult
    write: bool
    focus: NotRequired[list[str]]


class PendingAction(TypedDict):
    """A write action waiting for the customer's explicit confirmation."""

    tool: str
    args: dict[str, Any]
    description: str  # the exact action in plain Chinese, e.g. 「为订单 SO… 申请退款」
    requested_at: NotRequired[float]  # epoch seconds when proposed (strategies.rules.confirm expiry)
