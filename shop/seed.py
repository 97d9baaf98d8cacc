"""Demo data for the fictional shop 「优选汇商城」, as plain Python literals.

Everything here is fictional and internally consistent: for every order
``amount == sum(qty * price) + shipping_fee - discount`` (yuan, two decimals), item prices
equal the product prices, orders that were shipped have a shipment, signed orders have a
``signed_at`` equal to their last shipment event, and each after-sales ticket points at an
order of the same user.

Times are Beijing local time strings ``YYYY-MM-DD HH:MM:SS``. The shop's clock is frozen at
``DEMO_NOW`` (used for the 7-day rule) so that datasets written against this data do not rot.

Demo users: ``u1001`` 张伟 (上海, Plus会员), ``u1002`` 李娜 (北京), ``u1003`` 王芳 (广东, Plus会员),
``u1004`` 刘洋 (四川), ``u1005`` 陈静 (新疆).
"""

from __future__ import annotations

from typing import Any

SHOP_NAME = "优选汇商城"

# The shop's "now": eligibility windows (7天无理由) are computed against this instant.
DEMO_NOW = "2026-11-29 10:00:00"

# Business constants the tools apply (transparent, small).
RETURN_WINDOW_DAYS = 7  # 7天无理由: days after sign-off (签收) a return/exchange may be requested
OPEN_TICKET_STATUSES = ("待审核", "处理中")
TICKET_STATUSES = ("待审核", "处理中", "已完成", "已驳回", "已撤销")
ORDER_STATUSES = ("待付款", "待发货", "已发货", "运输中", "已签收", "已取消", "退款中", "已退款")
PAY_METHODS = ("微信支付", "支付宝", "银行卡", "信用卡", "花呗", "余额")

USERS: list[dict[str, Any]] = [
    {
        "id": "u1001",
        "name": "张伟",
        "phone": "13812345678",
        "address": {
            "province": "上海市",
            "city": "上海市",
            "district": "浦东新区",
            "detail": "张江路88弄6号1202室",
        },
        "tier": "Plus会员",
        "region": "上海",
    },
    {
        "id": "u1002",
        "name": "李娜",
        "phone": "13987654321",
        "address": {
            "province": "北京市",
            "city": "北京市",
            "district": "朝阳区",
            "detail": "建国路99号院3号楼1单元501",
        },
        "tier": "普通会员",
        "region": "北京",
    },
    {
        "id": "u1003",
        "name": "王芳",
        "phone": "15011112222",
        "address": {
            "province": "广东省",
            "city": "广州市",
            "district": "天河区",
            "detail": "天河北路233号中信花园1808",
        },
        "tier": "Plus会员",
        "region": "广东",
    },
    {
        "id": "u1004",
        "name": "刘洋",
        "phone": "18623456789",
        "address": {
            "province": "四川省",
            "city": "成都市",
            "district": "武侯区",
            "detail": "人民南路四段12号7栋302",
        },
        "tier": "普通会员",
        "region": "四川",
    },
    {
        "id": "u1005",
        "name": "陈静",
        "phone": "13700001111",
        "address": {
            "province": "新疆维吾尔自治区",
            "city": "乌鲁木齐市",
            "district": "天山区",
            "detail": "解放北路20号2单元601",
        },
        "tier": "普通会员",
        "region": "新疆",
    },
]

# seven_day_return: eligible for 7天无理由退换货 (fresh food, customised, intimate and virtual
# goods are not).
PRODUCTS: list[dict[str, Any]] = [
    {"id": "P1001", "name": "优选汇 X20 5G手机 8+256GB 曜石黑", "category": "手机", "price": 2999.00, "stock": 50, "tags": ["5G", "拍照", "大电池", "快充"], "seven_day_return": True},
    {"id": "P1002", "name": "星河 Note12 5G手机 12+512GB 冰川蓝", "category": "手机", "price": 3999.00, "stock": 20, "tags": ["5G", "大屏", "长续航", "拍照"], "seven_day_return": True},
    {"id": "P1003", "name": "青松 A5 老人手机 大字大声", "category": "手机", "price": 399.00, "stock": 80, "tags": ["老人机", "长待机", "大字体"], "seven_day_return": True},
    {"id": "P2001", "name": "清风 变频冷暖空调 1.5匹 一级能效", "category": "家电", "price": 2699.00, "stock": 15, "tags": ["空调", "节能", "静音", "冷暖"], "seven_day_return": True},
    {"id": "P2002", "name": "暖阳 石墨烯电暖器 取暖器", "category": "家电", "price": 299.00, "stock": 40, "tags": ["取暖", "冬季", "速热"], "seven_day_return": True},
    {"id": "P2003", "name": "净澈 S8 扫拖一体扫地机器人", "category": "家电", "price": 1899.00, "stock": 0, "tags": ["扫地机", "智能", "拖地"], "seven_day_return": True},
    {"id": "P2004", "name": "禾米 智能电饭煲 4L", "category": "家电", "price": 269.00, "stock": 60, "tags": ["厨房", "电饭煲", "预约"], "seven_day_return": True},
    {"id": "P2005", "name": "净澈 家用空气净化器 除甲醛", "category": "家电", "price": 899.00, "stock": 25, "tags": ["净化器", "除甲醛", "静音"], "seven_day_return": True},
    {"id": "P3001", "name": "轻羽 男士连帽羽绒服 90白鸭绒", "category": "服饰", "price": 599.00, "stock": 100, "tags": ["羽绒服", "保暖", "冬季", "男装"], "seven_day_return": True},
    {"id": "P3002", "name": "云朵 女士羊毛针织开衫", "category": "服饰", "price": 239.00, "stock": 70, "tags": ["针织衫", "女装", "羊毛"], "seven_day_return": True},
    {"id": "P3003", "name": "跑者 缓震跑步鞋 男女同款", "category": "服饰", "price": 459.00, "stock": 90, "tags": ["运动鞋", "跑步", "缓震"], "seven_day_return": True},
    {"id": "P3004", "name": "贴身 纯棉内衣套装 两件装", "category": "服饰", "price": 89.00, "stock": 200, "tags": ["内衣", "纯棉", "贴身衣物"], "seven_day_return": False},
    {"id": "P4001", "name": "智利车厘子 JJ级 2斤装", "category": "生鲜", "price": 159.00, "stock": 120, "tags": ["水果", "车厘子", "冷链"], "seven_day_return": False},
    {"id": "P4002", "name": "阳澄湖大闸蟹 礼盒 8只装", "category": "生鲜", "price": 398.00, "stock": 30, "tags": ["大闸蟹", "礼盒", "冷链"], "seven_day_return": False},
    {"id": "P4003", "name": "牧场有机纯牛奶 250ml×12盒", "category": "生鲜", "price": 69.90, "stock": 300, "tags": ["牛奶", "有机", "早餐"], "seven_day_return": False},
    {"id": "P4004", "name": "赣南脐橙 5斤装", "category": "生鲜", "price": 49.90, "stock": 500, "tags": ["水果", "橙子", "产地直发"], "seven_day_return": False},
    {"id": "P5001", "name": "水润 保湿面霜 50g", "category": "美妆", "price": 189.00, "stock": 150, "tags": ["面霜", "保湿", "护肤"], "seven_day_return": True},
    {"id": "P5002", "name": "丝绒 哑光口红 #316", "category": "美妆", "price": 129.00, "stock": 180, "tags": ["口红", "彩妆", "哑光"], "seven_day_return": True},
    {"id": "P5003", "name": "清透 防晒霜 SPF50+ PA++++", "category": "美妆", "price": 99.00, "stock": 0, "tags": ["防晒", "护肤", "清爽"], "seven_day_return": True},
    {"id": "P6001", "name": "快充 65W 氮化镓充电器", "category": "数码配件", "price": 129.00, "stock": 220, "tags": ["充电器", "快充", "氮化镓"], "seven_day_return": True},
    {"id": "P6002", "name": "静享 Pro 主动降噪蓝牙耳机", "category": "数码配件", "price": 499.00, "stock": 75, "tags": ["耳机", "蓝牙", "降噪"], "seven_day_return": True},
    {"id": "P6003", "name": "磁吸 手机壳 X20 专用", "category": "数码配件", "price": 39.00, "stock": 400, "tags": ["手机壳", "磁吸", "防摔"], "seven_day_return": True},
    {"id": "P6004", "name": "20000mAh 快充移动电源", "category": "数码配件", "price": 149.00, "stock": 130, "tags": ["充电宝", "移动电源", "快充"], "seven_day_return": True},
    {"id": "P6005", "name": "Type-C 快充数据线 1米 两条装", "category": "数码配件", "price": 29.90, "stock": 600, "tags": ["数据线", "快充", "Type-C"], "seven_day_return": True},
    {"id": "P7001", "name": "《深度学习入门》", "category": "图书", "price": 79.00, "stock": 60, "tags": ["计算机", "人工智能", "入门"], "seven_day_return": True},
    {"id": "P7002", "name": "《三体》全集 典藏版", "category": "图书", "price": 93.00, "stock": 45, "tags": ["科幻", "小说", "典藏"], "seven_day_return": True},
    {"id": "P7003", "name": "儿童启蒙绘本 10册", "category": "图书", "price": 128.00, "stock": 85, "tags": ["绘本", "儿童", "启蒙"], "seven_day_return": True},
    {"id": "P8001", "name": "定制刻字 不锈钢保温杯 500ml", "category": "家居", "price": 89.00, "stock": 100, "tags": ["保温杯", "定制", "刻字"], "seven_day_return": False},
    {"id": "P8002", "name": "天然乳胶枕 护颈款", "category": "家居", "price": 199.00, "stock": 65, "tags": ["枕头", "乳胶", "护颈"], "seven_day_return": True},
    {"id": "P9001", "name": "话费充值卡 100元", "category": "虚拟商品", "price": 98.00, "stock": 999, "tags": ["话费", "充值", "虚拟"], "seven_day_return": False},
]

_PRICE = {p["id"]: p["price"] for p in PRODUCTS}
_NAME = {p["id"]: p["name"] for p in PRODUCTS}


def _item(product_id: str, qty: int) -> dict[str, Any]:
    """Return an order line for ``product_id`` at its catalogue price."""
    return {"product_id": product_id, "name": _NAME[product_id], "qty": qty, "price": _PRICE[product_id]}


def _order(
    order_id: str,
    user_id: str,
    created_at: str,
    status: str,
    items: list[dict[str, Any]],
    *,
    shipping_fee: float = 0.0,
    discount: float = 0.0,
    pay_method: str | None,
    paid_at: str | None,
    shipping_region: str,
    signed_at: str | None = None,
    cancelled_at: str | None = None,
    refund_status: str | None = None,
) -> dict[str, Any]:
    """Return one order with ``goods_amount`` and ``amount`` computed from its lines."""
    goods = round(sum(i["qty"] * i["price"] for i in items), 2)
    return {
        "id": order_id,
        "user_id": user_id,
        "created_at": created_at,
        "status": status,
        "items": items,
        "goods_amount": goods,
        "shipping_fee": shipping_fee,
        "discount": discount,
        "amount": round(goods + shipping_fee - discount, 2),
        "pay_method": pay_method,
        "paid_at": paid_at,
        "shipping_region": shipping_region,
        "signed_at": signed_at,
        "cancelled_at": cancelled_at,
        "refund_status": refund_status,  # None | 退款中 | 已退款 (money flow after a cancel/return)
    }


# Shipping: Plus会员 free; 普通会员 free from 99 yuan of goods, else 8 yuan; 新疆/西藏 15 yuan
# below 199 yuan of goods.
ORDERS: list[dict[str, Any]] = [
    # --- u1001 张伟 (上海, Plus会员) ---
    _order("SO2026101500101", "u1001", "2026-10-15 20:11:05", "已签收", [_item("P1001", 1), _item("P6003", 1)],
           discount=100.0, pay_method="信用卡", paid_at="2026-10-15 20:12:40", shipping_region="上海",
           signed_at="2026-10-18 11:24:00"),
    _order("SO2026112000102", "u1001", "2026-11-20 09:30:12", "已签收", [_item("P6002", 1)],
           pay_method="微信支付", paid_at="2026-11-20 09:31:02", shipping_region="上海",
           signed_at="2026-11-23 15:02:00"),
    _order("SO2026112500103", "u1001", "2026-11-25 21:45:33", "运输中", [_item("P3001", 1), _item("P3003", 1)],
           discount=58.0, pay_method="支付宝", paid_at="2026-11-25 21:46:10", shipping_region="上海"),
    _order("SO2026112800104", "u1001", "2026-11-28 13:05:47", "待发货", [_item("P7002", 1), _item("P7001", 1)],
           pay_method="花呗", paid_at="2026-11-28 13:06:30", shipping_region="上海"),
    _order("SO2026112900105", "u1001", "2026-11-29 08:40:19", "待付款", [_item("P4001", 1)],
           pay_method=None, paid_at=None, shipping_region="上海"),
    # --- u1002 李娜 (北京, 普通会员) ---
    _order("SO2026102000201", "u1002", "2026-10-20 10:02:44", "已签收", [_item("P2001", 1)],
           discount=200.0, pay_method="银行卡", paid_at="2026-10-20 10:04:01", shipping_region="北京",
           signed_at="2026-10-24 16:40:00"),
    _order("SO2026111100202", "u1002", "2026-11-11 00:03:21", "已签收", [_item("P5001", 2), _item("P5002", 1)],
           discount=50.0, pay_method="支付宝", paid_at="2026-11-11 00:04:05", shipping_region="北京",
           signed_at="2026-11-14 12:18:00"),
    _order("SO2026112300203", "u1002", "2026-11-23 19:20:08", "已签收", [_item("P4002", 1)],
           pay_method="微信支付", paid_at="2026-11-23 19:21:00", shipping_region="北京",
           signed_at="2026-11-25 10:35:00"),
    _order("SO2026112700204", "u1002", "2026-11-27 11:11:11", "已发货", [_item("P6001", 1), _item("P6005", 1)],
           pay_method="余额", paid_at="2026-11-27 11:11:50", shipping_region="北京"),
    _order("SO2026112600205", "u1002", "2026-11-26 22:15:36", "已取消", [_item("P3002", 1)],
           pay_method=None, paid_at=None, shipping_region="北京", cancelled_at="2026-11-26 22:40:00"),
    # --- u1003 王芳 (广东, Plus会员) ---
    _order("SO2026110100123", "u1003", "2026-11-01 14:27:09", "已退款", [_item("P1002", 1)],
           discount=300.0, pay_method="信用卡", paid_at="2026-11-01 14:28:15", shipping_region="广东",
           signed_at="2026-11-03 18:05:00", refund_status="已退款"),
    _order("SO2026111800302", "u1003", "2026-11-18 08:55:40", "退款中", [_item("P2003", 1)],
           pay_method="微信支付", paid_at="2026-11-18 08:56:22", shipping_region="广东",
           signed_at="2026-11-20 14:10:00", refund_status="退款中"),
    _order("SO2026112400303", "u1003", "2026-11-24 12:00:03", "已签收", [_item("P5003", 3)],
           pay_method="支付宝", paid_at="2026-11-24 12:01:00", shipping_region="广东",
           signed_at="2026-11-26 09:48:00"),
    _order("SO2026112800304", "u1003", "2026-11-28 17:33:29", "待发货", [_item("P7003", 1), _item("P8002", 1)],
           pay_method="微信支付", paid_at="2026-11-28 17:34:02", shipping_region="广东"),
    _order("SO2026112200305", "u1003", "2026-11-22 10:10:10", "已签收", [_item("P8001", 2)],
           pay_method="银行卡", paid_at="2026-11-22 10:11:30", shipping_region="广东",
           signed_at="2026-11-25 17:20:00"),
    # --- u1004 刘洋 (四川, 普通会员) ---
    _order("SO2026103000401", "u1004", "2026-10-30 15:42:18", "已签收", [_item("P6004", 1)],
           pay_method="微信支付", paid_at="2026-10-30 15:43:00", shipping_region="四川",
           signed_at="2026-11-02 13:30:00"),
    _order("SO2026111200402", "u1004", "2026-11-12 09:09:09", "已签收", [_item("P4004", 2)],
           pay_method="支付宝", paid_at="2026-11-12 09:10:12", shipping_region="四川",
           signed_at="2026-11-15 11:02:00"),
    _order("SO2026112100403", "u1004", "2026-11-21 20:20:20", "运输中", [_item("P1003", 1), _item("P6005", 1)],
           discount=20.0, pay_method="银行卡", paid_at="2026-11-21 20:21:45", shipping_region="四川"),
    _order("SO2026112900404", "u1004", "2026-11-29 09:15:00", "待付款", [_item("P2002", 1)],
           pay_method=None, paid_at=None, shipping_region="四川"),
    _order("SO2026112700405", "u1004", "2026-11-27 18:30:27", "待发货", [_item("P6003", 1)],
           shipping_fee=8.0, pay_method="余额", paid_at="2026-11-27 18:31:00", shipping_region="四川"),
    # --- u1005 陈静 (新疆, 普通会员) ---
    _order("SO2026102800501", "u1005", "2026-10-28 11:25:52", "已签收", [_item("P7001", 1)],
           shipping_fee=20.0, pay_method="支付宝", paid_at="2026-10-28 11:26:30", shipping_region="新疆",
           signed_at="2026-11-05 16:12:00"),
    _order("SO2026111700502", "u1005", "2026-11-17 16:48:05", "已签收", [_item("P3003", 1)],
           pay_method="信用卡", paid_at="2026-11-17 16:49:00", shipping_region="新疆",
           signed_at="2026-11-24 12:40:00"),
    _order("SO2026112400503", "u1005", "2026-11-24 10:34:56", "已发货", [_item("P2004", 1)],
           pay_method="微信支付", paid_at="2026-11-24 10:35:40", shipping_region="新疆"),
    _order("SO2026112500504", "u1005", "2026-11-25 07:50:00", "已退款", [_item("P4003", 2)],
           shipping_fee=20.0, pay_method="余额", paid_at="2026-11-25 07:51:10", shipping_region="新疆",
           cancelled_at="2026-11-25 09:05:00", refund_status="已退款"),
    _order("SO2026112800505", "u1005", "2026-11-28 21:05:15", "待发货", [_item("P5002", 1), _item("P5001", 1)],
           discount=30.0, pay_method="花呗", paid_at="2026-11-28 21:06:00", shipping_region="新疆"),
]

# Shipments for every order that left the warehouse; events oldest first. A signed order's
# last event is the sign-off (签收) at the order's ``signed_at``.
SHIPMENTS: list[dict[str, Any]] = [
    {"order_id": "SO2026101500101", "carrier": "顺丰速运", "tracking_no": "SF1402688910231", "shipped_at": "2026-10-16 09:20:00", "events": [
        {"time": "2026-10-16 09:20:00", "location": "东莞", "description": "快件已由仓库揽收"},
        {"time": "2026-10-16 22:41:00", "location": "东莞", "description": "快件已发往上海转运中心"},
        {"time": "2026-10-17 19:05:00", "location": "上海", "description": "快件已到达上海转运中心"},
        {"time": "2026-10-18 08:12:00", "location": "上海市浦东新区", "description": "快件派送中"},
        {"time": "2026-10-18 11:24:00", "location": "上海市浦东新区", "description": "已签收，签收人：本人"},
    ]},
    {"order_id": "SO2026112000102", "carrier": "京东物流", "tracking_no": "JDV009812345678", "shipped_at": "2026-11-21 10:00:00", "events": [
        {"time": "2026-11-21 10:00:00", "location": "苏州", "description": "商品已出库"},
        {"time": "2026-11-21 23:30:00", "location": "苏州", "description": "已发往上海分拣中心"},
        {"time": "2026-11-22 16:20:00", "location": "上海", "description": "已到达上海分拣中心"},
        {"time": "2026-11-23 09:05:00", "location": "上海市浦东新区", "description": "配送员正在派送"},
        {"time": "2026-11-23 15:02:00", "location": "上海市浦东新区", "description": "已签收，签收人：快递柜"},
    ]},
    {"order_id": "SO2026112500103", "carrier": "中通快递", "tracking_no": "ZT78230011456", "shipped_at": "2026-11-26 14:00:00", "events": [
        {"time": "2026-11-26 14:00:00", "location": "杭州", "description": "快件已揽收"},
        {"time": "2026-11-27 02:18:00", "location": "杭州", "description": "已发往上海中转部"},
        {"time": "2026-11-28 06:45:00", "location": "上海", "description": "已到达上海中转部"},
    ]},
    {"order_id": "SO2026102000201", "carrier": "京东物流", "tracking_no": "JDV009800020101", "shipped_at": "2026-10-21 08:30:00", "events": [
        {"time": "2026-10-21 08:30:00", "location": "廊坊", "description": "商品已出库"},
        {"time": "2026-10-22 12:00:00", "location": "北京", "description": "已到达北京朝阳站"},
        {"time": "2026-10-24 09:00:00", "location": "北京市朝阳区", "description": "大件配送员正在派送并预约安装"},
        {"time": "2026-10-24 16:40:00", "location": "北京市朝阳区", "description": "已签收，签收人：本人"},
    ]},
    {"order_id": "SO2026111100202", "carrier": "圆通速递", "tracking_no": "YT6600123498765", "shipped_at": "2026-11-12 15:00:00", "events": [
        {"time": "2026-11-12 15:00:00", "location": "上海", "description": "快件已揽收"},
        {"time": "2026-11-13 04:10:00", "location": "上海", "description": "已发往北京转运中心"},
        {"time": "2026-11-14 07:30:00", "location": "北京", "description": "已到达北京转运中心"},
        {"time": "2026-11-14 12:18:00", "location": "北京市朝阳区", "description": "已签收，签收人：前台代收"},
    ]},
    {"order_id": "SO2026112300203", "carrier": "顺丰速运", "tracking_no": "SF1402699902030", "shipped_at": "2026-11-24 08:00:00", "events": [
        {"time": "2026-11-24 08:00:00", "location": "苏州", "description": "冷链快件已揽收"},
        {"time": "2026-11-24 21:00:00", "location": "北京", "description": "已到达北京冷链中心"},
        {"time": "2026-11-25 10:35:00", "location": "北京市朝阳区", "description": "已签收，签收人：本人"},
    ]},
    {"order_id": "SO2026112700204", "carrier": "中通快递", "tracking_no": "ZT78230022041", "shipped_at": "2026-11-28 10:20:00", "events": [
        {"time": "2026-11-28 10:20:00", "location": "深圳", "description": "快件已揽收"},
        {"time": "2026-11-28 23:55:00", "location": "深圳", "description": "已发往北京转运中心"},
    ]},
    {"order_id": "SO2026110100123", "carrier": "顺丰速运", "tracking_no": "SF1402611010123", "shipped_at": "2026-11-02 09:00:00", "events": [
        {"time": "2026-11-02 09:00:00", "location": "深圳", "description": "快件已揽收"},
        {"time": "2026-11-02 20:30:00", "location": "广州", "description": "已到达广州转运中心"},
        {"time": "2026-11-03 18:05:00", "location": "广东省广州市天河区", "description": "已签收，签收人：本人"},
    ]},
    {"order_id": "SO2026111800302", "carrier": "京东物流", "tracking_no": "JDV009811180302", "shipped_at": "2026-11-19 07:40:00", "events": [
        {"time": "2026-11-19 07:40:00", "location": "佛山", "description": "商品已出库"},
        {"time": "2026-11-20 08:15:00", "location": "广州", "description": "已到达广州天河站"},
        {"time": "2026-11-20 14:10:00", "location": "广东省广州市天河区", "description": "已签收，签收人：本人"},
    ]},
    {"order_id": "SO2026112400303", "carrier": "圆通速递", "tracking_no": "YT6600224030300", "shipped_at": "2026-11-24 18:00:00", "events": [
        {"time": "2026-11-24 18:00:00", "location": "广州", "description": "快件已揽收"},
        {"time": "2026-11-25 15:30:00", "location": "广州", "description": "已到达广州天河网点"},
        {"time": "2026-11-26 09:48:00", "location": "广东省广州市天河区", "description": "已签收，签收人：快递柜"},
    ]},
    {"order_id": "SO2026112200305", "carrier": "中通快递", "tracking_no": "ZT78230030511", "shipped_at": "2026-11-23 16:00:00", "events": [
        {"time": "2026-11-23 16:00:00", "location": "永康", "description": "定制商品完成刻字，快件已揽收"},
        {"time": "2026-11-24 20:10:00", "location": "广州", "description": "已到达广州转运中心"},
        {"time": "2026-11-25 17:20:00", "location": "广东省广州市天河区", "description": "已签收，签收人：本人"},
    ]},
    {"order_id": "SO2026103000401", "carrier": "EMS", "tracking_no": "EM1200300401CN", "shipped_at": "2026-10-31 10:00:00", "events": [
        {"time": "2026-10-31 10:00:00", "location": "深圳", "description": "邮件已收寄"},
        {"time": "2026-11-01 18:00:00", "location": "成都", "description": "已到达成都邮区中心局"},
        {"time": "2026-11-02 13:30:00", "location": "四川省成都市武侯区", "description": "已妥投，签收人：本人"},
    ]},
    {"order_id": "SO2026111200402", "carrier": "顺丰速运", "tracking_no": "SF1402611120402", "shipped_at": "2026-11-13 08:00:00", "events": [
        {"time": "2026-11-13 08:00:00", "location": "赣州", "description": "快件已揽收"},
        {"time": "2026-11-14 19:30:00", "location": "成都", "description": "已到达成都转运中心"},
        {"time": "2026-11-15 11:02:00", "location": "四川省成都市武侯区", "description": "已签收，签收人：家人"},
    ]},
    {"order_id": "SO2026112100403", "carrier": "中通快递", "tracking_no": "ZT78230040321", "shipped_at": "2026-11-22 11:00:00", "events": [
        {"time": "2026-11-22 11:00:00", "location": "深圳", "description": "快件已揽收"},
        {"time": "2026-11-23 03:20:00", "location": "深圳", "description": "已发往成都转运中心"},
        {"time": "2026-11-25 22:10:00", "location": "长沙", "description": "快件中转中，因天气原因延误"},
        {"time": "2026-11-28 14:00:00", "location": "成都", "description": "已到达成都转运中心"},
    ]},
    {"order_id": "SO2026102800501", "carrier": "EMS", "tracking_no": "EM1200280501CN", "shipped_at": "2026-10-29 09:30:00", "events": [
        {"time": "2026-10-29 09:30:00", "location": "北京", "description": "邮件已收寄"},
        {"time": "2026-11-02 21:00:00", "location": "乌鲁木齐", "description": "已到达乌鲁木齐邮区中心局"},
        {"time": "2026-11-05 16:12:00", "location": "新疆维吾尔自治区乌鲁木齐市天山区", "description": "已妥投，签收人：本人"},
    ]},
    {"order_id": "SO2026111700502", "carrier": "圆通速递", "tracking_no": "YT6600117050200", "shipped_at": "2026-11-18 13:00:00", "events": [
        {"time": "2026-11-18 13:00:00", "location": "泉州", "description": "快件已揽收"},
        {"time": "2026-11-21 06:40:00", "location": "乌鲁木齐", "description": "已到达乌鲁木齐转运中心"},
        {"time": "2026-11-24 12:40:00", "location": "新疆维吾尔自治区乌鲁木齐市天山区", "description": "已签收，签收人：本人"},
    ]},
    {"order_id": "SO2026112400503", "carrier": "京东物流", "tracking_no": "JDV009811240503", "shipped_at": "2026-11-26 09:00:00", "events": [
        {"time": "2026-11-26 09:00:00", "location": "西安", "description": "商品已出库"},
        {"time": "2026-11-27 20:15:00", "location": "西安", "description": "已发往乌鲁木齐分拣中心"},
    ]},
]

TICKETS: list[dict[str, Any]] = [
    {"id": "AS202611040001", "order_id": "SO2026110100123", "user_id": "u1003", "kind": "return",
     "reason": "7天无理由退货：不喜欢颜色", "status": "已完成", "created_at": "2026-11-04 10:20:00",
     "updated_at": "2026-11-09 15:00:00", "note": "已收到退货，退款3699.00元已原路退回信用卡"},
    {"id": "AS202611220001", "order_id": "SO2026111800302", "user_id": "u1003", "kind": "refund",
     "reason": "质量问题：扫地机器人无法回充", "status": "处理中", "created_at": "2026-11-22 09:30:00",
     "updated_at": "2026-11-24 11:00:00", "note": "商家已同意，等待退款到账"},
    {"id": "AS202611160001", "order_id": "SO2026111200402", "user_id": "u1004", "kind": "refund",
     "reason": "口感不好，想退款", "status": "已驳回", "created_at": "2026-11-16 20:00:00",
     "updated_at": "2026-11-17 10:30:00", "note": "生鲜商品不支持7天无理由退货，非质量问题不予退款"},
    {"id": "AS202611250001", "order_id": "SO2026111700502", "user_id": "u1005", "kind": "exchange",
     "reason": "尺码偏小，换大一码（42码）", "status": "待审核", "created_at": "2026-11-25 18:45:00",
     "updated_at": "2026-11-25 18:45:00", "note": ""},
]
