"""Domain profiles: the knowledge and capability boundary as configuration (profiles/*.json).

A profile is chosen by name (``shop``, ``kb-only``) or by a path to a JSON file
(``CSAGENT_DOMAIN_PROFILE``). Loaded once per process and cached; its shape is
:class:`contracts.profile.Profile`, validated at load (a missing key or a value of the wrong
type is a :class:`UsageError` naming the file and the key).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError

from contracts.errors import UsageError
from contracts.profile import Profile

PROFILES_DIR = Path(__file__).resolve().parents[2] / "profiles"
REQUIRED_KEYS = ("name", "whitelist_mode", "whitelist", "blacklist", "actions", "thresholds",
                 "chitchat", "handoff_keywords", "clarify_reply", "no_capability_reply",
                 "out_of_scope_reply")


_PROFILE = TypeAdapter(Profile)
MAX_REPORTED_ERRORS = 5


def validate_profile(data: Any, source: str = "domain profile") -> Profile:
    """Return ``data`` as a :class:`Profile` after checking its shape (the dict itself, unchanged).

    Raises:
        UsageError: naming ``source`` and each wrong key (at most ``MAX_REPORTED_ERRORS``).

    """
    if not isinstance(data, dict):
        raise UsageError(f"{source} must be a JSON object, not {type(data).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise UsageError(f"{source} lacks keys: {', '.join(missing)}")
    if data["whitelist_mode"] not in ("keywords", "kb_coverage"):
        raise UsageError(f"{source}: whitelist_mode must be keywords or kb_coverage")
    try:
        _PROFILE.validate_python(data)
    except ValidationError as exc:
        problems = [f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}"
                    for e in exc.errors()[:MAX_REPORTED_ERRORS]]
        more = exc.error_count() - len(problems)
        raise UsageError(f"{source} is not a valid profile: {'; '.join(problems)}"
                         + (f" (and {more} more)" if more > 0 else "")) from exc
    return cast(Profile, dict(data))  # validated above: the shape is the contract's


@lru_cache(maxsize=16)
def load_profile(name_or_path: str) -> Profile:
    """Load and validate a domain profile by name or JSON path.

    Raises:
        UsageError: when the profile does not exist, is not JSON or does not have the shape of
            :class:`contracts.profile.Profile`.

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
    return validate_profile(profile, f"domain profile {path}")
