"""The demo order system's tools, declared once: names, argument models, what each answers.

Both backends of the demo order system use these declarations: the SQLite toolbox
(:mod:`shop.tools`) and the HTTP order-service client (:mod:`shop.http_client`). Planners
never see these names; they read the generated specs (:meth:`tools.registry.ToolDecl.spec`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tools.registry import ToolDecl, ToolRegistry
from tools.types import FORM_LISTING, FORM_RECORD, FORM_SEARCH, Answers

ORDER_ID_PATTERN = r"^SO\d{13}$"
MAX_REASON_CHARS = 200
# Order states with a shipment behind them (a tracker has data only for these).
SHIPPED_STATUSES = ("已发货", "运输中", "已签收", "退款中", "已退款")

OrderId = Annotated[
    str,
    Field(pattern=ORDER_ID_PATTERN, description="订单号，例如 SO2026110100123"),
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _clean_ids(cls, data: Any) -> Any:
        """Strip and upper-case record ids (``*_id``) before their pattern is checked."""
        if isinstance(data, dict):
            return {k: v.strip().upper() if isinstance(v, str) and str(k).endswith("_id") else v
                    for k, v in data.items()}
        return data


class OrderLookupArgs(_Args):
    """Arguments of the order lookup: an order id, or none for the caller's recent orders."""

    order_id: OrderId | None = None


class OrderIdArgs(_Args):
    """Arguments naming one of the caller's orders."""

    order_id: OrderId


class AfterSalesArgs(_Args):
    """Arguments of an after-sales request."""

    order_id: OrderId
    kind: Literal["return", "refund", "exchange"] = Field(
        description="售后类型：return 退货退款，refund 仅退款，exchange 换货")
    reason: str = Field(min_length=1, max_length=MAX_REASON_CHARS, description="申请原因")


class ProductQueryArgs(_Args):
    """Arguments of the product recommendation."""

    query: str = Field(min_length=1, max_length=200, description="想要的商品或需求")
    category: str | None = Field(
        default=None, description="品类，例如 手机、家电、服饰、生鲜、美妆、数码配件、图书、家居")
    max_price: float | None = Field(default=None, gt=0, description="最高价格（元）")


ORDER_FIELDS = ("status", "signed_at", "pay_method", "amount", "items")
SHIPMENT_FIELDS = ("carrier", "tracking_no", "latest", "signed_by")

DECLS: tuple[ToolDecl, ...] = (
    ToolDecl(
        name="order_lookup",
        description="查询订单：按订单号查看订单详情（商品、金额、状态、支付方式），不填订单号则列出您最近的订单",
        args=OrderLookupArgs,
        capabilities=("order_query",),
        answers=Answers(subject="order", fields=ORDER_FIELDS, default_fields=("status",),
                        forms=(FORM_RECORD, FORM_LISTING), noun="订单",
                        summary_fields=("status", "items", "amount")),
    ),
    ToolDecl(
        name="logistics_tracking",
        description="查询物流：查看已发货订单的快递公司、运单号和物流轨迹",
        args=OrderIdArgs,
        capabilities=("logistics_query",),
        answers=Answers(subject="order", fields=SHIPMENT_FIELDS,
                        default_fields=("carrier", "tracking_no", "latest"), forms=(FORM_RECORD,),
                        when_status=SHIPPED_STATUSES, noun="物流信息",
                        summary_fields=("status", "carrier", "tracking_no", "latest")),
    ),
    ToolDecl(
        name="after_sales_apply",
        description="申请售后：为已签收7天内的订单提交退货、仅退款或换货申请（需您确认）",
        args=AfterSalesArgs,
        write=True,
        capabilities=("return", "refund", "exchange", "after_sales"),
        answers=Answers(subject="order", forms=(FORM_RECORD,), noun="售后申请",
                        labels={"status": "工单状态", "created_at": "申请时间"},
                        arg_sources={"reason": "question"}),
    ),
    ToolDecl(
        name="order_cancel",
        # 待付款 / 待发货 are the two states of the shop's order state machine (shop/db.py) from
        # which an order can be cancelled (shop/tools.py enforces it): the tool's precondition.
        # No rule matches a question against this text: a description reaches only the LLM's
        # tool list (strategies/llm) and the desk's action label (nodes/respond.py).
        description="取消订单：取消尚未付款或尚未发货的订单，已付款项原路退回（需您确认）",
        args=OrderIdArgs,
        write=True,
        capabilities=("cancel_order",),
        answers=Answers(subject="order", forms=(FORM_RECORD,), noun="订单取消",
                        labels={"status": "当前订单状态"}),
    ),
    ToolDecl(
        name="product_recommend",
        description="商品推荐：按您的需求、品类和预算推荐在售商品",
        args=ProductQueryArgs,
        capabilities=("product_recommend",),
        answers=Answers(subject="product", forms=(FORM_SEARCH,), noun="推荐商品",
                        arg_sources={"query": "question", "max_price": "budget"}),
    ),
)

REGISTRY = ToolRegistry(DECLS)
