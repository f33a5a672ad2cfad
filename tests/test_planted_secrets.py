"""Planted secrets: over 60 of more than 25 kinds, in a transcript summarized through the real CLI.

None may reach the API (what the fake server on 127.0.0.1 received), and none may be written into
the transcript's summary, also when the model's reply repeats them. The digest backend (no model)
writes none either. The secrets are made up here from a seeded generator and assembled from parts,
so that no scanner takes this file for a leak.
"""

from __future__ import annotations

import base64
import json
import os
import random
import string
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.fakeapi import FakeAnthropic
from helpers.fakeopenai import FakeOpenAI
from helpers.fakeresponses import FakeResponses, message

_RNG = random.Random(9)
LOWER, UPPER, DIGITS = string.ascii_lowercase, string.ascii_uppercase, string.digits
HEX = "0123456789abcdef"
ALNUM = LOWER + UPPER + DIGITS


def r(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def pw() -> str:
    return "Pw" + r(6) + "9x" + r(4)  # letters and digits: what a password looks like


def _planted() -> list[tuple[str, str, str]]:
    """(kind, the text that holds it, the secret itself)."""
    items: list[tuple[str, str, str]] = []

    def add(kind: str, secret: str, text: str = "{s}") -> None:
        items.append((kind, text.format(s=secret), secret))

    add("anthropic_key", "sk-" + "ant-api03-" + r(80, ALNUM + "_-"), "export ANTHROPIC_API_KEY={s}")
    add("anthropic_key", "sk-" + "ant-admin01-" + r(60), "key: {s}")
    add("openai_key", "sk-" + "proj-" + r(60), "OPENAI_API_KEY={s}")
    add("openai_key", "sk-" + r(20) + "4" + r(27), "client = OpenAI(api_key='{s}')")
    add("aws_access_key_id", "AK" + "IA" + r(16, UPPER + DIGITS), "aws_access_key_id = {s}")
    add("aws_access_key_id", "AS" + "IA" + r(16, UPPER + DIGITS), "{s} (session)")
    add("github_token", "gh" + "p_" + r(36), "git clone https://x:{s}@github.com/o/r")
    add("github_token", "gh" + "s_" + r(36), "GH_TOKEN={s}")
    add("github_token", "github" + "_pat_" + r(22) + "_" + r(59), "{s}")
    add("slack_token", "xo" + "xb-" + r(12, DIGITS) + "-" + r(13, DIGITS) + "-" + r(24), "{s}")
    add(
        "slack_token", "xa" + "pp-1-A" + r(10, UPPER + DIGITS) + "-" + r(13, DIGITS) + "-" + r(64, HEX), "{s}"
    )
    webhook = "T" + r(8, UPPER + DIGITS) + "/B" + r(10, UPPER + DIGITS) + "/" + r(24)
    add("slack_webhook", webhook, "curl -X POST https://hooks.slack" + ".com/services/{s} -d @msg.json")
    add("stripe_key", "sk_" + "live_" + r(24), "Stripe.api_key = '{s}'")
    add("stripe_key", "rk_" + "live_" + r(24), "{s}")
    add("stripe_key", "sk_" + "test_" + r(24), "STRIPE={s}")
    add("stripe_key", "wh" + "sec_" + r(32), "endpoint secret {s}")
    add("npm_token", "np" + "m_" + r(36), "//registry.npmjs.org/:_authToken={s}")
    add("npm_token", "np" + "m_" + r(36), "npm token: {s}")
    add("google_api_key", "AI" + "za" + r(35, ALNUM + "_-"), "https://maps.googleapis.com/api?key={s}")
    add("google_api_key", "AI" + "za" + r(35, ALNUM + "_-"), "{s}")
    add("google_oauth", "ya" + "29." + r(60, ALNUM + "_-"), "access token {s}")
    add("google_oauth", "GOC" + "SPX-" + r(28, ALNUM + "_-"), '"client_secret_x": "{s}"')
    add("huggingface_token", "h" + "f_" + r(34, LOWER + UPPER), "huggingface-cli login --token {s}")
    add("huggingface_token", "h" + "f_" + r(34, LOWER + UPPER), "HF {s}")
    add("gitlab_token", "gl" + "pat-" + r(20, ALNUM + "_-"), "PRIVATE-TOKEN: {s}")
    add("gitlab_token", "GR13" + "48941" + r(20, ALNUM + "_-"), "runner {s}")
    add("jwt", "ey" + "J" + r(30) + ".ey" + "J" + r(40) + "." + r(43, ALNUM + "_-"), "cookie session={s}")
    body = "\n".join(r(64, ALNUM + "+/") for _ in range(6))
    add(
        "private_key",
        "-----BEGIN " + "EC PRIVATE KEY-----\n" + body + "\n-----END EC PRIVATE KEY-----",
        "{s}",
    )
    add("url_password", pw(), "DATABASE_URL=postgres://app:{s}@db.internal:5432/prod")
    add("url_password", pw(), "redis://:{s}@cache:6379/0")
    add("authorization", r(40, ALNUM), 'curl -H "Authorization: Bearer {s}" https://api.x.dev')
    add("password", pw(), "curl -u deploy:{s} https://ci.example.org/api")
    add("password", pw(), "curl --user admin:{s} -X POST https://x.dev")
    add("password", pw(), "mysql -h db -u root -p{s} prod < dump.sql")
    add("password", pw(), "mysqldump -uroot -p{s} shop > shop.sql")
    add("password", pw(), "sshpass -p {s} ssh deploy@10.0.0.5")
    add("password", pw(), "sshpass -p'{s}' scp a b")
    add("password", pw(), "docker login --password {s} registry.example.org")
    add("password", pw(), "machine api.example.org login bot password {s}")
    add("password", pw(), "DB_PASSWORD={s}")
    add("password", pw(), 'PGPASSWORD="{s}" psql -h db')
    add("secret", r(128, HEX), "SECRET_KEY_BASE={s}")
    add("secret", r(40, ALNUM), "client_secret: '{s}'")
    add("private_key_id", r(40, HEX), '{{"type": "service_account", "private_key_id": "{s}"}}')
    add("token", r(32, ALNUM), "export GITHUB_TOKEN={s}")
    add("api_key", r(32, HEX), "x-api-key: {s}")
    add(
        "azure_storage_key",
        r(86, ALNUM + "+/") + "==",
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={s};",
    )
    add("azure_sas", r(43, ALNUM) + "%3D", "https://x.blob.core.windows.net/c/f?sv=2022&sig={s}")
    add("azure_ad_client_secret", r(3, ALNUM) + "8Q~" + r(34, ALNUM), "AZURE_CLIENT_SECRET_VALUE {s}")
    add("digitalocean_token", "do" + "p_v1_" + r(64, HEX), "doctl auth init -t {s}")
    add("shopify_token", "shp" + "at_" + r(32, HEX), "X-Shopify-Access-Token: {s}")
    add("pypi_token", "pypi-" + "AgEIcHlwaS5vcmc" + r(70, ALNUM + "_-"), "twine upload -p {s}")
    add("sendgrid_key", "SG" + "." + r(22, ALNUM + "_-") + "." + r(43, ALNUM + "_-"), "{s}")
    add("mailgun_key", "ke" + "y-" + r(32, HEX), "api:{s}")
    add("databricks_token", "da" + "pi" + r(32, HEX), "DATABRICKS={s}")
    add("doppler_token", "dp" + ".pt." + r(43, ALNUM), "{s}")
    add("vault_token", "hv" + "s." + r(90, ALNUM + "_-"), "VAULT_TOKEN_VALUE {s}")
    add("linear_key", "lin" + "_api_" + r(40, ALNUM), "{s}")
    add("postman_key", "PM" + "AK-" + r(24, HEX) + "-" + r(34, HEX), "{s}")
    add("newrelic_key", "NR" + "AK-" + r(27, UPPER + DIGITS), "{s}")
    add("age_secret_key", "AGE-SECRET-" + "KEY-1" + r(58, UPPER + DIGITS), "{s}")
    add("grafana_token", "gl" + "sa_" + r(32, ALNUM) + "_" + r(8, HEX), "{s}")
    add("sentry_token", "sn" + "trys_" + r(60, ALNUM), "SENTRY_AUTH {s}")
    add("square_token", "sq0" + "atp-" + r(22, ALNUM + "_-"), "{s}")
    add("twilio_key", "S" + "K" + r(32, HEX), "twilio api key {s}")
    add(
        "telegram_bot_token",
        r(9, DIGITS) + ":AA" + r(33, ALNUM + "_-"),
        "https://api.telegram.org/bot{s}/getMe",
    )
    add("mailchimp_key", r(32, HEX) + "-us" + r(2, DIGITS), "{s}")
    hook = r(18, DIGITS) + "/" + r(68, ALNUM + "_-")
    add("discord_webhook", hook, "https://discord" + ".com/api/webhooks/{s}")
    add("pulumi_token", "pu" + "l-" + r(40, HEX), "{s}")
    add("rubygems_token", "ruby" + "gems_" + r(48, HEX), "{s}")
    add("planetscale_token", "pscale" + "_tkn_" + r(43, ALNUM), "{s}")
    add("prefect_key", "pn" + "u_" + r(36, ALNUM), "{s}")
    # Secrets without a fixed prefix: found by their neighbours or their shape.
    key_id = "AK" + "IA" + r(16, UPPER + DIGITS)
    add("aws_secret_key", "wJ" + r(38, ALNUM + "/+"), "Access key ID,Secret access key\n" + key_id + ",{s}")
    add("aws_secret_key", "k7" + r(38, ALNUM + "/+"), "AWS Secret Access Key [None]: {s}")
    bot_id = base64.b64encode(r(19, DIGITS).encode()).decode().rstrip("=")
    add("discord_bot_token", bot_id + "." + r(6, ALNUM + "_-") + "." + r(38, ALNUM + "_-"), "bot.run('{s}')")
    add("password", pw(), "the staging db password is {s}")
    manifest = "apiVersion: v1\nkind: Secret\ndata:\n  password: {s}\ntype: Opaque"
    add("kubernetes_secret", r(30, ALNUM + "+/") + "==", manifest)
    # A plain word where the text gives it as the password; a secret key before its key id.
    add("password", "qu" + r(7, LOWER) + "x", "the wifi password is {s}.")
    add("password", "zo" + r(10, LOWER) + "k", "db:\n  host: db.internal\n  password: {s}\n  user: app")
    other_id = "AS" + "IA" + r(16, UPPER + DIGITS)
    add("aws_secret_key", "q9" + r(38, ALNUM + "/+"), "{s}\n" + other_id)
    items.extend(_planted_second())
    return items


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _planted_second() -> list[tuple[str, str, str]]:
    """Kinds that used to pass: wrapped in base64, key files' own formats, command lines, headers."""
    items: list[tuple[str, str, str]] = []

    def add(kind: str, secret: str, text: str = "{s}") -> None:
        items.append((kind, text.replace("{s}", secret), secret))

    # Inside base64: a Docker config's `auth` (user:password), a kubeconfig's client key, an encoded key.
    auth = b64("deploy:" + pw())
    add("base64_credentials", auth, '{"auths": {"ghcr.io": {"auth": "{s}"}}}')
    add("base64_credentials", b64("ci-bot:" + pw()), "//npm.example.org/:_auth={s}")
    key_body = "\n".join(r(64, ALNUM + "+/") for _ in range(8))
    pem = "-----BEGIN " + "RSA PRIVATE KEY-----\n" + key_body + "\n-----END RSA PRIVATE KEY-----\n"
    kubeconfig = (
        "users:\n- name: admin\n  user:\n    client-certificate-data: Q0VSVA==\n    client-key-data: {s}\n"
    )
    add("private_key", b64(pem), kubeconfig)
    add("anthropic_key", b64("sk-" + "ant-api03-" + r(80, ALNUM + "_-")), "echo {s} | base64 -d > key")
    add("github_token", base64.urlsafe_b64encode(("gh" + "p_" + r(36)).encode()).decode(), "TOKEN_B64={s}")
    # PuTTY's key file: the private lines.
    private = r(64, ALNUM + "+/") + "\n" + r(24, ALNUM + "+/") + "=="
    ppk = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n"
        + r(64, ALNUM + "+/")
        + "\n"
        + r(20, ALNUM)
        + "\nPrivate-Lines: 2\n{s}\nPrivate-MAC: "
        + r(64, HEX)
    )
    add("private_key", private, ppk)
    # PGP armor with headers, complete and cut off before its END line.
    armor_body = "\n".join(r(64, ALNUM + "+/") for _ in range(5)) + "\n=" + r(4, ALNUM)
    head = "-----BEGIN PGP " + "PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\nComment: release key\n\n"
    add("private_key", armor_body, head + "{s}\n-----END PGP PRIVATE KEY BLOCK-----")
    cut = "\n".join(r(64, ALNUM + "+/") for _ in range(3))
    add("private_key", cut, head + "{s}")
    # A JSON Web Key's private member.
    d = r(43, ALNUM + "_-")
    jwk = (
        '{"kty": "EC", "crv": "P-256", "x": "'
        + r(43, ALNUM + "_-")
        + '", "y": "'
        + r(43, ALNUM)
        + '", "d": "{s}"}'
    )
    add("jwk_private_key", d, jwk)
    add("jwk_private_key", r(342, ALNUM + "_-"), '{"kty":"RSA","e":"AQAB","n":"' + r(40) + '","p":"{s}"}')
    # A key wrapped across two lines at a terminal's width: its second line.
    wrapped = "sk-" + "ant-api03-" + r(90, ALNUM + "_-")
    add("anthropic_key", wrapped[80:], "$ cat key.txt\n" + wrapped[:80] + "\n{s}\n$ ")
    # Environment names ending _PASS or _PWD.
    add("password", pw(), "export SMTP_PASS={s}")
    add("password", pw(), "MYSQL_PWD={s} mysql -u root")
    add("password", "hunter" + r(4, LOWER), "REDIS_PASS={s}")
    # Command lines.
    add("password", pw(), "redis-cli -h cache.internal -p 6379 -a {s} ping")
    add("password", pw(), "echo {s} | sudo -S apt-get install -y nginx")
    add("password", pw(), "echo '{s}' | docker login -u ci --password-stdin ghcr.io")
    add("password", pw(), "curl -uadmin:{s} https://ci.example.org/api")
    add("password", "p@" + pw(), "curl -u admin:{s} https://ci.example.org/api")
    add("password", pw(), "mysql -h db -u root -p'{s}' prod")
    add("password", pw(), 'mysqldump -u root -p"{s}" shop')
    # Cookie headers.
    add("cookie", r(32, ALNUM), "Cookie: theme=dark; sessionid={s}")
    add("cookie", "s%3A" + r(40, ALNUM), "Set-Cookie: connect.sid={s}; Path=/; HttpOnly; Secure")
    add("cookie", r(48, HEX), "curl -b 'PHPSESSID={s}' https://shop.example.org/cart")
    return items


PLANTED = _planted()


def test_the_fixture_is_large_enough() -> None:
    assert len(PLANTED) >= 90
    assert len({kind for kind, _, _ in PLANTED}) >= 28
    assert len({secret for _, _, secret in PLANTED}) == len(PLANTED)


def transcript(path: Path) -> None:
    """Each planted text once as something the user said and once as a tool's output."""
    records: list[dict] = [
        {"role": "user", "content": "Set up the deploy. Notes:\n" + "\n".join(t for _, t, _ in PLANTED)}
    ]
    for n, (_, text, _) in enumerate(PLANTED):
        call = {"type": "tool_use", "id": f"t{n}", "name": "bash", "input": {"command": text}}
        records.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"$ {text}\nok"}
        records.append({"role": "user", "content": [result]})
    records.append({"role": "assistant", "content": "Deployed."})
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def leaked(text: str) -> list[str]:
    return [f"{kind}: {secret[:12]}…" for kind, _, secret in PLANTED if secret in text]


def summary_of(path: Path) -> str:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    carrier = records[0]
    assert carrier["role"] == "user" and carrier["content"].startswith("[Conversation compressed.")
    return json.dumps(records)


def test_no_planted_secret_reaches_the_api_or_the_written_summary(
    tmp_path: Path, fake_api: FakeAnthropic
) -> None:
    # The model repeats every secret in its reply, as a careless or hostile model might.
    fake_api.reply_text = lambda body: "Summary. Used " + " and ".join(t for _, t, _ in PLANTED)
    path = tmp_path / "deploy.jsonl"
    transcript(path)

    run = run_cli("summarize", "--backend", "anthropic", path, text=True, env=fake_api.env())

    assert run.returncode == 0, run.stderr
    sent = json.dumps([call.body for call in fake_api.calls("messages")])
    assert sent and leaked(sent) == []
    assert leaked(summary_of(path)) == []
    assert "[REDACTED:" in path.read_text()


@pytest.mark.parametrize("openai_api", ["chat", "responses"])
def test_no_planted_secret_reaches_an_openai_server_or_the_written_summary(
    tmp_path: Path, openai_api: str
) -> None:
    pytest.importorskip("openai", reason="the openai SDK is not installed (pip install -e '.[test]')")
    # The model repeats every secret in its reply, as a careless or hostile model might.
    repeated = "Summary. Used " + " and ".join(t for _, t, _ in PLANTED)
    path = tmp_path / "deploy.jsonl"
    transcript(path)
    with FakeOpenAI() if openai_api == "chat" else FakeResponses() as server:
        if isinstance(server, FakeOpenAI):
            server.reply_text = lambda body: repeated
        else:
            server.reply_items = lambda body: [message(repeated)]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
        args = (
            "--backend",
            "openai",
            "--openai-api",
            openai_api,
            "--model",
            "fake-model",
            "--base-url",
            server.url,
        )
        run = run_cli("summarize", *args, path, text=True, env=env)
        sent = json.dumps([call.body for call in server.calls()])
    assert run.returncode == 0, run.stderr
    assert "Deployed." in sent and leaked(sent) == []
    assert leaked(summary_of(path)) == []
    assert "[REDACTED:" in path.read_text()


def test_no_planted_secret_is_written_by_the_digest(tmp_path: Path) -> None:
    path = tmp_path / "deploy.jsonl"
    transcript(path)
    run = run_cli("summarize", "--backend", "digest", path, text=True)
    assert run.returncode == 0, run.stderr
    assert leaked(summary_of(path)) == []


@pytest.mark.parametrize(
    ("kind", "text", "secret"), PLANTED, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(PLANTED)]
)
def test_each_planted_secret_is_redacted_as_its_kind(kind: str, text: str, secret: str) -> None:
    from compactcli.core.redact import redact

    out, counts = redact(text)
    assert secret not in out
    assert counts[kind] >= 1, (out, counts)


@pytest.mark.parametrize(
    ("kind", "text", "secret"), PLANTED, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(PLANTED)]
)
def test_each_planted_secret_is_redacted_in_a_tool_input_rendered_as_json(
    kind: str, text: str, secret: str
) -> None:
    # What a model is sent of a tool call: its input as JSON, quotes and line breaks escaped.
    from compactcli.core.redact import redact

    out, counts = redact(json.dumps({"command": text}))
    assert secret not in out and secret.replace("\n", "\\n") not in out
    assert counts[kind] >= 1, (out, counts)


@pytest.mark.parametrize(
    "text",
    [
        "cygpath -u 'C:\\Users\\me\\project'",  # a drive letter, not user:password
        "docker run -u 1000:1000 node:20",  # uid:gid
        "git push -u origin HEAD:main",
        "echo $TOKEN | docker login --password-stdin registry.example.org",
        "mysql -h db -u root -p prod",  # -p alone: mysql asks for it
        "curl -u $USER:$API_TOKEN https://x.dev",  # variables, not values
        'sshpass -p "$SSHPASS" ssh host',
        "key-value-store-implementation-notes",
        "SKIP_SLOW_INTEGRATION_TESTS_IN_CI_BUILDS",
        "hf_hub_download(repo_id='org/model', filename='config.json')",
        "npm_config_registry=https://registry.npmjs.org/",
        "see https://hooks.slack.com/ for how webhooks work",
        "AIzaSy (a Google key starts like this)",
        "GR1348941 is the runner token prefix",
        # what the rules for base64, cookies, JWKs, wrapped keys and piped passwords must not take
        "aW1hZ2UvcG5nOyBjaGFyc2V0PXV0Zi04 is base64 of plain text",
        "sha256:" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "Set-Cookie: theme=dark; Path=/",
        "the Cookie: header carries the session",
        '{"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"}',
        "ghp_ is the prefix of a GitHub token\nfollowed by thirty-six characters",
        "echo $PASSWORD | sudo -S true",
        'echo "$REGISTRY_TOKEN" | docker login --password-stdin ghcr.io',
        "redis-cli -h cache -a $REDIS_PASSWORD ping",
        "first_pass = compute_pass(tree)",
        "bypass=enabled",
    ],
)
def test_lookalikes_are_left_alone(text: str) -> None:
    from compactcli.core.redact import redact

    assert redact(text)[0] == text


def test_keys_on_their_own_lines_of_a_tool_input_reach_neither_the_api_nor_the_summary(
    tmp_path: Path, fake_api: FakeAnthropic
) -> None:
    # A here-document in a command: the model is sent the tool input as JSON, where each line break is
    # the two characters backslash and n right before a key. The model's reply quotes the command the
    # same way.
    keys = ["gh" + "p_" + r(36), "sk-" + "ant-api03-" + r(80, ALNUM + "_-"), "np" + "m_" + r(36)]
    command = "cat > .env <<EOF\n" + "\n".join(keys) + "\nEOF\r\n\t" + keys[0]
    call = {"type": "tool_use", "id": "t0", "name": "bash", "input": {"command": command}}
    result = {"type": "tool_result", "tool_use_id": "t0", "content": "ok"}
    records = [
        {"role": "user", "content": "Write the deploy credentials into .env."},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
        {"role": "assistant", "content": "Written."},
    ]
    path = tmp_path / "env.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    fake_api.reply_text = lambda body: "Summary. Ran " + json.dumps({"command": command})

    run = run_cli("summarize", "--backend", "anthropic", path, text=True, env=fake_api.env())

    assert run.returncode == 0, run.stderr
    sent = json.dumps([call.body for call in fake_api.calls("messages")])
    assert "cat > .env <<EOF\\\\n[REDACTED:" in sent  # the input did arrive JSON-escaped
    summary = summary_of(path)
    assert "<<EOF\\\\n[REDACTED:" in summary
    for key in keys:
        assert key not in sent
        assert key not in summary


# -- token counting: count_tokens is a request to the model's endpoint like any other ---------------


def counted(fake_api: FakeAnthropic) -> str:
    calls = fake_api.calls("count_tokens")
    assert calls, "no count_tokens request was made"
    return json.dumps([call.body for call in calls])


API_COUNTS = {
    "estimate": ("estimate", "--method", "api"),
    "summarize-digest": ("summarize", "--backend", "digest", "--method", "api", "--threshold", "1"),
    "summarize-anthropic": ("summarize", "--backend", "anthropic", "--method", "api", "--threshold", "1"),
    "replay": ("replay", "--backend", "digest", "--estimator", "api", "--threshold", "2000"),
    "replay-compare": ("replay", "--compare", "--backend", "digest", "--estimator", "api"),
}


@pytest.mark.parametrize("command", API_COUNTS.values(), ids=API_COUNTS.keys())
def test_no_planted_secret_reaches_count_tokens(
    tmp_path: Path, fake_api: FakeAnthropic, command: tuple[str, ...]
) -> None:
    path = tmp_path / "deploy.jsonl"
    transcript(path)

    run = run_cli(*command, path, text=True, env=fake_api.env())

    assert run.returncode in (0, 1), run.stderr  # 1: estimate's gate or nothing to do is not the point
    assert "Traceback" not in run.stderr
    sent = counted(fake_api)
    assert leaked(sent) == []
    assert "[REDACTED:" in sent
    assert leaked(json.dumps([call.body for call in fake_api.calls("messages")])) == []


@pytest.mark.parametrize("command", ["summarize-digest", "replay", "replay-compare"])
def test_an_offline_backend_counting_by_the_api_says_the_api_is_called(
    tmp_path: Path, fake_api: FakeAnthropic, command: str
) -> None:
    path = tmp_path / "deploy.jsonl"
    transcript(path)

    run = run_cli(*API_COUNTS[command], path, text=True, env=fake_api.env())

    assert "backend is offline, but token counts by the api method call the Anthropic API" in run.stderr
    assert "sent the transcript, redacted" in run.stderr
    assert fake_api.calls("count_tokens")


def test_an_offline_backend_counting_offline_says_nothing_of_the_api(tmp_path: Path) -> None:
    path = tmp_path / "deploy.jsonl"
    transcript(path)
    run = run_cli("summarize", "--backend", "digest", "--threshold", "1", path, text=True)
    assert run.returncode == 0, run.stderr
    assert "Anthropic API" not in run.stderr


def test_no_redact_covers_token_counting_too(tmp_path: Path, fake_api: FakeAnthropic) -> None:
    path = tmp_path / "deploy.jsonl"
    transcript(path)

    run = run_cli(*API_COUNTS["summarize-digest"], "--no-redact", path, text=True, env=fake_api.env())

    assert run.returncode == 0, run.stderr
    assert "not redacted (--no-redact)" in run.stderr
    sent = counted(fake_api)
    # Every secret arrived as it is (in the JSON text, one with a line break is escaped).
    assert len(leaked(sent)) == sum("\n" not in secret for _, _, secret in PLANTED)
    assert "[REDACTED:" not in sent


def test_every_request_builder_redacts_the_transcript_and_keeps_the_rest(fake_api: FakeAnthropic) -> None:
    from compactcli.backends import anthropic as api

    secret = PLANTED[0][2]
    entry = api.batch_request("c1", model="m", system=f"key {secret}", user=f"use {secret}", max_tokens=77)
    assert secret not in json.dumps(entry)
    assert entry["custom_id"] == "c1"
    assert entry["params"]["model"] == "m" and entry["params"]["max_tokens"] == 77

    client = api.make_client()
    api.complete(client, model="m", system="s", user=f"use {secret}", max_tokens=64)
    api.count_tokens(
        client, model="m", messages=[{"role": "user", "content": [{"type": "text", "text": secret}]}]
    )
    api.count_tokens(client, model="m", messages=[{"role": "user", "content": secret}], redact=False)
    bodies = [call.body for call in fake_api.requests]
    assert [secret in json.dumps(body) for body in bodies] == [False, False, True]
    assert bodies[0]["max_tokens"] == 64 and bodies[0]["model"] == "m"


# -- --focus: its text is part of the prompt, and the digest's heading ------------------------------


FOCUS_SECRETS = [PLANTED[0][2], "hunter" + r(4, LOWER) + "9Q", PLANTED[1][2]]
FOCUS = f"the deploy with {FOCUS_SECRETS[0]}, DB_PASS={FOCUS_SECRETS[1]} and key: {FOCUS_SECRETS[2]}"


def test_the_focus_text_is_redacted_before_it_reaches_the_api(
    tmp_path: Path, fake_api: FakeAnthropic
) -> None:
    path = tmp_path / "deploy.jsonl"
    transcript(path)

    run = run_cli(
        "summarize", "--backend", "anthropic", "--focus", FOCUS, path, text=True, env=fake_api.env()
    )

    assert run.returncode == 0, run.stderr
    sent = json.dumps([call.body for call in fake_api.calls("messages")])
    assert "Focus: keep every detail about the deploy with [REDACTED:anthropic_key]" in sent
    assert [secret for secret in FOCUS_SECRETS if secret in sent] == []
    assert [secret for secret in FOCUS_SECRETS if secret in summary_of(path)] == []


def test_the_focus_text_is_redacted_in_the_digest(tmp_path: Path) -> None:
    path = tmp_path / "deploy.jsonl"
    records = [
        {"role": "user", "content": f"Fix {FOCUS} please"},
        {"role": "assistant", "content": f"Looking at {FOCUS} now."},
        {"role": "user", "content": "go on"},
        {"role": "assistant", "content": "Done."},
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))

    run = run_cli("summarize", "--backend", "digest", "--keep-last", "1", "--focus", FOCUS, path, text=True)

    assert run.returncode == 0, run.stderr
    summary = summary_of(path)
    assert "## About the deploy with [REDACTED:anthropic_key]" in summary
    assert [secret for secret in FOCUS_SECRETS if secret in summary] == []
