"""What a summary cost: per file the input and output tokens (the server's usage where it gives it, else the
estimate, marked), the model and the price at its list price where it is known; the run's totals; and
under --dry-run what a run would send and cost before any request. The servers are the loopback fakes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.fakeapi import FakeAnthropic
from helpers.fakeopenai import FakeOpenAI

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
    assert re.search(r"; [\d,]+ in \+ \d+ out tokens \(1 estimated\)$", done.stderr.strip())


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
