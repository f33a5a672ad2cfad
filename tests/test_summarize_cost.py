"""What a summary cost: per file the input and output tokens (the server's usage where it gives it, else the
estimate, marked), the model and the price at its list price where it is known; the run's totals; and
under --dry-run what a run would send and cost before any request. The servers are the loopback fakes."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.fakeapi import FakeAnthropic
from helpers.fakeopenai import FakeOpenAI
from helpers.fakeresponses import FakeResponses

OK = 0
# claude-sonnet-5-5's list price, USD per million tokens (input, output), as published.
SONNET_IN, SONNET_OUT = 2.0, 10.0


def write(path: Path, turns: int = 3) -> None:
    records = [{"role": "user", "content": "Port the CSV loader to the csv module."}]
    for n in range(turns):
        records.append({"role": "assistant", "content": f"step {n} " + "details " * 50})
        records.append({"role": "user", "content": f"go on {n}"})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_each_file_has_the_servers_tokens_model_and_price_and_the_run_its_totals(
    fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    write(tmp_path / "a.jsonl")
    write(tmp_path / "b.jsonl", turns=5)
    fake_api.reply_text = lambda body: "S" * 400
    done = run_cli("summarize", "--json", tmp_path, cwd=tmp_path, text=True, env=fake_api.env())
    assert done.returncode == OK, done.stderr
    files = [json.loads(line)["stats"] for line in done.stdout.splitlines()]
    calls = fake_api.calls("messages")
    assert len(files) == len(calls) == 2
    sent = sorted(fake_api.token_count(c.body) for c in calls)  # what the server reported as usage
    assert sorted(f["input_tokens"] for f in files) == sent
    assert all(f["output_tokens"] == 400 // 4 + 1 for f in files)
    assert all(f["tokens_from"] == "server" and f["model"] == "claude-sonnet-5-5" for f in files)
    for f in files:
        assert f["cost_usd"] == pytest.approx(
            (f["input_tokens"] * SONNET_IN + f["output_tokens"] * SONNET_OUT) / 1e6
        )
    total_in, total_out = sum(sent), 2 * (400 // 4 + 1)
    total = (total_in * SONNET_IN + total_out * SONNET_OUT) / 1e6
    assert f"; {total_in:,} in + {total_out:,} out tokens, ${total:.4f}" in done.stderr


def test_verbose_lines_say_each_files_tokens_and_price(fake_api: FakeAnthropic, tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl")
    done = run_cli("summarize", "-v", tmp_path / "a.jsonl", cwd=tmp_path, text=True, env=fake_api.env())
    assert done.returncode == OK, done.stderr
    assert re.search(
        r"summarized \S+a\.jsonl \(.*; [\d,]+ in \+ \d+ out tokens \(server\), claude-sonnet-5-5, \$0\.\d{4}",
        done.stderr,
    )


def test_a_server_without_usage_or_price_is_estimated_and_marked_unpriced(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl")
    with FakeOpenAI() as api:
        api.usage = False
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
        done = run_cli(
            "summarize",
            "--backend",
            "openai",
            "--model",
            "fake-model",
            "--base-url",
            api.url,
            "--json",
            tmp_path / "a.jsonl",
            cwd=tmp_path,
            text=True,
            env=env,
        )
    assert done.returncode == OK, done.stderr
    stats = json.loads(done.stdout)["stats"]
    assert stats["tokens_from"] == "estimate" and "cost_usd" not in stats
    assert re.search(r"; [\d,]+ in \+ \d+ out tokens \(1 estimated\), cost unknown$", done.stderr.strip())


def test_dry_run_says_what_a_run_would_send_and_cost_before_any_request(
    fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    write(tmp_path / "a.jsonl")
    done = run_cli(
        "summarize", "--dry-run", "--json", tmp_path / "a.jsonl", cwd=tmp_path, text=True, env=fake_api.env()
    )
    assert done.returncode == OK, done.stderr
    assert fake_api.requests == []
    stats = json.loads(done.stdout.splitlines()[-1])["stats"]
    planned = stats["planned"]
    assert planned["requests"] == 1 and planned["max_output_tokens"] == 8192
    assert planned["input_tokens"] > stats["tokens"]  # the context, and the prompt around it
    expected = (planned["input_tokens"] * SONNET_IN + 8192 * SONNET_OUT) / 1e6
    assert planned["max_cost_usd"] == pytest.approx(expected)
    assert f"would send ~{planned['input_tokens']:,} tokens, at most ${expected:.4f}" in done.stderr


def test_dry_run_of_a_long_context_counts_its_parts_and_the_combining(
    fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    write(tmp_path / "a.jsonl", turns=60)
    done = run_cli(
        "summarize",
        "--dry-run",
        "--json",
        "--max-input-tokens",
        "3000",
        tmp_path / "a.jsonl",
        cwd=tmp_path,
        text=True,
        env=fake_api.env(),
    )
    assert done.returncode == OK, done.stderr
    stats = json.loads(done.stdout.splitlines()[-1])["stats"]
    parts = -(-stats["tokens"] // 2000)  # the budget: --max-input-tokens less the prompt's 1,000
    assert stats["planned"]["requests"] == parts + 1


# ------------------------------------------------------------------------------ OpenAI and local models

# gpt-5.5's list price on OpenAI's API, USD per million tokens (input, output), as published.
GPT55_IN, GPT55_OUT = 5.0, 30.0


def _openai(*args: object, cwd: Path, **extra: str) -> subprocess.CompletedProcess:
    """summarize --backend openai with no OpenAI or Anthropic settings from this environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(extra)
    return run_cli("summarize", "--backend", "openai", *args, cwd=cwd, text=True, env=env)


def test_a_local_server_serving_a_name_on_the_list_is_cost_unknown_and_says_so(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl")
    with FakeOpenAI(models=("gpt-5.5",)) as api:  # a gateway or local server that calls its model so
        done = _openai(
            "--model", "gpt-5.5", "--base-url", api.url, "-v", "--json", tmp_path / "a.jsonl", cwd=tmp_path
        )
    assert done.returncode == OK, done.stderr
    stats = json.loads(done.stdout)["stats"]
    assert stats["tokens_from"] == "server" and stats["model"] == "gpt-5.5"
    assert "cost_usd" not in stats and "price_from" not in stats
    assert "gpt-5.5, cost unknown (no price known; --price sets one)" in done.stderr
    assert re.search(r"; [\d,]+ in \+ \d+ out tokens, cost unknown$", done.stderr.strip())


@pytest.mark.parametrize("openai_api", ["chat", "responses"])
def test_a_price_set_in_the_settings_prices_a_custom_model(tmp_path: Path, openai_api: str) -> None:
    write(tmp_path / "a.jsonl")
    with FakeOpenAI(models=("our-model",)) if openai_api == "chat" else FakeResponses() as api:
        (tmp_path / "pyproject.toml").write_text(
            "[tool.compactcli.summarize]\n"
            f'backend = "openai"\nmodel = "our-model"\nbase-url = "{api.url}"\n'
            f'openai-api = "{openai_api}"\nprice = "0.5,0.05,2"\n'
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
        done = run_cli("summarize", "-v", "--json", tmp_path / "a.jsonl", cwd=tmp_path, text=True, env=env)
    assert done.returncode == OK, done.stderr
    stats = json.loads(done.stdout)["stats"]
    assert stats["tokens_from"] == "server" and stats["price_from"] == "settings"
    expected = (stats["input_tokens"] * 0.5 + stats["output_tokens"] * 2) / 1e6
    assert stats["cost_usd"] == pytest.approx(expected, abs=1e-6)
    assert f"${expected:.4f} at --price" in done.stderr


@pytest.mark.parametrize("model", ["gpt-5.5", "gpt-5.5-2026-04-23"])
def test_dry_run_prices_a_model_of_openais_own_api_at_its_list_price(tmp_path: Path, model: str) -> None:
    write(tmp_path / "a.jsonl")
    done = _openai(
        "--model", model, "--dry-run", "--json", tmp_path / "a.jsonl", cwd=tmp_path, OPENAI_API_KEY="k"
    )
    assert done.returncode == OK, done.stderr
    planned = json.loads(done.stdout.splitlines()[-1])["stats"]["planned"]
    expected = (planned["input_tokens"] * GPT55_IN + 8192 * GPT55_OUT) / 1e6
    assert planned["max_cost_usd"] == pytest.approx(expected) and planned["price_from"] == "list"
    assert f"at most ${expected:.4f} at {model}'s list price" in done.stdout  # the change, described


@pytest.mark.parametrize(
    ("model", "extra"),
    [
        ("gpt-4o", ()),  # no longer on OpenAI's list: unpriced, not priced at an old rate
        ("gpt-5.5", ("--max-input-tokens", "400000")),  # requests may cross the long-context price
    ],
)
def test_dry_run_leaves_what_the_list_cannot_price_unpriced(
    tmp_path: Path, model: str, extra: tuple[str, ...]
) -> None:
    write(tmp_path / "a.jsonl")
    done = _openai(
        "--model",
        model,
        *extra,
        "--dry-run",
        "--json",
        tmp_path / "a.jsonl",
        cwd=tmp_path,
        OPENAI_API_KEY="k",
    )
    assert done.returncode == OK, done.stderr
    planned = json.loads(done.stdout.splitlines()[-1])["stats"]["planned"]
    assert "max_cost_usd" not in planned
    assert f"({model}: no price known, --price sets one)" in done.stdout  # the change, described
