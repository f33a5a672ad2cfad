"""Configuration files through the installed command (docs/design.md, "Configuration"): where the
file is found, per-command tables, precedence file < environment < command line, errors that name
the file, and `compactcli config` showing each value's source."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import run_cli

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
USAGE = 2


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder holding the OpenAI sample: micro with the default --keep 3 would clear results
    in it, with --keep 100 it clears nothing."""
    shutil.copy(SAMPLES / "openai" / "session.jsonl", tmp_path / "t.jsonl")
    return tmp_path


def would_compact(run: subprocess.CompletedProcess) -> bool:
    """micro --check: exit 1 when something would change, 0 when nothing would."""
    assert run.returncode in (0, 1), run.stderr
    return run.returncode == 1


def test_the_sample_is_one_micro_would_change(project: Path) -> None:
    assert would_compact(run_cli("micro", "--check", "t.jsonl", cwd=project, text=True))
    assert not would_compact(run_cli("micro", "--check", "--keep", "100", "t.jsonl", cwd=project, text=True))


def test_pyproject_settings_apply_and_the_command_line_wins(project: Path) -> None:
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.compactcli]\nkeep = 100\n')
    assert not would_compact(run_cli("micro", "--check", "t.jsonl", cwd=project, text=True))
    assert would_compact(run_cli("micro", "--check", "--keep", "3", "t.jsonl", cwd=project, text=True))


def test_the_nearest_file_above_the_current_folder_is_used(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.compactcli]\nkeep = 100\n")
    below = project / "a" / "b"
    below.mkdir(parents=True)
    assert not would_compact(run_cli("micro", "--check", project / "t.jsonl", cwd=below, text=True))


def test_a_pyproject_without_the_table_is_passed_over(project: Path) -> None:
    (project / "compactcli.toml").write_text("keep = 100\n")
    inner = project / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    assert not would_compact(run_cli("micro", "--check", project / "t.jsonl", cwd=inner, text=True))


def test_a_command_table_wins_over_the_shared_keys(project: Path) -> None:
    (project / "compactcli.toml").write_text("keep = 3\n\n[micro]\nkeep = 100\n")
    assert not would_compact(run_cli("micro", "--check", "t.jsonl", cwd=project, text=True))


def test_compactcli_toml_wins_over_pyproject_in_the_same_folder(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.compactcli]\nkeep = 3\n")
    (project / "compactcli.toml").write_text("keep = 100\n")
    assert not would_compact(run_cli("micro", "--check", "t.jsonl", cwd=project, text=True))


def test_config_option_names_a_file(project: Path) -> None:
    settings = project / "elsewhere" / "team.toml"
    settings.parent.mkdir()
    settings.write_text("[tool.compactcli.micro]\nkeep = 100\n")
    assert not would_compact(
        run_cli("--config", settings, "micro", "--check", "t.jsonl", cwd=project, text=True)
    )


def test_keys_are_option_names_even_where_the_parameter_is_named_otherwise(project: Path) -> None:
    (project / "compactcli.toml").write_text('[estimate]\nformat = "csv"\nmax-tokens = 1\n')
    run = run_cli("estimate", "t.jsonl", cwd=project, text=True)
    assert run.returncode == 1  # over max-tokens = 1
    assert run.stdout.splitlines()[0].startswith("path,") or "," in run.stdout.splitlines()[0]
    assert "tokens" in run.stdout.splitlines()[0]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("kep = 100\n", "kep"),
        ("[micro]\nmodel = 'x'\n", "model"),
        ("[micro]\nkeep = 'many'\n", "keep"),
        ("[micro]\npreserve = 'Bash'\n", "preserve"),
        ("keep = \n", "not valid TOML"),
    ],
)
def test_a_bad_setting_is_a_usage_error_naming_the_file(project: Path, text: str, named: str) -> None:
    (project / "compactcli.toml").write_text(text)
    run = run_cli("config", cwd=project, text=True)
    assert run.returncode == USAGE
    assert "compactcli.toml" in run.stderr
    assert named in run.stderr
    micro = run_cli("micro", "--check", "t.jsonl", cwd=project, text=True)
    assert micro.returncode == USAGE
    assert "compactcli.toml" in micro.stderr


def test_model_precedence_file_then_environment_then_command_line(project: Path, fake_api) -> None:
    (project / "compactcli.toml").write_text('model = "model-from-file"\n')
    estimate = ["estimate", "--method", "api", "--no-cache", "t.jsonl"]

    def model_sent(*extra: str, **env: str) -> str:
        run = run_cli(*estimate, *extra, cwd=project, env=fake_api.env(**env), text=True)
        assert run.returncode == 0, run.stderr
        return fake_api.calls("count_tokens")[-1].body["model"]

    assert model_sent() == "model-from-file"
    assert model_sent(COMPACTCLI_MODEL="model-from-env") == "model-from-env"
    assert model_sent("--model", "model-from-flag", COMPACTCLI_MODEL="model-from-env") == "model-from-flag"


def test_config_shows_each_value_and_its_source(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.compactcli]\nkeep = 7\nmodel = "m-file"\n\n[tool.compactcli.micro]\nmin-chars = 50\n'
    )
    env = dict(os.environ, COMPACTCLI_MODEL="m-env")
    run = run_cli("config", "--json", "micro", "summarize", cwd=project, env=env, text=True)
    assert run.returncode == 0, run.stderr
    rows = {(r["command"], r["option"]): r for r in map(json.loads, run.stdout.splitlines())}
    pyproject = str(project / "pyproject.toml")
    assert rows["micro", "--keep"] == {
        "command": "micro",
        "option": "--keep",
        "value": 7,
        "source": f"{pyproject} [tool.compactcli]",
    }
    assert rows["micro", "--min-chars"]["source"] == f"{pyproject} [tool.compactcli.micro]"
    assert rows["micro", "--min-chars"]["value"] == 50
    assert rows["micro", "--placeholder"]["source"] == "default"
    assert rows["summarize", "--model"]["value"] == "m-env"
    assert rows["summarize", "--model"]["source"] == "environment $COMPACTCLI_MODEL"
    text = run_cli("config", "micro", cwd=project, text=True)
    assert f"configuration file: {pyproject}" in text.stdout
    assert any(line.split()[:2] == ["micro", "--keep"] and "7" in line for line in text.stdout.splitlines())


def test_estimate_top_follows_micros_configured_settings(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "anthropic" / "session.jsonl", tmp_path / "t.jsonl")

    def tools() -> set[str]:
        run = run_cli("estimate", "--top", 100, "--json", "t.jsonl", cwd=tmp_path, text=True)
        assert run.returncode == 0, run.stderr
        return {item["tool"] for item in json.loads(run.stdout)["stats"]["top"]}

    assert "bash" in tools()
    assert "read_file" not in tools()  # preserved by default
    (tmp_path / "compactcli.toml").write_text('[micro]\npreserve = ["bash"]\n')
    assert "bash" not in tools()
    assert "read_file" in tools()


# pyproject.toml files that hold [tool.compactcli] however it is written, and some that name compactcli
# elsewhere: the first are found (parsed), the others passed over without parsing them.
HOLDING = [
    "[tool.compactcli]\nkeep = 3\n",
    "[tool]\ncompactcli = {keep = 3}\n",
    "tool.compactcli.keep = 3\n",
    "tool = { compactcli = { keep = 2 } }\n",
    '[ "tool" . compactcli ]\nkeep = 1\n',
    "[ tool ]  # the tools\ncompactcli.keep = 1\n",
    '[tool]\nm = [\n  [ "a" ]\n]\ncompactcli = {}\n',
    '[tool]\nm = "]]"  # [x]\ncompactcli = {}\n',
    '["tool"]\ncompactcli = {}\n',
    "[tool.x]\nm = [  # [\n  \"]\", '[',\n]\n[tool]\ncompactcli.a = 1\n",
    '[project]\ndescription = """\n[tool.x]\n"""\n[tool]\ncompactcli.keep = 1\n',
]
NOT_HOLDING = [
    '[project]\nname = "compactcli"\n[tool.ruff]\nsrc = ["compactcli"]\n',
    '[project.scripts]\ncompactcli = "compactcli.cli:main"\n',
    '[project.optional-dependencies]\ntest = [\n    "compactcli[dask]",\n]\n',
]


@pytest.mark.parametrize("text", HOLDING + NOT_HOLDING)
def test_a_pyproject_is_found_exactly_when_it_holds_the_table(tmp_path: Path, text: str) -> None:
    import tomllib

    from compactcli.cli import config

    (tmp_path / "pyproject.toml").write_text(text)
    assert ("compactcli" in tomllib.loads(text).get("tool", {})) == (text in HOLDING)
    assert (config.find(tmp_path) is not None) == (text in HOLDING)


def test_a_pyproject_naming_compactcli_elsewhere_is_not_parsed(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(NOT_HOLDING[0] + NOT_HOLDING[1].replace("[project", "[x"))
    script = "import sys\nfrom compactcli.cli import config\nconfig.find(__import__('pathlib').Path('.'))\n"
    script += "print('tomllib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout.split() == ["False"], done.stderr
