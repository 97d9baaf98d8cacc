"""Domain profiles: the knowledge and capability boundary as configuration (profiles/*.json).

A profile is chosen by name (``shop``, ``kb-only``) or by a path to a JSON file
(``CSAGENT_DOMAIN_PROFILE``). Loaded once per process and cached.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from contracts.errors import UsageError

PROFILES_DIR = Path(__file__).resolve().parents[2] / "profiles"
REQUIRED_KEYS = ("name", "whitelist_mode", "whitelist", "blacklist", "actions", "thresholds",
                 "chitchat", "handoff_keywords", "clarify_reply", "no_capability_reply",
                 "out_of_scope_reply")


@lru_cache(maxsize=16)
def load_profile(name_or_path: str) -> dict[str, Any]:
    """Load and validate a domain profile by name or JSON path.

    Raises:
        UsageError: when the profile does not exist or lacks required keys.

    """
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILES_DIR / f"{name_or_path}.json"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PROFILES_DIR.glob("*.json")))
        raise UsageError(f"domain profile {name_or_path!r} not found (known: {known}, or a .json path)")
    try:
        profile = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"domain profile {path} is not valid JSON: {exc}") from exc
    missing = [k for k in REQUIRED_KEYS if k not in profile]
    if missing:
        raise UsageError(f"domain profile {path} lacks keys: {', '.join(missing)}")
    if profile["whitelist_mode"] not in ("keywords", "kb_coverage"):
        raise UsageError(f"domain profile {path}: whitelist_mode must be keywords or kb_coverage")
    return dict(profile)
