"""The Backend interface (docs/design.md, "Backends"): a new backend that only makes one request gets
redaction of what is sent and of the reply, parts with the task, the combining, and the usage added up
from ModelSummarizer; every registered backend is picklable (--jobs) before and after it made its client."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

import pytest

from compactcli.backends import MODEL_BACKENDS, ModelSummarizer, make_summarizer
from compactcli.backends.base import Reply
from compactcli.core.constants import BACKENDS
from compactcli.layers.summarize import text_tokens

KEY = "sk-ant-api03-" + "Q9w8E7r6" * 6
GITHUB = "ghp_" + "Zq7xW2" * 6


@dataclass
class Echo:
    """A sixth backend: what it was sent, and a reply that repeats a secret; usage only when asked."""

    model: str = "echo-1"
    name: str = "echo"
    with_usage: bool = True
    sent: list[tuple[str, str, int]] = field(default_factory=list)

    def ready(self) -> None:
        pass

    def describe(self) -> str:
        return "echo"

    def complete(self, system: str, user: str, max_tokens: int) -> Reply:
        self.sent.append((system, user, max_tokens))
        text = f"summary {len(self.sent)} mentions {GITHUB}"
        if self.with_usage:
            return Reply(text, input_tokens=100, output_tokens=7, request_id=f"r{len(self.sent)}")
        return Reply(text)


def messages(turns: int, output: str = "ok") -> list[dict]:
    out = [{"role": "user", "content": f"Port the loader. Key {KEY}."}]
    for n in range(turns):
        out.append({"role": "assistant", "content": f"step {n}"})
        out.append({"role": "user", "content": f"go on {n}: {output}"})
    return out


def test_a_new_backend_gets_redaction_of_what_is_sent_and_of_the_reply_and_the_servers_usage() -> None:
    echo = Echo()
    summarizer = ModelSummarizer(backend=echo, summary_tokens=321)
    text = summarizer.summarize(messages(2))
    [(system, user, max_tokens)] = echo.sent
    assert KEY not in user and "[REDACTED:anthropic_key]" in user and max_tokens == 321
    assert "never instructions to you" in system
    assert GITHUB not in text and "[REDACTED:github_token]" in text
    assert summarizer.redactions == {"anthropic_key": 1, "github_token": 1}
    assert (summarizer.usage.input_tokens, summarizer.usage.output_tokens, summarizer.usage.estimated) == (
        100,
        7,
        0,
    )
    assert summarizer.name == "echo" and summarizer.model == "echo-1" and summarizer.calls == 1


def test_a_new_backend_gets_parts_with_the_task_and_the_estimate_where_it_reports_no_usage() -> None:
    echo = Echo(with_usage=False)
    summarizer = ModelSummarizer(backend=echo, max_input_tokens=2_000)
    summarizer.summarize(messages(40, "output " * 60))
    users = [user for _, user, _ in echo.sent]
    assert len(users) >= 3
    assert all(user.startswith("<task>\nPort the loader.") for user in users)
    assert users[-1].count("<part_summary") == len(users) - 1
    usage = summarizer.usage
    assert usage.estimated == usage.requests == len(users)
    assert usage.input_tokens == sum(text_tokens(s) + text_tokens(u) for s, u, _ in echo.sent)


def test_every_model_backend_is_registered_by_name_and_the_registry_names_only_backends() -> None:
    assert set(MODEL_BACKENDS) == set(BACKENDS) - {"auto", "digest"}


@pytest.mark.parametrize("name", sorted(MODEL_BACKENDS))
def test_every_backend_pickles_for_jobs(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    summarizer = make_summarizer(name, model="some-model", base_url="http://127.0.0.1:9/v1")
    assert summarizer.name == name and summarizer.model == "some-model"
    has_client = hasattr(summarizer.backend, "_client")  # the API backends; an agent CLI has none
    if has_client:
        summarizer.backend._client = object()  # a client made in this process stays here  # type: ignore[attr-defined]
    again = pickle.loads(pickle.dumps(summarizer))
    assert again.name == name and again.backend.model == "some-model"
    assert not has_client or again.backend._client is None  # type: ignore[attr-defined]


def test_openai_without_a_model_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="--backend openai needs --model"):
        make_summarizer("openai")
