"""Secret redaction: every kind is found, ordinary text is left alone, and it is idempotent."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactcli.core.redact import redact, redact_obj

# Fake secrets are assembled from parts so that secret scanners do not flag this file.
ANTHROPIC_KEY = "sk-" + "ant-api03-" + "Xy9_" * 20 + "AA"
OPENAI_KEY = "sk-" + "abcdEFGH1234" * 4
OPENAI_PROJECT_KEY = "sk-" + "proj-" + "Ab3_cD-" * 12
AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SESSION_KEY_ID = "ASIA" + "Q2W3E4R5T6Y7U8I9"
GITHUB_TOKENS = ["gh" + p + "_" + "a1B2c3D4e5" * 4 for p in "pousr"] + ["github_" + "pat_" + "11AB" * 15]
SLACK_TOKEN = "xox" + "b-123456789012-1234567890123-AbCdEfGhIjKlMnOp"
JWT = (
    "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM_BODY = "\n".join(["MIIEowIBAAKCAQEA" + "q7Zb" * 12] + ["Zm9vYmFyYmF6cXV4" * 4] * 5 + ["dGVzdA=="])
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"  # 40 characters, mixed case
DISCORD_BOT_TOKEN = "MTE3NjU0MzIxMDk4NzY1NDMyMQ" + ".GaBcDe." + "abcdefghijklmnopqrstuvwxyz0123456789AB"
PEM_KEY = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + PEM_BODY + "\n-----END RSA PRIVATE KEY-----"
# One key of each common kind, with the kind its replacement names.
KNOWN_KEYS = [
    (ANTHROPIC_KEY, "anthropic_key"),
    (OPENAI_KEY, "openai_key"),
    (OPENAI_PROJECT_KEY, "openai_key"),
    (AWS_KEY_ID, "aws_access_key_id"),
    (AWS_SESSION_KEY_ID, "aws_access_key_id"),
    *[(token, "github_token") for token in GITHUB_TOKENS],
    (SLACK_TOKEN, "slack_token"),
    (JWT, "jwt"),
]


def redacted(text: str) -> str:
    return redact(text)[0]


@pytest.mark.parametrize(
    ("secret", "kind"),
    [
        *KNOWN_KEYS,
        ("sk-" + "ant-api03-real-secret", "anthropic_key"),  # the doc example in the corpus
        (PEM_KEY, "private_key"),
    ],
)
def test_a_key_in_text_is_replaced_whole(secret: str, kind: str) -> None:
    text = f"before {secret} after"
    out, counts = redact(text)
    assert out == f"before [REDACTED:{kind}] after"
    assert counts == Counter({kind: 1})


@pytest.mark.parametrize(
    ("text", "expected", "kind"),
    [
        (
            "DATABASE_URL=postgres://app:hunter2@db.example.com:5432/prod",
            "DATABASE_URL=postgres://app:[REDACTED:url_password]@db.example.com:5432/prod",
            "url_password",
        ),
        (
            "redis://:s3cr3t@cache.local:6379/0",
            "redis://:[REDACTED:url_password]@cache.local:6379/0",
            "url_password",
        ),
        (
            'curl -H "Authorization: Bearer abcDEF123456ghi" https://x',
            'curl -H "Authorization: Bearer [REDACTED:authorization]" https://x',
            "authorization",
        ),
        (
            '{"authorization": "Basic dXNlcjpwYXNzd29yZA=="}',
            '{"authorization": "Basic [REDACTED:authorization]"}',
            "authorization",
        ),
        ('password = "hunter22"', 'password = "[REDACTED:password]"', "password"),
        ("DB_PASSWORD=Tr0ub4dor&3", "DB_PASSWORD=[REDACTED:password]&3", "password"),
        ("export GITHUB_TOKEN=abc123def456", "export GITHUB_TOKEN=[REDACTED:token]", "token"),
        ('{"api_key": "k-9f8e7d6c"}', '{"api_key": "[REDACTED:api_key]"}', "api_key"),
        ("x-api-key: 0123456789abcdef", "x-api-key: [REDACTED:api_key]", "api_key"),
        ("client_secret: 'Zq8-x_Lm'", "client_secret: '[REDACTED:secret]'", "secret"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = [REDACTED:api_key]",
            "api_key",
        ),
        (
            "https://api.example.com/v1?token=f00dfeed42&x=1",
            "https://api.example.com/v1?token=[REDACTED:token]&x=1",
            "token",
        ),
        # JSON written inside a JSON string: the quotes are escaped.
        ('{\\"password\\": \\"p4ssw0rd\\"}', '{\\"password\\": \\"[REDACTED:password]\\"}', "password"),
        ("PASSWORD: 'Hunter22'", "PASSWORD: '[REDACTED:password]'", "password"),
        # Prose: "the password is X", where X does not read as a word.
        ("my password is hunter2", "my password is [REDACTED:password]", "password"),
        ("the password is 'Tr0ub4dor'", "the password is '[REDACTED:password]'", "password"),
        ("Password was: hunter2", "Password was: [REDACTED:password]", "password"),
        (
            "Set the admin password to Tr0ub4dor&3.",
            "Set the admin password to [REDACTED:password].",
            "password",
        ),
        (
            "The DB password for staging was s3cr3t!x",
            "The DB password for staging was [REDACTED:password]",
            "password",
        ),
        # Discord bot tokens wherever they stand (a dotted token reads as code to the assignment rule).
        (
            f"DISCORD_TOKEN={DISCORD_BOT_TOKEN}",
            "DISCORD_TOKEN=[REDACTED:discord_bot_token]",
            "discord_bot_token",
        ),
        (
            f"client.run('{DISCORD_BOT_TOKEN}')",
            "client.run('[REDACTED:discord_bot_token]')",
            "discord_bot_token",
        ),
    ],
)
def test_only_the_secret_part_is_replaced(text: str, expected: str, kind: str) -> None:
    out, counts = redact(text)
    assert out == expected
    assert counts == Counter({kind: 1})


def test_a_key_inside_an_assignment_is_counted_once() -> None:
    out, counts = redact(f'ANTHROPIC_API_KEY="{ANTHROPIC_KEY}"')
    assert out == 'ANTHROPIC_API_KEY="[REDACTED:anthropic_key]"'
    assert counts == Counter({"anthropic_key": 1})


def test_a_private_key_with_json_escaped_newlines() -> None:
    escaped = PEM_KEY.replace("\n", "\\n")
    assert redacted(f'{{"content": "{escaped}\\nok"}}') == '{"content": "[REDACTED:private_key]\\nok"}'


def test_a_truncated_private_key_is_redacted() -> None:
    head = "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + PEM_BODY.split("\n", 3)[0] + "\n"
    out, counts = redact("$ head -2 id_ed25519\n" + head)
    assert out == "$ head -2 id_ed25519\n[REDACTED:private_key]\n"
    assert counts["private_key"] == 1


@pytest.mark.parametrize(
    "text",
    [
        "the token count is 5",
        "input_tokens: 12345, output_tokens: 67",
        "max_tokens=1024",
        "token_count = len(tokens)",
        "implement the password reset flow",
        "Password: required",
        "token = get_token(request)",
        "token=new_token",
        "self.secret = secret",
        'secret = os.environ["SECRET"]',
        'api_key = os.getenv("ANTHROPIC_API_KEY")',
        "export TOKEN=$GITHUB_TOKEN",
        "password: ${DB_PASSWORD}",
        '"password": {"type": "string"}',
        '{"token": "string", "secret": null}',
        "if token == 'EOF':",
        "Token: gho_************************************",  # already masked by gh
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # sha256
        "123e4567-e89b-12d3-a456-426614174000",  # uuid
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "task-management-subsystem-for-desk-apps",  # "sk-" inside words
        "skeleton-key-generation-module-v2",
        "https://example.com:8080/path/@user",
        "git@github.com:org/repo.git",
        "ssh://git@github.com:22/org/repo.git",
        'pattern = r"-----BEGIN RSA PRIVATE KEY-----"',  # a regex quoting the header
        "-----BEGIN RSA PRIVATE KEY-----\nThis is how a key file starts.",
        "twilio-api-key: logs/2025/c7d2069e.jsonl",
        "AKIAshort and ASIA is a continent",
        "eyJhbGciOiJIUzI1NiJ9 alone is just base64",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == (text, Counter())


def test_redacting_twice_changes_nothing_more() -> None:
    text = "\n".join(
        [
            f"key={ANTHROPIC_KEY} and {OPENAI_KEY}",
            f"aws {AWS_KEY_ID} gh {GITHUB_TOKENS[0]} slack {SLACK_TOKEN}",
            f"jwt {JWT}",
            PEM_KEY,
            "postgres://u:pw12345@h/db",
            "Authorization: Bearer abcdef123456",
            'password="hunter22" token: abc123xyz',
        ]
    )
    once, counts = redact(text)
    assert sum(counts.values()) == 11
    assert redact(once) == (once, Counter())


def test_no_secret_survives() -> None:
    secrets = [ANTHROPIC_KEY, OPENAI_KEY, AWS_KEY_ID, *GITHUB_TOKENS, SLACK_TOKEN, JWT, "hunter22"]
    text = " ; ".join(secrets[:-1]) + ' ; password="hunter22"'
    out = redacted(text)
    for secret in secrets:
        assert secret not in out


def test_redact_obj_walks_strings_only_and_keeps_keys() -> None:
    obj = {
        "role": "user",
        "content": [
            {"type": "text", "text": f"my key is {ANTHROPIC_KEY}"},
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": f"AWS={AWS_KEY_ID}",
                "is_error": False,
            },
        ],
        "password": 12345678,  # not a string: kept
        "token": None,
    }
    out, counts = redact_obj(obj)
    assert out == {
        "role": "user",
        "content": [
            {"type": "text", "text": "my key is [REDACTED:anthropic_key]"},
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "AWS=[REDACTED:aws_access_key_id]",
                "is_error": False,
            },
        ],
        "password": 12345678,
        "token": None,
    }
    assert counts == Counter({"anthropic_key": 1, "aws_access_key_id": 1})
    assert obj["content"][0]["text"].endswith(ANTHROPIC_KEY)  # the input is not mutated
    assert redact_obj(out) == (out, Counter())


def test_unicode_that_changes_length_when_lower_cased() -> None:
    # "İ" lower-cases to two characters; the case-insensitive rules must still line up.
    out, counts = redact("İİİ PASSWORD=Hunter22x and Authorization: Bearer abcdef123456")
    assert out == "İİİ PASSWORD=[REDACTED:password] and Authorization: Bearer [REDACTED:authorization]"
    assert counts == Counter({"password": 1, "authorization": 1})


_FRAGMENTS = st.sampled_from(
    [
        ANTHROPIC_KEY,
        OPENAI_KEY,
        AWS_KEY_ID,
        GITHUB_TOKENS[1],
        SLACK_TOKEN,
        JWT,
        PEM_KEY,
        "postgres://u:pw12345@h/db",
        "Authorization: Bearer abcdef123456",
        'password="hunter22"',
        "token=",
        "secret: ",
        "api_key",
        "-----BEGIN RSA PRIVATE KEY-----",
        "://",
        "@",
        '"',
        "\\",
        "\n",
        " ",
        "=",
        "[REDACTED:token]",
        "glptt-",
        "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
        "Secret access key ",
        "MTE3NjU0MzIxMDk4NzY1NDMyMQ" + ".GaBcDe." + "abcdefghijklmnopqrstuvwxyz0123456789AB",
        "the password is ",
        "kind: Secret\ndata:\n  k: ",
        "---",
        # JSON escapes: a break or tab (a word boundary), an escaped backslash (none), letters to glue.
        "\\n",
        "\\r\\n",
        "\\t",
        "\\\\",
        "n",
        "--password ",
        "np" + "m_" + "a1B2c3D4e5F6g7H8i9J0abcdefghijklmnop",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_FRAGMENTS, st.text(max_size=12)), max_size=12).map("".join))
def test_redaction_is_idempotent_on_any_mix(text: str) -> None:
    once, _ = redact(text)
    assert redact(once) == (once, Counter())


def test_a_secret_uncovered_by_another_rule_s_replacement_is_redacted_in_the_same_call() -> None:
    # The prose rule takes "token=" as the password, which frees the assignment after the key run
    # that the token rule had matched across: one call must redact both, not leave one for a second.
    text = (
        "the password is token=\nwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYMTE3NjU0MzIxMDk4NzY1NDMyMQ"
        '.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456789ABpassword="hunter22"'
    )
    once, counts = redact(text)
    assert "hunter22" not in once
    assert counts["password"] == 2
    assert redact(once) == (once, Counter())


@pytest.mark.parametrize("prefix", ["AKIA", "ASIA"])  # long-term and temporary (STS) access key ids
def test_each_aws_key_prefix_on_both_sides_of_its_length(prefix: str) -> None:
    key = prefix + "Q2W3E4R5T6Y7U8I9"  # the prefix and 16 upper-case letters or digits
    assert redact(f"id={key} next") == ("id=[REDACTED:aws_access_key_id] next", Counter(aws_access_key_id=1))
    assert redact(f'"{key}"') == ('"[REDACTED:aws_access_key_id]"', Counter(aws_access_key_id=1))
    for near in (key[:-1], key + "Z", "X" + key, prefix.lower() + key[4:], key[:-1] + "a"):
        assert redact(f"id={near} next") == (f"id={near} next", Counter()), near


def test_a_redacted_token_before_a_url_password_is_not_redacted_again() -> None:
    # Found by the idempotence property: a second pass read `token=[REDACTED` as the user of a URL.
    once, _ = redact("://token=postgres://u:pw12345@h/db")
    assert once == "://token=[REDACTED:token][REDACTED:url_password]@h/db"
    assert redact(once) == (once, Counter())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"{AWS_KEY_ID} {AWS_SECRET}", "[REDACTED:aws_access_key_id] [REDACTED:aws_secret_key]"),
        (
            f"Access key ID,Secret access key\n{AWS_KEY_ID},{AWS_SECRET}\n",
            "Access key ID,Secret access key\n[REDACTED:aws_access_key_id],[REDACTED:aws_secret_key]\n",
        ),
        (
            f"AWS Secret Access Key [None]: {AWS_SECRET}",
            "AWS Secret Access Key [None]: [REDACTED:aws_secret_key]",
        ),
    ],
)
def test_an_aws_secret_key_beside_its_key_id_or_name(text: str, expected: str) -> None:
    out, counts = redact(text)
    assert out == expected
    assert counts == Counter(
        aws_secret_key=1, aws_access_key_id=expected.count("[REDACTED:aws_access_key_id]")
    )


K8S_SECRET_YAML = """\
apiVersion: v1
data:
  password: aHVudGVyMg==
  username: YWRtaW4=
kind: Secret
metadata:
  name: db-credentials
  namespace: prod
type: Opaque
---
apiVersion: v1
kind: ConfigMap
data:
  log_level: debug
"""


def test_kubernetes_secret_data_values_are_redacted_and_a_config_map_is_not() -> None:
    out, counts = redact(K8S_SECRET_YAML)
    assert out == K8S_SECRET_YAML.replace("aHVudGVyMg==", "[REDACTED:kubernetes_secret]").replace(
        "YWRtaW4=", "[REDACTED:kubernetes_secret]"
    )
    assert counts == Counter(kubernetes_secret=2)


def test_kubernetes_secret_string_data_and_json_are_redacted() -> None:
    manifest = (
        "kind: Secret\nmetadata:\n  name: api\nstringData:\n  conn: db-host-7;user=app\n  API_TOKEN: plain\n"
    )
    assert redact(manifest) == (
        "kind: Secret\nmetadata:\n  name: api\nstringData:\n"
        "  conn: [REDACTED:kubernetes_secret]\n  API_TOKEN: [REDACTED:kubernetes_secret]\n",
        Counter(kubernetes_secret=2),
    )
    as_json = (
        '{\n  "apiVersion": "v1",\n  "data": {\n    "tls.key": "LS0tLS1CRUdJTg==",\n    "ca": "Q0E="\n  },\n'
        '  "kind": "Secret"\n}'
    )
    assert redact(as_json) == (
        as_json.replace("LS0tLS1CRUdJTg==", "[REDACTED:kubernetes_secret]").replace(
            "Q0E=", "[REDACTED:kubernetes_secret]"
        ),
        Counter(kubernetes_secret=2),
    )


def test_kubernetes_secret_in_a_json_escaped_tool_input_and_a_list() -> None:
    # A manifest written by a tool call reaches the summarizer as JSON: line breaks are "\\n".
    escaped = '{"content": "kind: Secret\\ndata:\\n  token: \\"c2VjcmV0\\"\\n  cert: |\\n    LS0tLS1C\\n---"}'
    assert redact(escaped) == (
        '{"content": "kind: Secret\\ndata:\\n  token: \\"[REDACTED:kubernetes_secret]\\"\\n  cert: |\\n'
        '    [REDACTED:kubernetes_secret]\\n---"}',
        Counter(kubernetes_secret=2),
    )
    listed = "items:\n- apiVersion: v1\n  data:\n    key: c2VjcmV0\n  kind: Secret\nkind: List\n"
    assert redact(listed) == (
        listed.replace("c2VjcmV0", "[REDACTED:kubernetes_secret]"),
        Counter(kubernetes_secret=1),
    )


@pytest.mark.parametrize(
    "text",
    [
        "the password field is required",
        "password reset email sent",
        "the password is stored in Vault",
        "Forgot password? Click here",
        "passwords must match",
        "the password is too short, use at least 12 characters",
        "the password is ${DB_PASSWORD}",
        "the secret access key is in ~/.aws/credentials",
        f"{AWS_KEY_ID} commit 9fceb02d0ae598e95dc970b74767f19372d61af8",  # a sha1 is no secret key
        "data:\n  log_level: debug\nkind: ConfigMap\n",
        "Secret rotation: the data: section holds base64",
        "MTE3NjU0MzIxMDk4NzY1NDMyMQ is a snowflake id",
    ],
)
def test_prose_about_secrets_is_left_alone(text: str) -> None:
    out, counts = redact(text)
    assert (out, counts) == (
        text.replace(AWS_KEY_ID, "[REDACTED:aws_access_key_id]"),
        Counter({"aws_access_key_id": 1} if AWS_KEY_ID in text else {}),
    )


def test_a_key_format_right_after_a_private_key_block_is_found_in_the_first_pass() -> None:
    # Found by the idempotence property: the block's marker ends a word, so "glptt-..." became a
    # GitLab token only in a second pass.
    once, counts = redact(PEM_KEY + "glptt-" + "Ab3_cD-" * 4)
    assert once == "[REDACTED:private_key][REDACTED:gitlab_token]"
    assert counts == Counter(private_key=1, gitlab_token=1)


# -- a password that is a plain word, where the text gives it as the value -------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the password is hunter", "the password is [REDACTED:password]"),
        ("The password is Swordfish.", "The password is [REDACTED:password]."),
        (
            "the admin password was rosebud, the user is bob",
            "the admin password was [REDACTED:password], the user is bob",
        ),
        (
            "The DB password for staging is letmein\nthen run it",
            "The DB password for staging is [REDACTED:password]\nthen run it",
        ),
        ("password: correcthorsebattery", "password: [REDACTED:password]"),
        ("Password: Correcthorsebattery\n", "Password: [REDACTED:password]\n"),
        (
            "db:\n  password: correcthorsebattery\n  user: app\n",
            "db:\n  password: [REDACTED:password]\n  user: app\n",
        ),
        (
            '{"content": "db:\\n  passwd: correcthorsebattery\\n"}',
            '{"content": "db:\\n  passwd: [REDACTED:password]\\n"}',
        ),
    ],
)
def test_a_plain_word_given_as_the_password_is_redacted(text: str, expected: str) -> None:
    assert redact(text) == (expected, Counter(password=1))


@pytest.mark.parametrize(
    "text",
    [
        "implement the password reset flow",
        "the password reset flow is broken",
        "Password: required",
        "Password: Required\n",
        "the password is incorrect.",
        "Your password is wrong",
        "the password was changed.",
        "the password is hashed",
        "the password is weak; pick another",
        "the password is missing",
        "the password is reset.",
        "the password is still",
        "the password is yours.",
        "the password is stored in Vault",
        "the password is the same as before",
        "password: user_input",
        "password: hashedPassword\n",
        "  password: boolean\n",
        "Password:\nsection two covers tokens",
        "password: correct horse battery",  # words that go on: a sentence, not a value
        "{ password: generated, user }",
    ],
)
def test_prose_and_code_about_a_password_are_left_alone(text: str) -> None:
    assert redact(text) == (text, Counter())


# -- an AWS secret access key before its key id --------------------------------------------------------

PATH_40 = "app/Components/Employer/DashboardViewPage"[:40]  # a path: mixed case, no digit


@pytest.mark.parametrize(
    ("text", "expected", "keys"),
    [
        (f"{AWS_SECRET} {AWS_KEY_ID}", "[REDACTED:aws_secret_key] [REDACTED:aws_access_key_id]", 1),
        (
            f"{AWS_SECRET},{AWS_SESSION_KEY_ID}\n",
            "[REDACTED:aws_secret_key],[REDACTED:aws_access_key_id]\n",
            1,
        ),
        (
            f"key: {AWS_SECRET}\nid for it: {AWS_KEY_ID}",
            "key: [REDACTED:aws_secret_key]\nid for it: [REDACTED:aws_access_key_id]",
            1,
        ),
        # A JSON-escaped line break between them (a tool input as the summarizer is sent it).
        (
            f'{{"command": "{AWS_SECRET}\\n{AWS_KEY_ID}"}}',
            '{"command": "[REDACTED:aws_secret_key]\\n[REDACTED:aws_access_key_id]"}',
            1,
        ),
        (
            f'{{"command": "cat creds\\n{AWS_KEY_ID}\\n{AWS_SECRET}"}}',
            '{"command": "cat creds\\n[REDACTED:aws_access_key_id]\\n[REDACTED:aws_secret_key]"}',
            1,
        ),
        # Not a key: a digest (one case), a path (no digit), a key too far before the id.
        (
            f"9fceb02d0ae598e95dc970b74767f19372d61af8 {AWS_KEY_ID}",
            "9fceb02d0ae598e95dc970b74767f19372d61af8 [REDACTED:aws_access_key_id]",
            0,
        ),
        (f"{PATH_40} {AWS_KEY_ID}", f"{PATH_40} [REDACTED:aws_access_key_id]", 0),
        (f"{AWS_SECRET}{' ' * 201}{AWS_KEY_ID}", f"{AWS_SECRET}{' ' * 201}[REDACTED:aws_access_key_id]", 0),
    ],
)
def test_an_aws_secret_key_before_its_key_id(text: str, expected: str, keys: int) -> None:
    assert len(PATH_40) == 40 and not any(c.isdigit() for c in PATH_40)
    out, counts = redact(text)
    assert out == expected
    assert counts == Counter({"aws_access_key_id": 1} | ({"aws_secret_key": keys} if keys else {}))


# -- a key right after a JSON-escaped line break or tab ------------------------------------------------
# Tool inputs reach the model as JSON and Codex outputs are JSON strings: there a line break is the two
# characters backslash and n, and the n is not a letter glued to the key after it.

A1 = "a1B2c3D4e5F6g7H8i9J0"  # 20 letters and digits
HEX_32 = "0123456789abcdef" * 2
UPPER_DIGITS = "A1B2C3D4E5F6G7H8I9J0"
KEYS_AFTER_A_BREAK = [
    *KNOWN_KEYS,
    (DISCORD_BOT_TOKEN, "discord_bot_token"),
    ("123456789" + ":AA" + A1 + "abcdefghijk_-", "telegram_bot_token"),
    (HEX_32 + "-us" + "12", "mailchimp_key"),
    ("abc8" + "Q~" + A1 + "abcdefghijklmn", "azure_ad_client_secret"),
    # One key of each fixed-prefix format.
    ("sk_" + "live_" + A1, "stripe_key"),
    ("rk_" + "test_" + A1, "stripe_key"),
    ("wh" + "sec_" + A1 + "abcd", "stripe_key"),
    ("np" + "m_" + A1 + "abcdefghijklmnop", "npm_token"),
    ("AI" + "za" + A1 + "abcdefghijklmno", "google_api_key"),
    ("GOC" + "SPX-" + A1 + "abcd", "google_oauth"),
    ("ya" + "29." + A1 + "abcdefghij", "google_oauth"),
    ("h" + "f_" + A1 + "abcdefghij", "huggingface_token"),
    ("gl" + "pat-" + A1, "gitlab_token"),
    ("GR13" + "48941" + A1, "gitlab_token"),
    ("do" + "p_v1_" + HEX_32 * 2, "digitalocean_token"),
    ("shp" + "at_" + HEX_32, "shopify_token"),
    ("pypi-" + "AgEIcHlwaS5vcmc" + A1 * 3, "pypi_token"),
    ("SG" + "." + A1 + "ab" + "." + A1 * 2 + "abc", "sendgrid_key"),
    ("ke" + "y-" + HEX_32, "mailgun_key"),
    ("da" + "pi" + HEX_32, "databricks_token"),
    ("dp" + ".pt." + A1 * 2, "doppler_token"),
    ("hv" + "s." + A1 + "abcd", "vault_token"),
    ("lin" + "_api_" + A1 * 2, "linear_key"),
    ("PM" + "AK-" + HEX_32[:24] + "-" + HEX_32 + "ab", "postman_key"),
    ("NR" + "AK-" + UPPER_DIGITS, "newrelic_key"),
    ("AGE-SECRET-" + "KEY-1" + UPPER_DIGITS * 2 + UPPER_DIGITS[:18], "age_secret_key"),
    ("gl" + "sa_" + A1 + "abcdefghijkl" + "_" + "0123abcd", "grafana_token"),
    ("gl" + "c_" + A1 + "abcdefghijkl", "grafana_token"),
    ("sn" + "trys_" + A1 * 2, "sentry_token"),
    ("ATA" + "TT3" + A1 * 5, "atlassian_token"),
    ("sq0" + "atp-" + A1 + "ab", "square_token"),
    ("S" + "K" + HEX_32, "twilio_key"),
    ("xa" + "pp-" + "1-A1B2C3-1234567890-abc123", "slack_token"),
    ("ops" + "_eyJ" + A1 * 5, "onepassword_token"),
    ("pu" + "l-" + HEX_32 + "01234567", "pulumi_token"),
    ("ruby" + "gems_" + HEX_32 + HEX_32[:16], "rubygems_token"),
    ("pscale" + "_tkn_" + A1 * 2, "planetscale_token"),
    ("EZ" + "AK" + A1 * 2 + "abcdefghijklmn", "easypost_key"),
    ("FLWSECK" + "-" + "0123456789abcdefABCDEF0123456789" + "-X", "flutterwave_key"),
    ("tf" + "p_" + A1 * 2 + "abcdefghijklmnopqrs", "typeform_token"),
    ("pn" + "u_" + A1 + "abcdefghijklmnop", "prefect_key"),
    ("rd" + "me_" + "abc123" * 11 + "abcd", "readme_key"),
    ("HR" + "KU-" + A1 * 3, "heroku_key"),
    ("dt0" + "c01." + UPPER_DIGITS + "ABCD" + "." + UPPER_DIGITS * 3 + "ABCD", "dynatrace_token"),
    ("fm" + "2_" + A1 * 2, "fly_token"),
    ("v1" + ".0-" + HEX_32[:24] + "-" + HEX_32 * 4 + HEX_32[:18], "cloudflare_key"),
]
# Real breaks and tabs in the command: json.dumps writes each as an escape (backslash and a letter).
JSON_BREAKS = {"newline": "\n", "crlf": "\r\n", "tab": "\t"}


def test_every_key_after_a_break_is_a_key_on_its_own() -> None:
    for key, kind in KEYS_AFTER_A_BREAK:
        assert redact(key) == (f"[REDACTED:{kind}]", Counter({kind: 1})), kind


@pytest.mark.parametrize("escape", JSON_BREAKS.values(), ids=JSON_BREAKS.keys())
@pytest.mark.parametrize(("key", "kind"), KEYS_AFTER_A_BREAK, ids=[k for _, k in KEYS_AFTER_A_BREAK])
def test_a_key_after_a_json_escaped_break_is_redacted(key: str, kind: str, escape: str) -> None:
    # A here-document in a tool input, as json.dumps renders it for the model.
    text = "cat > .env <<EOF" + escape + key + escape + "EOF"
    out, counts = redact(json.dumps({"command": text}))
    assert out == json.dumps({"command": text.replace(key, f"[REDACTED:{kind}]")})
    assert counts == Counter({kind: 1})


@pytest.mark.parametrize(("key", "kind"), KEYS_AFTER_A_BREAK, ids=[k for _, k in KEYS_AFTER_A_BREAK])
def test_a_key_after_an_escaped_backslash_and_n_is_glued_to_the_n(key: str, kind: str) -> None:
    # In JSON, backslash backslash n is a backslash, then the letter n: the n is part of the word.
    text = "dir\\\\n" + key
    if kind == "aws_access_key_id":
        # The AWS rules took any backslash before the letter as a break before JSON escapes were read
        # for every rule; the key id stays redacted as it was.
        assert redacted(text) == "dir\\\\n[REDACTED:aws_access_key_id]"
    else:
        assert redacted(text) == "dir\\\\" + redacted("n" + key)
    # An escaped backslash, then an escaped break: the key starts a word again.
    assert redacted("dir\\\\\\n" + key) == f"dir\\\\\\n[REDACTED:{kind}]"


@pytest.mark.parametrize(
    "text",
    [
        # A letter really glued to the key: not a key, escape or no escape before it.
        "cat <<EOF\\nx" + GITHUB_TOKENS[0] + "\\nEOF",
        "cat <<EOF\\nx" + ANTHROPIC_KEY + "\\nEOF",
        "cat <<EOF\\tmy" + "np" + "m_" + A1 + "abcdefghijklmnop",
    ],
)
def test_a_word_glued_to_a_key_after_an_escape_is_left_alone(text: str) -> None:
    assert redact(text) == (text, Counter())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A backslash and t inside a password, in decoded text: the whole password, not up to the t.
        ("sshpass -p 'Zx9\\tq!Lm' ssh host", "sshpass -p '[REDACTED:password]' ssh host"),
        ("mysql -uroot -pQ7x\\nW2z prod", "mysql -uroot -p[REDACTED:password] prod"),
        # A key after the escaped break, and a value read across one as before (more is redacted).
        (
            json.dumps({"command": "docker login --password Hunter22x\nexport T=" + GITHUB_TOKENS[0]}),
            json.dumps({"command": "docker login --password [REDACTED:password] T=[REDACTED:github_token]"}),
        ),
    ],
)
def test_a_value_read_across_an_escape_is_redacted_whole(text: str, expected: str) -> None:
    assert redacted(text) == expected
