"""Domain profiles are validated at load against contracts.profile.Profile (clear errors, same data)."""

from __future__ import annotations

import copy
import json

import pytest

from contracts.errors import UsageError
from strategies.rules.profiles import PROFILES_DIR, load_profile, validate_profile


@pytest.mark.parametrize("name", ["shop", "kb-only"])
def test_built_in_profiles_load_unchanged(name):
    raw = json.loads((PROFILES_DIR / f"{name}.json").read_text(encoding="utf-8"))
    assert load_profile(name) == raw


def _shop():
    return copy.deepcopy(json.loads((PROFILES_DIR / "shop.json").read_text(encoding="utf-8")))


def test_wrong_types_are_named_by_key():
    bad = _shop()
    bad["whitelist"][0]["keywords"] = "退货"
    bad["thresholds"]["answer"] = "high"
    del bad["actions"][1]["intent"]
    with pytest.raises(UsageError) as err:
        validate_profile(bad, "my.json")
    message = str(err.value)
    assert message.startswith("my.json is not a valid profile")
    for key in ("whitelist.0.keywords", "thresholds.answer", "actions.1.intent"):
        assert key in message


def test_missing_keys_and_bad_mode_and_non_object():
    bad = _shop()
    del bad["chitchat"]
    with pytest.raises(UsageError, match="lacks keys: chitchat"):
        validate_profile(bad, "p.json")
    bad = _shop()
    bad["whitelist_mode"] = "everything"
    with pytest.raises(UsageError, match="whitelist_mode"):
        validate_profile(bad, "p.json")
    with pytest.raises(UsageError, match="JSON object"):
        validate_profile(["not", "a", "profile"], "p.json")


def test_profile_file_with_a_bad_value_is_refused(tmp_path):
    bad = _shop()
    bad["handoff_keywords"] = [1, 2]
    path = tmp_path / "custom.json"
    path.write_text(json.dumps(bad, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(UsageError, match="handoff_keywords.0"):
        load_profile(str(path))


def test_unknown_keys_and_null_tools_are_accepted():
    profile = _shop()
    profile["my_note"] = "kept"
    profile["actions"][0]["tool"] = None
    assert validate_profile(profile, "p.json")["my_note"] == "kept"
