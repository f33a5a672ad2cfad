"""`compactcli hooks install / uninstall / status` on settings files with other settings and hooks of their
own, as the installed command with a private HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cli import compactcli_command, home_env, run_cli

# A user's own settings: other keys, another SessionEnd hook and a PreToolUse hook, a four-space indent.
CLAUDE_SETTINGS = """{
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}
        ],
        "SessionEnd": [
            {
                "hooks": [
                    {"type": "command", "command": "notify-send done"}
                ]
            }
        ]
    }
}
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def _settings(home: Path, text: str = CLAUDE_SETTINGS) -> Path:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _ours(settings: dict, event: str = "SessionEnd") -> list[dict]:
    return [h for g in settings["hooks"][event] for h in g["hooks"] if " hook " in h["command"] + " "]


def test_install_keeps_every_other_setting_and_hook_and_uninstall_gives_the_file_back(home: Path) -> None:
    path = _settings(home)
    run = run_cli("hooks", "install", "claude-code", env=home_env(home), text=True)
    assert run.returncode == 0, run.stderr
    text = path.read_text()
    assert text.startswith(CLAUDE_SETTINGS[: CLAUDE_SETTINGS.index("\n            }\n        ]\n    }\n}")])
    settings = json.loads(text)
    before = json.loads(CLAUDE_SETTINGS)
    assert settings["model"] == "opus" and settings["permissions"] == before["permissions"]
    assert settings["hooks"]["PreToolUse"] == before["hooks"]["PreToolUse"]
    assert settings["hooks"]["SessionEnd"][0] == before["hooks"]["SessionEnd"][0]
    (entry,) = _ours(settings)
    assert entry["command"] == f"{compactcli_command()[0]} hook --agent claude-code"
    assert entry["timeout"] == 30  # Claude Code cancels a SessionEnd hook after 1.5 s without one
    assert '\n            {\n                "hooks": [\n' in text[len(CLAUDE_SETTINGS) - 60 :]  # its indent
    (backup,) = path.parent.glob("settings.json.compactcli-*.bak")
    assert backup.read_text() == CLAUDE_SETTINGS
    assert "installed in" in run.stderr

    run = run_cli("hooks", "uninstall", "claude-code", env=home_env(home), text=True)
    assert run.returncode == 0, run.stderr
    assert path.read_text() == CLAUDE_SETTINGS


def test_a_second_install_changes_nothing(home: Path) -> None:
    path = _settings(home)
    assert run_cli("hooks", "install", "claude-code", env=home_env(home), text=True).returncode == 0
    once = path.read_bytes()
    run = run_cli("hooks", "install", "claude-code", env=home_env(home), text=True)
    assert run.returncode == 0 and "already installed" in run.stderr
    assert path.read_bytes() == once
    assert len(list(path.parent.glob("*.bak"))) == 1


def test_dry_run_shows_the_diff_and_writes_nothing(home: Path) -> None:
    path = _settings(home)
    run = run_cli("hooks", "install", "claude-code", "--dry-run", env=home_env(home), text=True)
    assert run.returncode == 0
    added = [line for line in run.stdout.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert any('"command":' in line and " hook --agent claude-code" in line for line in added)
    assert not [
        line for line in run.stdout.splitlines() if line.startswith("-") and not line.startswith("---")
    ]
    assert path.read_text() == CLAUDE_SETTINGS
    assert list(path.parent.glob("*.bak")) == []


def test_no_settings_file_is_made_with_only_the_hook(home: Path) -> None:
    assert run_cli("hooks", "install", "claude-code", env=home_env(home), text=True).returncode == 0
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert list(settings) == ["hooks"] and list(settings["hooks"]) == ["SessionEnd"]
    assert len(_ours(settings)) == 1


@pytest.mark.parametrize(
    "text",
    ["{}\n", '{"model": "opus"}\n', '{\n  "hooks": {}\n}\n', '{\n\t"hooks": {\n\t\t"Stop": []\n\t}\n}\n'],
)
def test_install_then_uninstall_is_byte_for_byte_on_any_shape(home: Path, text: str) -> None:
    path = _settings(home, text)
    assert run_cli("hooks", "install", "claude-code", env=home_env(home), text=True).returncode == 0
    assert len(_ours(json.loads(path.read_text()))) == 1
    assert run_cli("hooks", "uninstall", "claude-code", env=home_env(home), text=True).returncode == 0
    assert path.read_text() == text


@pytest.mark.parametrize("text", ['{"hooks": {', "// comment\n{}", '{"a": 1,}', '["not", "an object"]'])
def test_a_settings_file_that_does_not_parse_is_refused_and_left_as_it_is(home: Path, text: str) -> None:
    path = _settings(home, text)
    run = run_cli("hooks", "install", "claude-code", env=home_env(home), text=True)
    assert run.returncode == 65
    assert str(path) in run.stderr
    assert path.read_text() == text
    assert list(path.parent.glob("*.bak")) == []


def test_project_settings_and_status(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    run = run_cli("hooks", "status", env=home_env(home), text=True)
    assert run.returncode == 0
    assert "claude-code: not installed" in run.stdout and "codex: not installed" in run.stdout
    assert (
        run_cli(
            "hooks", "install", "claude-code", "--project", str(project), env=home_env(home), text=True
        ).returncode
        == 0
    )
    assert (project / ".claude" / "settings.json").is_file()
    assert not (home / ".claude" / "settings.json").exists()
    run = run_cli("hooks", "status", "--project", str(project), env=home_env(home), text=True)
    assert f"claude-code: installed in {project / '.claude' / 'settings.json'}" in run.stdout


def test_codex_hooks_json_gets_a_detached_entry_within_codexs_three_seconds(home: Path) -> None:
    codex = home / ".codex"
    codex.mkdir()
    own = '{\n  "hooks": {\n    "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]\n  }\n}\n'
    (codex / "hooks.json").write_text(own)
    run = run_cli("hooks", "install", "codex-hooks", env=home_env(home), text=True)
    assert run.returncode == 0, run.stderr
    assert "/hooks" in run.stderr  # Codex runs a new hook only once the user trusts it
    settings = json.loads((codex / "hooks.json").read_text())
    assert settings["hooks"]["Stop"] == json.loads(own)["hooks"]["Stop"]
    (entry,) = _ours(settings)
    assert entry["command"].endswith(" hook --agent codex --detach") and entry["timeout"] == 3
    run = run_cli("hooks", "status", env=home_env(home), text=True)
    assert "codex-hooks: installed in" in run.stdout
    assert run_cli("hooks", "uninstall", "codex-hooks", env=home_env(home), text=True).returncode == 0
    assert (codex / "hooks.json").read_text() == own


CODEX_CONFIG = """# my Codex settings
model = "gpt-5.1-codex"

[model_providers.fake]
name = "fake"
"""


def test_codex_notify_goes_into_config_toml_before_its_tables_and_comes_out_again(home: Path) -> None:
    import tomllib

    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG)
    run = run_cli("hooks", "install", "codex", env=home_env(home), text=True)
    assert run.returncode == 0, run.stderr
    text = config.read_text()
    settings = tomllib.loads(text)
    assert settings["notify"] == [compactcli_command()[0], "hook", "--agent", "codex", "--detach"]
    assert settings["model"] == "gpt-5.1-codex" and settings["model_providers"] == {"fake": {"name": "fake"}}
    assert text.startswith('# my Codex settings\nmodel = "gpt-5.1-codex"\n\nnotify = [')
    assert run_cli("hooks", "install", "codex", env=home_env(home), text=True).returncode == 0
    assert config.read_text() == text  # idempotent
    assert "codex: installed in" in run_cli("hooks", "status", env=home_env(home), text=True).stdout
    assert run_cli("hooks", "uninstall", "codex", env=home_env(home), text=True).returncode == 0
    assert config.read_text() == CODEX_CONFIG


def test_codex_notify_of_another_program_is_left_alone(home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    own = 'notify = ["notify-send", "Codex"]\n' + CODEX_CONFIG
    config.write_text(own)
    run = run_cli("hooks", "install", "codex", env=home_env(home), text=True)
    assert run.returncode == 1
    assert "notify already runs" in run.stderr and str(config) in run.stderr
    assert config.read_text() == own


def test_codex_config_that_is_not_toml_is_refused(home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("model = \n")
    run = run_cli("hooks", "install", "codex", env=home_env(home), text=True)
    assert run.returncode == 65 and str(config) in run.stderr
    assert config.read_text() == "model = \n"


@pytest.mark.parametrize("agent", ["claude-code", "codex", "codex-hooks"])
def test_uninstall_where_nothing_is_installed_writes_nothing(home: Path, agent: str) -> None:
    run = run_cli("hooks", "uninstall", agent, env=home_env(home), text=True)
    assert run.returncode == 0 and "not installed" in run.stderr
    assert not (home / ".claude").exists() and not (home / ".codex").exists()
    path = _settings(home)
    run = run_cli("hooks", "uninstall", "claude-code", env=home_env(home), text=True)
    assert path.read_text() == CLAUDE_SETTINGS and list(path.parent.glob("*.bak")) == []


def test_nan_is_not_json_and_is_refused(home: Path) -> None:
    path = _settings(home, '{"x": NaN}\n')
    run = run_cli("hooks", "install", "claude-code", env=home_env(home), text=True)
    assert run.returncode == 65 and "NaN is not JSON" in run.stderr
    assert path.read_text() == '{"x": NaN}\n'


def test_uninstall_drops_our_group_with_its_matcher_and_keeps_the_others(home: Path) -> None:
    command = f"{compactcli_command()[0]} hook --agent claude-code"
    ours = json.dumps({"type": "command", "command": command, "timeout": 30})
    text = (
        '{"hooks": {"SessionEnd": [{"matcher": "", "hooks": [' + ours + "]}, "
        '{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}\n'
    )
    path = _settings(home, text)
    assert run_cli("hooks", "uninstall", "claude-code", env=home_env(home), text=True).returncode == 0
    assert json.loads(path.read_text()) == {
        "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}
    }


def test_status_names_another_notify_program_without_failing(home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('notify = ["notify-send", "Codex"]\n')
    run = run_cli("hooks", "status", env=home_env(home), text=True)
    assert run.returncode == 0
    assert "codex: not installed:" in run.stdout and "notify-send" in run.stdout
