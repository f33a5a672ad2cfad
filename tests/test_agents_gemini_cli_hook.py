"""Gemini CLI's own SessionEnd hook, installed by `compactcli hooks install gemini-cli`, compacts the session
the moment Gemini CLI exits (the agent tier; skips unless Gemini CLI is installed, as in
tests/test_agents_gemini_cli.py). Gemini CLI runs against the fake Gemini API on 127.0.0.1 with a private
HOME; the project's compactcli.toml makes the hook run `micro --keep 1 --no-preserve`."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.agents import agent_env, run_agent
from helpers.cli import run_cli
from helpers.fakegemini import FakeGemini, contents_text, text
from test_agents_gemini_cli import FILES, FINAL, TASK, _play, gemini_binary, session_file


def test_the_installed_hook_micro_compacts_the_session_gemini_cli_just_ended(tmp_path: Path) -> None:
    binary = gemini_binary()
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    for name, content in FILES.items():
        (project / name).write_text(content)
    (project / "compactcli.toml").write_text("[hook]\nrun = 'micro --keep 1 --no-preserve'\n")
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    config = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"sessionRetention": {"enabled": False}},
    }
    settings.write_text(json.dumps(config, indent=2) + "\n")
    install = run_cli("hooks", "install", "gemini-cli", env=agent_env(home), text=True)
    assert install.returncode == 0, install.stderr

    with FakeGemini() as api:
        api.reply_parts = _play
        env = agent_env(
            home,
            GEMINI_API_KEY=api.api_key,
            GOOGLE_GEMINI_BASE_URL=api.url,
            GEMINI_CLI_TRUST_WORKSPACE="true",
        )
        run = run_agent([binary, "-p", TASK], cwd=project, env=env, timeout=240)
        assert run.returncode == 0, run.stdout + run.stderr
        assert FINAL in run.stdout
    path = session_file(home)
    log = home / ".cache" / "compactcli" / "hooks.log"
    text_now = path.read_text()
    assert text_now.count("[Previous: used read_file]") >= 3, (
        log.read_text() if log.exists() else "no hook log"
    )
    for name in sorted(FILES)[:3]:
        assert FILES[name].splitlines()[7] not in text_now, name
    manifest = [json.loads(line) for line in (path.parent / ".transcripts" / "manifest.jsonl").open()]
    assert [Path(m["source"]).name for m in manifest] == [path.name]
    assert FILES[sorted(FILES)[0]].splitlines()[7] in Path(manifest[0]["archive"]).read_text()

    session_id = json.loads(text_now.splitlines()[0])["sessionId"]
    with FakeGemini() as api:  # Gemini CLI resumes the compacted session and sends the placeholders
        api.reply_parts = lambda body: [text("Resumed.")]
        env = agent_env(
            home,
            GEMINI_API_KEY=api.api_key,
            GOOGLE_GEMINI_BASE_URL=api.url,
            GEMINI_CLI_TRUST_WORKSPACE="true",
        )
        run = run_agent([binary, "--resume", session_id, "-p", "And now?"], cwd=project, env=env, timeout=240)
        assert run.returncode == 0, run.stdout + run.stderr
        assert api.refused() == []
        sent = contents_text(api.streamed()[-1].body)
    assert sent.count("[Previous: used read_file]") >= 3
    assert FILES[sorted(FILES)[3]].splitlines()[7] in sent
