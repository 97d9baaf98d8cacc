"""Re-export of :mod:`strategies.deps` (the ``Deps`` seam lives below the nodes)."""

from __future__ import annotations

from strategies.deps import Deps, Embedder, ShopTools, Strategies

__all__ = ["Deps", "Embedder", "ShopTools", "Strategies"]
