"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.fakeapi import FakeAnthropic
from helpers.fakeopenai import FakeOpenAI

# --- the slow tiers: `pytest -m "not slow"` is the inner loop; CI and the README run everything ----

# Modules that start real agent CLIs, storage emulators or a cluster (each skips with its reason when
# what it needs is absent). A new agent's tier, tests/test_agents_<agent>.py, is slow by its name.
SLOW_MODULES = ("test_agents_", "test_object_store", "test_distributed", "test_browser_")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name.startswith(SLOW_MODULES):
            item.add_marker(pytest.mark.slow)


# --- Anthropic API: environment isolation and the fake server (tests/helpers/fakeapi.py) -----------

# Variables that would send a test to the real API, or change which model or credentials the
# code picks up from the developer's shell.
_API_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_PROFILE",
    "ANTHROPIC_CUSTOM_HEADERS",
    "COMPACTCLI_MODEL",
    "MODEL_ID",
)


@pytest.fixture(autouse=True)
def _no_real_api(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never reach the network: without `fake_api` there are no credentials at all."""
    for name in _API_ENV:
        monkeypatch.delenv(name, raising=False)
    # No credential profile from ~/.config/anthropic either.
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path_factory.mktemp("anthropic-config")))


@pytest.fixture(autouse=True)
def _private_cache(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each test remembers files in its own cache, never the developer's ~/.cache/compactcli."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache-home")))


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    """A fake Messages API on 127.0.0.1; this process's environment points the SDK at it.

    For subprocesses pass `env=fake_api.env()`; `fake_api.url` is the base URL.
    """
    with FakeAnthropic() as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", api.api_key)
        yield api


# --- end of the Anthropic API block ---------------------------------------------------------


# --- OpenAI-compatible API: environment isolation and the fake server (tests/helpers/fakeopenai.py) -


@pytest.fixture(autouse=True)
def _no_real_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reaches a real OpenAI-compatible server through the developer's environment."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible server on 127.0.0.1; this process's OPENAI_BASE_URL points at it.

    For subprocesses pass `env=fake_openai.env()`; `fake_openai.url` is the base URL (".../v1").
    """
    with FakeOpenAI() as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.url)
        yield api


# --- end of the OpenAI-compatible API block -----------------------------------------------------
