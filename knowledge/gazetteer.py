"""A small gazetteer of Chinese cities: city → province-level region (pure data + lookup).

Shop policies list delivery times, fees and coverage by province or region (「东北 | 辽宁、吉林、
黑龙江」), while customers name their city (「寄到大连多久」). :func:`expand_places` finds city
names in a (normalised) query and returns the province-level regions they belong to, so BM25
can add the region's terms to the query (see :func:`knowledge.normalize.tokenize_query`).

Coverage: every provincial capital, every prefecture-level city that customers commonly name
(the large and well-known ones of each province) and the four municipalities. Province names
use the short forms shop documents use (「黑龙江」, 「内蒙古」, 「广西」, 「新疆」). City names are
matched without the 「市」 suffix; names that are also everyday words or other place names at
province level (e.g. 「吉林」 is both a city and a province) are left out or resolve to the
province of the same name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

# province-level region -> cities (short names, simplified Chinese)
PROVINCE_CITIES: dict[str, tuple[str, ...]] = {
    "北京": ("北京",),
    "天津": ("天津",),
    "上海": ("上海",),
    "重庆": ("重庆", "万州", "涪陵"),
    "河北": ("石家庄", "唐山", "秦皇岛", "邯郸", "邢台", "保定", "张家口", "承德", "沧州",
             "廊坊", "衡水", "雄安"),
    "山西": ("太原", "大同", "阳泉", "长治", "晋城", "朔州", "晋中", "运城", "忻州", "临汾",
             "吕梁"),
    "内蒙古": ("呼和浩特", "包头", "乌海", "赤峰", "通辽", "鄂尔多斯", "呼伦贝尔", "巴彦淖尔",
               "乌兰察布", "满洲里", "二连浩特"),
    "辽宁": ("沈阳", "大连", "鞍山", "抚顺", "本溪", "丹东", "锦州", "营口", "阜新", "辽阳",
             "盘锦", "铁岭", "朝阳", "葫芦岛"),
    "吉林": ("长春", "吉林", "四平", "辽源", "通化", "白山", "松原", "白城", "延边", "延吉"),
    "黑龙江": ("哈尔滨", "齐齐哈尔", "鸡西", "鹤岗", "双鸭山", "大庆", "伊春", "佳木斯",
               "七台河", "牡丹江", "黑河", "绥化", "大兴安岭"),
    "江苏": ("南京", "无锡", "徐州", "常州", "苏州", "南通", "连云港", "淮安", "盐城", "扬州",
             "镇江", "泰州", "宿迁", "昆山", "江阴", "张家港"),
    "浙江": ("杭州", "宁波", "温州", "嘉兴", "湖州", "绍兴", "金华", "衢州", "舟山", "台州",
             "丽水", "义乌"),
    "安徽": ("合肥", "芜湖", "蚌埠", "淮南", "马鞍山", "淮北", "铜陵", "安庆", "黄山", "滁州",
             "阜阳", "宿州", "六安", "亳州", "池州", "宣城"),
    "福建": ("福州", "厦门", "莆田", "三明", "泉州", "漳州", "南平", "龙岩", "宁德"),
    "江西": ("南昌", "景德镇", "萍乡", "九江", "新余", "鹰潭", "赣州", "吉安", "宜春", "抚州",
             "上饶"),
    "山东": ("济南", "青岛", "淄博", "枣庄", "东营", "烟台", "潍坊", "济宁", "泰安", "威海",
             "日照", "临沂", "德州", "聊城", "滨州", "菏泽"),
    "河南": ("郑州", "开封", "洛阳", "平顶山", "安阳", "鹤壁", "新乡", "焦作", "濮阳", "许昌",
             "漯河", "三门峡", "南阳", "商丘", "信阳", "周口", "驻马店"),
    "湖北": ("武汉", "黄石", "十堰", "宜昌", "襄阳", "鄂州", "荆门", "孝感", "荆州", "黄冈",
             "咸宁", "随州", "恩施"),
    "湖南": ("长沙", "株洲", "湘潭", "衡阳", "邵阳", "岳阳", "常德", "张家界", "益阳", "郴州",
             "永州", "怀化", "娄底", "湘西"),
    "广东": ("广州", "深圳", "珠海", "汕头", "佛山", "韶关", "湛江", "肇庆", "江门", "茂名",
             "惠州", "梅州", "汕尾", "河源", "阳江", "清远", "东莞", "中山", "潮州", "揭阳",
             "云浮"),
    "广西": ("南宁", "柳州", "桂林", "梧州", "北海", "防城港", "钦州", "贵港", "玉林", "百色",
             "贺州", "河池", "来宾", "崇左"),
    "海南": ("海口", "三亚", "三沙", "儋州", "琼海", "万宁", "文昌"),
    "四川": ("成都", "自贡", "攀枝花", "泸州", "德阳", "绵阳", "广元", "遂宁", "内江", "乐山",
             "南充", "眉山", "宜宾", "广安", "达州", "雅安", "巴中", "资阳", "凉山", "西昌"),
    "贵州": ("贵阳", "六盘水", "遵义", "安顺", "毕节", "铜仁", "凯里", "都匀"),
    "云南": ("昆明", "曲靖", "玉溪", "保山", "昭通", "丽江", "普洱", "临沧", "大理", "西双版纳",
             "景洪", "香格里拉", "红河", "楚雄"),
    "西藏": ("拉萨", "日喀则", "昌都", "林芝", "山南", "那曲", "阿里"),
    "陕西": ("西安", "铜川", "宝鸡", "咸阳", "渭南", "延安", "汉中", "榆林", "安康", "商洛"),
    "甘肃": ("兰州", "嘉峪关", "金昌", "白银", "天水", "武威", "张掖", "平凉", "酒泉", "庆阳",
             "定西", "陇南", "敦煌"),
    "青海": ("西宁", "海东", "格尔木", "德令哈", "玉树", "果洛"),
    "宁夏": ("银川", "石嘴山", "吴忠", "固原", "中卫"),
    "新疆": ("乌鲁木齐", "克拉玛依", "吐鲁番", "哈密", "喀什", "和田", "阿克苏", "伊犁",
             "伊宁", "库尔勒", "昌吉", "石河子", "阿勒泰", "塔城", "博乐"),
    "香港": ("香港", "九龙", "新界"),
    "澳门": ("澳门", "氹仔"),
    "台湾": ("台湾", "台北", "新北", "桃园", "台中", "台南", "高雄", "基隆", "新竹", "嘉义",
             "花莲"),
}

PROVINCES: tuple[str, ...] = tuple(PROVINCE_CITIES)


def _build_city_index() -> dict[str, str]:
    index: dict[str, str] = {}
    for province, cities in PROVINCE_CITIES.items():
        for city in cities:
            if city in index and index[city] != province:
                raise ValueError(f"city {city!r} listed under {index[city]} and {province}")
            index[city] = province
    return index


CITY_TO_PROVINCE: dict[str, str] = _build_city_index()
# longest names first so 「齐齐哈尔」 wins over any shorter name inside it
_CITY_RE = re.compile("|".join(sorted(map(re.escape, CITY_TO_PROVINCE), key=len, reverse=True)))


def province_of(city: str) -> str | None:
    """Return the province-level region of ``city`` (with or without 「市」), or None."""
    name = city.strip()
    if name.endswith("市") and len(name) > 2:
        name = name[:-1]
    return CITY_TO_PROVINCE.get(name)


@lru_cache(maxsize=4096)
def expand_places(text: str) -> tuple[str, ...]:
    """Return the regions of the cities named in ``text`` that ``text`` does not name itself.

    Args:
        text: a query (normalised or not: simplified Chinese is expected for matches).

    Returns:
        Province-level region names in order of first mention, without duplicates, leaving out
        regions whose own name already occurs in ``text`` (「北京」 → nothing to add;
        「寄到大连多久」 → ``("辽宁",)``).

    """
    out: list[str] = []
    for match in _CITY_RE.finditer(text):
        province = CITY_TO_PROVINCE[match.group(0)]
        if province not in out and province not in text:
            out.append(province)
    return tuple(out)


# Hong Kong, Macao and Taiwan: outside the mainland's 「国内」 in policies, named together as 「港澳台」.
SPECIAL_REGIONS = frozenset({"香港", "澳门", "台湾"})
_ABROAD_WORDS = ("国际", "境外", "国外", "海外", "出境")
_REGIONAL_WORDS = ("港澳台", "港澳", "境外", "出境")
# Words that scope a rule to the mainland, or to abroad, without naming a place: a policy's
# 「国内包裹」 and 「国际包裹」 are two regimes, as 「国内漫游」 and 「境外漫游」 are.
MAINLAND_WORDS = ("国内", "境内", "内地", "大陆")
ABROAD_SCOPE_WORDS = ("国际",)
_OPENING_SCOPE_WORDS = ("国内", "境内", "国际")  # these also open a compound (「国际包裹」「国内游」)
_BOTH_SCOPES_RE = re.compile(r"^(?:国内外|境内外|国际国内|海内外)")


def scope_word(token: str) -> str | None:
    """Return the mainland or abroad scope word a token is or opens, else None.

    「国际包裹」 → 「国际」, 「国内」 → 「国内」, 「大陆」 → 「大陆」; 「国内外」 names both scopes and
    「国际化」 is no scope, so neither counts. 「内地」「大陆」 count only as whole words.
    """
    if _BOTH_SCOPES_RE.match(token) or token.endswith("化"):
        return None
    if token in MAINLAND_WORDS or token in ABROAD_SCOPE_WORDS:
        return token
    return next((w for w in _OPENING_SCOPE_WORDS if token.startswith(w)), None)


def opposite_scope(word: str) -> tuple[str, ...]:
    """Return the words of the other scope than ``word``'s (「国际」 → the mainland words), or ()."""
    if word in MAINLAND_WORDS:
        return (*_ABROAD_WORDS, *_REGIONAL_WORDS[:2], *sorted(SPECIAL_REGIONS))
    if word in _ABROAD_WORDS:
        return MAINLAND_WORDS
    return ()


def inside_scope(place: str, scope: str) -> bool:
    """Return True when ``place`` lies in the abroad ``scope`` (「日本」 in 「国际」)."""
    return scope in _ABROAD_WORDS and scope in containers_of(place)


@lru_cache(maxsize=1)
def _world() -> dict[str, tuple[str, str]]:
    """Return {place: (country, continent)} for every place outside China in jionlp's world list.

    The list (``jionlp/dictionary/world_location.txt``) gives, per continent, each country's
    short and full name, its capital and its large cities.
    """
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("jionlp")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(next(iter(spec.submodule_search_locations))) / "dictionary" / "world_location.txt"
    places: dict[str, tuple[str, str]] = {}
    continent = ""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    for line in lines:
        if line.endswith((":", "：")):
            continent = line.rstrip(":：").strip()
            continue
        cells = line.split("\t")
        if len(cells) < 2 or cells[0] == "中国":
            continue
        country = cells[0].strip()
        names = [country, cells[1].strip(), *(c.strip() for c in cells[2:3])]
        names += [c.strip() for c in "/".join(cells[3:]).split("/")]
        for name in names:
            if len(name) >= 2 and name not in places:
                places[name] = (country, continent)
    return places


def country_of(place: str) -> str | None:
    """Return the country of a place outside China (「首尔」 → 「韩国」, 「日本」 → 「日本」), else None."""
    hit = _world().get(place.strip())
    return hit[0] if hit else None


@lru_cache(maxsize=4096)
def containers_of(place: str) -> tuple[str, ...]:
    """Return the words a policy may use for an area that holds ``place`` outside the mainland.

    A city abroad is held by its country, its continent and the words for abroad (「国际」
    「境外」…); 「香港」「澳门」「台湾」 (and their cities) by 「港澳台」「港澳」 and 「境外」. A group
    written as one character of each member (「日韩」) holds a country whose name has one of them,
    which :func:`held_by_group` checks. The mainland's own places hold nothing here.
    """
    hit = _world().get(place.strip())
    if hit:
        return tuple(dict.fromkeys((hit[0], hit[1], *_ABROAD_WORDS)))
    province = province_of(place) or (place if place in SPECIAL_REGIONS else None)
    if province in SPECIAL_REGIONS:
        return tuple(dict.fromkeys((province, *_REGIONAL_WORDS)))
    return ()


def is_abroad(place: str) -> bool:
    """Return True for a place outside the mainland (abroad, or Hong Kong, Macao, Taiwan)."""
    return bool(containers_of(place))


def held_by_group(place: str, text: str) -> bool:
    """Return True when ``text`` names a group of countries by one character each that holds ``place``.

    「日韩线路」 holds 「东京」 (日本) and 「首尔」 (韩国): the group stands alone in ``text`` (a run
    of single characters between words), every character of it the first character of a country
    of the same continent, one of them ``place``'s country.
    """
    if place.strip() not in _world():
        return False
    import jieba

    tokens = jieba.lcut(text, HMM=False)
    runs = [run for run, _ in _single_char_runs((t, "") for t in tokens)]
    return any(group_holds(word, place) for word in [*tokens, *runs])


def group_holds(group: str, place: str) -> bool:
    """Return True when ``group`` (「日韩」) is one character per country of a continent, one of them ``place``'s."""
    hit = _world().get(place.strip())
    if not hit or not 2 <= len(group) <= 4 or len(set(group)) != len(group):
        return False
    country, continent = hit
    return country[0] in group and all(ch in _first_chars(continent) for ch in group)


def _single_char_runs(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Return each run of single-character tokens (jieba leaves 「日韩」 so) with the tag of the token after it."""
    runs, run = [], ""
    for word, flag in [*pairs, ("", "")]:
        if len(word) == 1:
            run += word
            continue
        if run:
            runs.append((run, flag))
        run = ""
    return runs


@lru_cache(maxsize=16)
def _first_chars(continent: str) -> frozenset[str]:
    return frozenset(country[0] for country, cont in _world().values() if cont == continent)


@lru_cache(maxsize=1)
def _countries() -> tuple[frozenset[str], frozenset[str]]:
    """Return the short names (two or more characters) of the countries abroad, and the continents."""
    return (frozenset(c for c, _ in _world().values() if len(c) >= 2),
            frozenset(cont for _, cont in _world().values()))


@lru_cache(maxsize=4096)
def foreign_mentions(text: str) -> tuple[str, ...]:
    """Return the countries abroad (short names) and one-character-per-country groups (「日韩」) ``text`` names.

    A group is a run of single characters, each the first of a country of one continent,
    followed by the noun it qualifies (「日韩线路」), as :func:`held_by_group` reads it.
    """
    import jieba.posseg as pseg

    countries, continents = _countries()
    found = [c for c in countries if c in text]
    for run, after in _single_char_runs((p.word, p.flag) for p in pseg.cut(text, HMM=False)):
        if after.startswith("n") and 2 <= len(run) <= 4 and len(set(run)) == len(run) \
                and any(all(ch in _first_chars(c) for ch in run) for c in continents):
            found.append(run)
    return tuple(dict.fromkeys(found))
