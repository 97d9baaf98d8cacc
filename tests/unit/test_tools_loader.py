"""CSAGENT_TOOLS=package.module:factory loads a tool backend; a bad spec is one clear error."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from csagent.config import Settings, SettingsError
from shop.tools import ShopToolbox
from tools.loader import DEFAULT_SPEC, ToolsConfigError, backend_spec, load_backend


class Echo:
    """A minimal third-party backend: one read tool."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings

    def specs(self) -> list[Any]:
        from shop.decls import REGISTRY

        return REGISTRY.specs()[:1]

    def call(self, name: str, args: dict[str, Any], *, user_id: str) -> Any:
        return {"code": 0, "data": {"user": user_id}, "valid": True, "source": name, "timestamp": 0.0,
                "message": "ok"}


@pytest.fixture
def plugin(monkeypatch: pytest.MonkeyPatch) -> str:
    module = ModuleType("acme_orders")
    module.make = Echo  # type: ignore[attr-defined]
    module.broken = lambda settings: (_ for _ in ()).throw(RuntimeError("no credentials"))  # type: ignore[attr-defined]
    module.not_a_backend = lambda settings: object()  # type: ignore[attr-defined]
    module.constant = 3  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "acme_orders", module)
    return "acme_orders"


def test_default_is_the_sqlite_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CSAGENT_TOOLS", raising=False)
    settings = Settings(data_dir=tmp_path)
    assert backend_spec(settings) == DEFAULT_SPEC
    backend = load_backend(settings)
    assert isinstance(backend, ShopToolbox) and backend.db_path == tmp_path / "shop.sqlite"


def test_env_names_another_backend(plugin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CSAGENT_TOOLS", f"{plugin}:make")
    settings = Settings.from_env(data_dir=tmp_path)
    assert settings.tools == f"{plugin}:make"
    backend = load_backend(settings)
    assert isinstance(backend, Echo) and backend.settings is settings
    assert backend.call("order_lookup", {}, user_id="u9")["data"] == {"user": "u9"}


def test_call_beats_environment(plugin: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CSAGENT_TOOLS", "nowhere.at.all:factory")
    assert isinstance(load_backend(None, spec=f"{plugin}:make"), Echo)


@pytest.mark.parametrize(("spec", "message"), [
    ("shop.tools", "package.module:factory"),
    ("shop/tools.py:sqlite_backend", "package.module:factory"),
    ("no_such_module_xyz:factory", "cannot import module 'no_such_module_xyz'"),
    ("acme_orders:missing", "has no callable 'missing'"),
    ("acme_orders:constant", "has no callable 'constant'"),
    ("acme_orders:broken", "failed: RuntimeError: no credentials"),
    ("acme_orders:not_a_backend", "has no specs()/call()"),
])
def test_bad_specs_give_one_clear_error(plugin: str, spec: str, message: str) -> None:
    with pytest.raises(ToolsConfigError) as info:
        load_backend(None, spec=spec)
    assert message in str(info.value) and "CSAGENT_TOOLS" in str(info.value)
    assert info.value.exit_code == 2


def test_settings_reject_an_unloadable_spec_at_start_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CSAGENT_TOOLS", "no_such_module_xyz:factory")
    with pytest.raises(SettingsError, match="CSAGENT_TOOLS"):
        Settings.from_env(data_dir=tmp_path)


def test_settings_decide_alone_so_a_scratch_run_can_force_the_demo(plugin: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    monkeypatch.setenv("CSAGENT_TOOLS", f"{plugin}:make")
    settings = Settings.from_env(data_dir=tmp_path)
    assert isinstance(load_backend(settings), Echo)
    scratch = replace(settings, tools=None)  # what replay does for its scratch copy
    assert backend_spec(scratch) == DEFAULT_SPEC and isinstance(load_backend(scratch), ShopToolbox)
    assert backend_spec(None) == f"{plugin}:make"  # no settings: the environment
