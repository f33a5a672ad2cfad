"""Replace secrets in text with `[REDACTED:<kind>]` before a transcript leaves the machine.

Each rule is a precompiled regex that starts with a literal (so `re` can skip ahead to
candidates) behind a cheap substring guard, so text without candidates costs little. The
"not inside a longer word" checks are lookbehinds placed after the literal for the same reason.
Case-insensitive rules scan a lower-cased copy of the text (same length, same positions)
instead of using `re.IGNORECASE`, which is several times slower.

Rules run in a fixed order: key formats first, then generic `name = value` assignments, whose
values are skipped when an earlier rule already redacted them. A `[REDACTED:...]` marker never
matches any rule, so redacting twice changes nothing more.

Text that holds JSON escapes of a line break or tab (backslash and n, r or t: tool inputs rendered
as JSON, Codex outputs) is scanned twice. First as it is, by every rule. Then the rules that check
that a key is not inside a longer word scan a same-length copy in which each such escape is two
spaces (`_scan_copy`), and the same spans are replaced in the text itself: in the copy the `n` of
`\\n` is no letter glued to the key after it. The first scan keeps all that the text alone gives
(a value read across an escape may be a password holding a backslash), so nothing found is lost.
"""

from __future__ import annotations

import base64
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

_ANTHROPIC = re.compile(r"sk-ant-(?<![A-Za-z0-9_-]sk-ant-)[A-Za-z0-9_-]{8,}")
_OPENAI = re.compile(
    r"sk-(?<![A-Za-z0-9_-]sk-)(?!ant-)"
    r"(?=[A-Za-z_-]*[0-9])"  # real keys are random, so they contain a digit; words do not
    r"(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"
)
# An access key id, and the secret access key (40 base64 characters) when one follows shortly (a
# console CSV, a pasted pair) without a `name = value` shape. The gap never holds another key id.
_AWS_KEY_GAP = r"(?P<gap>(?:(?!A[KS]IA).){0,200}?)"
# Any backslash before the letter lets a key start after it, also an escaped one (two backslashes, n,
# the key id), which `_scan_copy` leaves glued: these rules have always taken it so, and no key id
# that was redacted is given up.
_AWS_SECRET_KEY = r"(?<!(?<!\\)[A-Za-z0-9/+=])(?P<key>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
_AWS_KEY_ID = r"A(?<!(?<!\\)[A-Za-z0-9]A)[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9])"
_AWS = re.compile(r"(?s)" + _AWS_KEY_ID + "(?:" + _AWS_KEY_GAP + _AWS_SECRET_KEY + ")?")
# The secret access key shortly before its key id (a pasted pair in the other order). The lookbehind
# comes first so that a long base64 run (an image) fails at each position at once.
_AWS_KEY_BEFORE_ID = re.compile(r"(?s)" + _AWS_SECRET_KEY + r"(?:(?!A[KS]IA).){0,200}?" + _AWS_KEY_ID)
_GITHUB = re.compile(r"gh(?<![A-Za-z0-9_-]gh)[pousr]_[A-Za-z0-9]{20,}")
_GITHUB_PAT = re.compile(r"github_pat_(?<![A-Za-z0-9_-]github_pat_)[A-Za-z0-9_]{22,}")
_SLACK = re.compile(r"xox(?<![A-Za-z0-9_-]xox)[abposr]-[A-Za-z0-9-]{10,}")
# Header and payload of a JWT are base64url JSON objects, so both start with "eyJ".
_JWT = re.compile(r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*")
# PEM (RSA, EC, OPENSSH, PKCS#8, ...) and OpenPGP armor ("PGP PRIVATE KEY BLOCK").
_PEM_HEADER = r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
_PEM_BLOCK = re.compile(
    _PEM_HEADER + r".{1,16384}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    re.DOTALL,
)
# A key cut off before its END line (truncated tool output): header, then base64 lines.
# Line breaks may be JSON-escaped ("\n" as two characters). A header followed by prose (a
# regex or a doc quoting it) is not a key: the first body line must be long base64.
_EOL = r"(?:\s|\\[nr])"
# OpenPGP armor may put headers (`Version: GnuPG v2`, `Comment: ...`) and a blank line before the body.
_ARMOR_HEADERS = r"(?:" + _EOL + r"+[A-Za-z][A-Za-z-]{0,30}: [^\r\n\\]{0,200})*"
_PEM_TRUNCATED = re.compile(
    _PEM_HEADER + _ARMOR_HEADERS + _EOL + r"*[A-Za-z0-9+/=]{40,}(?:" + _EOL + r"+[A-Za-z0-9+/=]{16,})*"
)
# A PuTTY key file (.ppk): the base64 lines after `Private-Lines: N` are the private key (as in
# gitleaks' putty-private-key rule); the public lines and the comment are kept.
_PPK_LINE = r"[A-Za-z0-9+/=]{4,}(?![^\s\\])"  # a whole line: not the `Private` of `Private-MAC:`
_PUTTY_PRIVATE = re.compile(
    r"Private-Lines: ?[0-9]{1,4}" + _EOL + f"+(?P<body>{_PPK_LINE}(?:{_EOL}+{_PPK_LINE})*)"
)
# scheme://user:PASSWORD@host; user may be empty (redis://:pw@host). Placeholders are kept.
# The user part holds no `[`: text already redacted (`token=[REDACTED:token]`) is not read as a user again.
_URL_PASSWORD = re.compile(
    r"://[^:/@\s'\"<>\[]*:(?!\[REDACTED:)(?![${<])(?P<pw>[^@/\s'\"<>]+)@[A-Za-z0-9.-]+"
)
# Lower-case patterns, run over the lower-cased text.
_AUTHORIZATION = re.compile(
    r"authorization\\?[\"']?\s*[:=]\s*\\?[\"']?\s*(?:bearer|basic|token|bot)\s+"
    r"(?P<cred>[a-z0-9._~+/=-]{6,})"
)
# `<name ending in a secret word> = value`: the name must end with the word (so `tokens`,
# `max_tokens`, `token_count`, `password_reset` do not match); `==` is a comparison.
_ASSIGNMENT = re.compile(
    r"(?P<word>api[_-]?key|apikey|access[_-]?key|private[_-]?key(?:[_-]?id)?|secret[_-]?key(?:[_-]?base)?|"
    r"(?:signing|encryption|master|account)[_-]?key|"
    r"client[_-]?secret|secret|pass(?:word|wd|phrase|(?<![a-z0-9]pass))|pwd|token)(?![a-z0-9_])"
    r"\\?[\"']?\s*[:=](?!=)\s*"
    r"(?:(?P<q>\\?[\"'])(?P<qval>[^\"'\\\s]{4,256})(?P=q)"
    r"|(?P<val>[^\s\"'`,;&(){}\[\]<>\\]{6,256}))"
)
# Key formats with a fixed prefix, after the rule lists of gitleaks and detect-secrets:
# (kind, prefixes, what follows the prefix). Each must stand alone (no word character around it).
_PREFIXED: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("stripe_key", ("sk_live_", "rk_live_", "sk_test_", "rk_test_"), r"[A-Za-z0-9]{16,}"),
    ("stripe_key", ("whsec_",), r"[A-Za-z0-9]{24,}"),
    ("npm_token", ("npm_",), r"[A-Za-z0-9]{36}"),
    ("google_api_key", ("AIza",), r"[0-9A-Za-z_-]{35}"),
    ("google_oauth", ("GOCSPX-",), r"[A-Za-z0-9_-]{24,}"),
    ("google_oauth", ("ya29.",), r"[0-9A-Za-z_-]{30,}"),
    ("huggingface_token", ("hf_", "api_org_"), r"[A-Za-z0-9]{30,}"),
    ("gitlab_token", ("glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "GR1348941"), r"[A-Za-z0-9_-]{20,}"),
    ("digitalocean_token", ("dop_v1_", "doo_v1_", "dor_v1_"), r"[a-f0-9]{64}"),
    ("shopify_token", ("shpat_", "shpca_", "shppa_", "shpss_"), r"[a-fA-F0-9]{32}"),
    ("pypi_token", ("pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"), r"[A-Za-z0-9_-]{50,}"),
    ("sendgrid_key", ("SG.",), r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    ("mailgun_key", ("key-",), r"[0-9a-f]{32}"),
    ("databricks_token", ("dapi",), r"[a-f0-9]{32}(?:-[0-9])?"),
    ("doppler_token", ("dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim."), r"[A-Za-z0-9]{40,}"),
    ("vault_token", ("hvs.", "hvb."), r"[A-Za-z0-9_-]{24,}"),
    ("linear_key", ("lin_api_",), r"[A-Za-z0-9]{40}"),
    ("postman_key", ("PMAK-",), r"[a-f0-9]{24}-[a-f0-9]{34}"),
    ("newrelic_key", ("NRAK-", "NRJS-", "NRII-"), r"[A-Za-z0-9]{19,}"),
    ("age_secret_key", ("AGE-SECRET-KEY-1",), r"[0-9A-Z]{58}"),
    ("grafana_token", ("glsa_",), r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    ("grafana_token", ("glc_",), r"[A-Za-z0-9+/]{32,}={0,2}"),
    ("sentry_token", ("sntrys_", "sntryu_"), r"[A-Za-z0-9+/=_-]{40,}"),
    ("atlassian_token", ("ATATT3", "ATCTT3"), r"[A-Za-z0-9_=-]{100,}"),
    ("square_token", ("sq0atp-", "sq0csp-", "EAAA"), r"[0-9A-Za-z_-]{22,}"),
    ("twilio_key", ("SK",), r"[0-9a-f]{32}"),
    ("slack_token", ("xapp-",), r"[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]+"),
    ("onepassword_token", ("ops_eyJ",), r"[A-Za-z0-9+/]{100,}={0,3}"),
    ("pulumi_token", ("pul-",), r"[a-f0-9]{40}"),
    ("rubygems_token", ("rubygems_",), r"[a-f0-9]{48}"),
    ("planetscale_token", ("pscale_tkn_", "pscale_pw_", "pscale_oauth_"), r"[A-Za-z0-9_.=-]{32,64}"),
    ("easypost_key", ("EZAK", "EZTK"), r"[a-zA-Z0-9]{54}"),
    ("flutterwave_key", ("FLWSECK_TEST-", "FLWSECK-"), r"[a-hA-H0-9]{32}-X"),
    ("typeform_token", ("tfp_",), r"[A-Za-z0-9_.=-]{59}"),
    ("prefect_key", ("pnu_",), r"[A-Za-z0-9]{36}"),
    ("readme_key", ("rdme_",), r"[a-z0-9]{70}"),
    ("heroku_key", ("HRKU-",), r"[A-Za-z0-9_-]{60}"),
    ("dynatrace_token", ("dt0c01.",), r"[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    ("fly_token", ("fm2_", "fo1_"), r"[A-Za-z0-9+/=_-]{40,}"),
    ("cloudflare_key", ("v1.0-",), r"[a-f0-9]{24}-[a-f0-9]{146}"),
)


# Where such a key can start: a run of key characters (keys are long), at its start or after a "/".
# One pass of this over the text, then a prefix check at each start, costs far less than one
# search per format (or one pattern with a branch per format, which re tries at every position).
_KEY_RUN = re.compile(r"[A-Za-z0-9_.~+/-]{20,}")
_FORMATS = sorted(
    (
        (prefix, re.compile(re.escape(prefix) + body + r"(?![A-Za-z0-9_-])"), kind)
        for kind, prefixes, body in _PREFIXED
        for prefix in prefixes
    ),
    key=lambda f: len(f[0]),
    reverse=True,
)
_HEADS = tuple(prefix for prefix, _, _ in _FORMATS)
# A Discord bot token: the bot's user id (a decimal snowflake) in base64, a timestamp, an HMAC.
# No fixed prefix, but base64 of ASCII digits starts with M, N or O, and the first part must
# decode to digits, which keeps dotted identifiers out.
_DISCORD_BOT = re.compile(
    r"[MNO][A-Za-z0-9_-]{22,26}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])"
)


def _is_discord_bot_token(token: str) -> bool:
    user_id = token[: token.index(".")]
    try:
        return base64.urlsafe_b64decode(user_id + "=" * (-len(user_id) % 4)).isdigit()
    except ValueError:
        return False


def _redact_kubernetes_secrets(text: str, counts: Counter[str]) -> str:
    """Replace the values of Kubernetes Secrets' `data` and `stringData`; returns ``text`` itself
    when there are none."""
    if "Secret" not in text or not _K8S_SECRET_KIND.search(text):
        return text
    spans: list[tuple[int, int]] = []
    for block in _K8S_JSON_DATA.finditer(text):
        spans += (v.span("value") for v in _K8S_JSON_VALUE.finditer(text, *block.span("body")))
    documents: list[list[tuple[int, int]]] = [[]]  # YAML documents as (start, end) of each line
    start = 0
    for brk in [*_K8S_LINE_BREAK.finditer(text), None]:
        end = len(text) if brk is None else brk.start()
        if text[start:end].rstrip() == "---":
            documents.append([])
        else:
            documents[-1].append((start, end))
        start = end if brk is None else brk.end()
    for lines in documents:
        if lines and _K8S_SECRET_KIND.search(text, lines[0][0], lines[-1][1]):
            spans += _yaml_secret_values(text, lines)
    values = [(a, b) for a, b in spans if _is_secret_value(text[a:b], quoted=True)]
    if not values:
        return text
    parts: list[str] = []
    last = 0
    for a, b in sorted(values):
        if a < last:
            continue
        counts["kubernetes_secret"] += 1
        parts += (text[last:a], "[REDACTED:kubernetes_secret]")
        last = b
    parts.append(text[last:])
    return "".join(parts)


def _quote_length(value: str) -> int:
    """The length of the quote around `value`: `"x"`, `'x'`, JSON-escaped `\\"x\\"`, or none."""
    for quote in _K8S_QUOTES:
        if len(value) > 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            return len(quote)
    return 0


def _yaml_secret_values(text: str, lines: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans of the values under each `data:`/`stringData:` key of one YAML document: its entries'
    values and the lines of their block scalars (`key: |`)."""
    spans: list[tuple[int, int]] = []
    column: int | None = None  # indentation of the `data:` key while inside its block
    for start, end in lines:
        line = text[start:end]
        body = line.lstrip(" \t")
        indent = len(line) - len(body)
        if column is not None and body and indent <= column:
            column = None  # the block ended
        if column is None:
            key = _K8S_DATA_KEY.match(line)
            if key is not None:
                column = len(key.group(1))
            continue
        if not body:
            continue
        entry = _K8S_ENTRY.match(body)
        if entry is not None and entry.group("value") not in ("|", ">", "|-", ">-", "|+", ">+"):
            value = entry.group("value")
            quote = _quote_length(value)  # the quotes are kept
            value_start = start + indent + entry.start("value")
            spans.append((value_start + quote, value_start + len(value) - quote))
        elif entry is None:
            spans.append((start + indent, end))  # a line of a block scalar
    return spans


def _redact_prefixed(text: str, scan: str, counts: Counter[str]) -> str:
    """Replace the fixed-prefix keys of ``_PREFIXED`` found in ``scan`` (``text`` or a same-length copy);
    returns ``text`` itself when there are none."""
    if len(text) < 20:
        return text  # no such key is shorter
    parts: list[str] = []
    last = 0
    for run in _KEY_RUN.finditer(scan):
        start = run.start()
        if scan[start] in "MNO" and start >= last:
            hit = _DISCORD_BOT.match(scan, start)
            if hit is not None and _is_discord_bot_token(hit.group()):
                counts["discord_bot_token"] += 1
                parts += (text[last:start], "[REDACTED:discord_bot_token]")
                last = hit.end()
                continue
        offsets = [0] + [i + 1 for i, c in enumerate(run.group()) if c == "/"]
        for offset in offsets:
            pos = start + offset
            if pos < last or not scan.startswith(_HEADS, pos):
                continue
            if pos and (scan[pos - 1].isalnum() or scan[pos - 1] in "_-"):
                continue  # inside a longer word
            for prefix, pattern, kind in _FORMATS:
                hit = pattern.match(scan, pos) if scan.startswith(prefix, pos) else None
                if hit is not None:
                    counts[kind] += 1
                    parts += (text[last:pos], f"[REDACTED:{kind}]")
                    last = hit.end()
                    break
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


_TELEGRAM_BOT = re.compile(r"(?<![0-9])[0-9]{8,10}:AA[0-9A-Za-z_-]{33}(?![A-Za-z0-9_-])")
_MAILCHIMP = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9])")
_AZURE_AD_SECRET = re.compile(
    r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"
)
# Webhook URLs whose path is the credential.
_SLACK_WEBHOOK = re.compile(
    r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<path>[A-Za-z0-9+/_-]{20,})"
)
_DISCORD_WEBHOOK = re.compile(r"discord(?:app)?\.com/api/webhooks/(?P<path>[0-9]+/[A-Za-z0-9_-]{30,})")
# Azure storage connection strings and SAS signatures.
_AZURE_ACCOUNT_KEY = re.compile(r"AccountKey=(?P<key>[A-Za-z0-9+/]{40,}={0,2})")
_AZURE_SAS = re.compile(r"[?&]sig=(?P<sig>[A-Za-z0-9%+/]{30,}(?:%3D|=)*)")
# Passwords on command lines: `curl -u user:pw`, `--user user:pw`, `mysql -pPW`, `sshpass -p PW`,
# `--password PW`, and `.netrc` lines (`login NAME password PW`).
# The lookbehind comes after the literal "-", so that `re` skips ahead to candidates.
# `-u user:pw` and `-uuser:pw` (curl takes both); a password may hold an `@` (it is no URL).
_CLI_USER = re.compile(
    r"-(?<![^\s'\"=]-)(?:u|-user)(?:\s+|=|(?=[A-Za-z0-9._-]+:))['\"]?(?P<user>[^\s:'\"@]*):"
    r"(?P<pw>[^\s'\"@][^\s'\"]*)"
)
_MYSQL = re.compile(
    r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb)\b[^\n|;&]*?\s-p(?:\\?['\"])?(?P<pw>[^\s'\"\\-](?:[^\s'\"\\]|\\(?!['\"]))*)"
)
# `redis-cli -a PW` (also `-a PW` after other options), the password as an argument.
_REDIS_CLI = re.compile(
    r"\bredis-cli\b[^\n|;&]*?\s-a\s*(?:\\?['\"])?(?P<pw>[^\s'\"\\-](?:[^\s'\"\\]|\\(?!['\"]))*)"
)
# A password piped into a command that reads it from stdin: `echo PW | sudo -S`, `docker login
# --password-stdin`, `passwd --stdin`, `chpasswd` (`echo user:PW | chpasswd`).
_PIPED_PASSWORD = re.compile(
    r"\b(?:echo|printf)\s+(?:-[ne]{1,2}\s+)?(?P<q>\\?['\"]?)(?:[A-Za-z0-9._-]+:(?=.*chpasswd))?"
    r"(?P<pw>[^\s'\"|;&$`\\][^\s'\"|;&`\\]{2,255})(?P=q)\s*\|\s*"
    r"(?:sudo\b[^\n|;&]*?\s-[A-Za-z]*S\b|(?:docker|podman|buildah|nerdctl|skopeo|oras|helm|crane)\b"
    r"[^\n|;&]*?--password-stdin|passwd\s+--stdin|chpasswd\b)"
)
_SSHPASS = re.compile(r"\bsshpass\s+(?:-[a-oq-zA-Z]\S*\s+)*-p\s*['\"]?(?P<pw>[^\s'\"]+)")
_CLI_FLAG = re.compile(
    r"--(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token|access-token)"
    r"(?:=|\s+)(?P<q>['\"]?)(?P<pw>[^\s'\"]{4,256})"
)
_NETRC = re.compile(r"\blogin\s+\S+\s+password\s+(?P<pw>\S+)")
# Cookie headers (`Cookie: a=1; b=2`, `Set-Cookie: sid=...; Path=/`), also as a JSON or curl `-H`
# header; and curl's `-b`/`--cookie 'name=value'`. Lower-case, run over the lower-cased text.
_COOKIE_HEADER = re.compile(
    r"(?<![a-z0-9_-])(?P<set>set-)?cookie\\?[\"']?\s*:\s*\\?[\"']?(?P<value>[^\r\n\"'\\]{3,4096})"
)
_CURL_COOKIE = re.compile(
    r"\bcurl\b[^\n|;&]*?\s(?:-b|--cookie)(?:\s+|=)(?P<q>['\"]?)(?P<value>[^\s'\"=;]+=[^\r\n'\"]{1,4096})"
)
# Pairs after `;` or a space: a header's value runs to the line's end and may hold another header.
_COOKIE_PAIR = re.compile(r"(?:^|[;\s])\s*(?P<name>[^=;\s]+)=(?P<val>[^;\s]*)")
_COOKIE_ATTRIBUTES = frozenset({"path", "domain", "expires", "max-age", "samesite", "priority"})
# A JSON Web Key's private members (RFC 7518: `d`, the RSA primes and exponents, `k` of a symmetric
# key), in a text that names a key type (`"kty"`). The public `n`, `e`, `x`, `y` are kept.
_JWK_PRIVATE = re.compile(
    r"\\?[\"'](?:d|p|q|dp|dq|qi|k|r|t)\\?[\"']\s*:\s*\\?[\"'](?P<value>[A-Za-z0-9_-]{16,}={0,2})\\?[\"']"
)
# A base64 run that may wrap a secret (kubeconfig's `client-key-data`, Docker's `"auth"`, an encoded
# key): decoded when it is text, and redacted whole when the text holds one. Runs longer than the
# longest key in base64 (images, archives) are not decoded. Base64 of ASCII text starts each group of
# four with one of A-Z, a-f (a byte under 0x80), which keeps most words, paths and digests out in `re`;
# the lookbehind after that first letter lets `re` skip to candidates.
_BASE64_RUN = re.compile(
    r"[A-Za-f](?<![A-Za-z0-9+/_-][A-Za-f])[A-Za-z0-9+/_-]{3}(?:[A-Za-f][A-Za-z0-9+/_-]{3}){2,}"
    r"(?:[A-Za-f][A-Za-z0-9+/_-]{1,2}={0,2})?(?![A-Za-z0-9+/=_-])"
)
_BASE64_MAX = 32768
_BASE64_DEPTH = 2  # a kubeconfig inside a Secret's base64 holds base64 keys
_PRINTABLE = bytes(range(0x20, 0x7F)) + b"\t\r\n"
# Decoded `user:password` (Docker's `auth`, an npm `_auth`, HTTP Basic credentials).
_USER_PASSWORD = re.compile(r"[A-Za-z0-9._@+-]{1,256}:(?P<pw>\S{4,256})")
# A key wrapped across two lines (a terminal's width): the rest of it is the whole next line.
_WRAPPABLE = (
    "anthropic_key|openai_key|github_token|slack_token|jwt|google_oauth|huggingface_token|gitlab_token|"
    "vault_token|sentry_token|atlassian_token|onepassword_token|fly_token|grafana_token|doppler_token|"
    "stripe_key|square_token|newrelic_key|planetscale_token|pypi_token"
)
_WRAPPED_TAIL = re.compile(
    r"\[REDACTED:(?P<kind>" + _WRAPPABLE + r")\](?P<eol>\r?\n|(?:\\r)?\\n)(?P<tail>[A-Za-z0-9_-]{6,})"
    r"(?=[\s\"']|\\[nr\"]|$)"
)
# The words "secret access key" (the `aws configure` prompt, a console CSV's header), then the key.
_AWS_SECRET_AFTER_NAME = re.compile(
    r"(?s)secret access key" + _AWS_KEY_GAP + r"(?<!(?<!\\)[a-z0-9/+=])(?P<key>[a-z0-9/+]{40})(?![a-z0-9/+=])"
)
# Prose: "the password is X", "the DB password for staging was X", "set the password to X".
# Lower-case, run over the lower-cased text; X must not read as a word (see _prose_password).
_PROSE_PASSWORD = re.compile(
    r"(?<![a-z0-9_])passw(?:or)?d(?:\s+(?:for|of|on)(?:\s+[\w.@-]+){1,2})?"
    r"\s+(?P<verb>is|was|to)(?:\s*:)?\s+(?P<q>[\"'`]?)(?P<pw>[^\s\"'`]{3,127}[^\s\"'`.,;:!?)\]])"
)
# A plain word ends the clause that gives it (`the password is hunter.`, a `password: word` line): what
# follows is punctuation or the end of the line, not more words ("the password is stored in Vault").
_CLAUSE_END = re.compile(r"[ \t]*(?:[.,;!?)\]]|\r|\n|\\[nr]|$)")
_LINE_END = re.compile(r"[ \t]*(?:\r|\n|\\[nr]|$)")
# Words that say something about a password rather than being one, and type names (`password: boolean`).
_ABOUT_A_PASSWORD = frozenset(
    "wrong correct incorrect invalid valid empty blank weak strong secure insecure short long missing "
    "required optional mandatory same different new old unknown unset set fine okay good bad right here "
    "there this that what above below hidden visible masked plain plaintext cleartext default temporary "
    "random unique private public sensitive incomplete complete current present absent reset still also "
    "gone known shown given taken broken stale yours mine ours theirs his hers true false "
    "boolean bool number integer float double object array any never void bytes text varchar char".split()
)
_DESCRIBING_SUFFIXES = ("ed", "ing", "ly", "able", "ible", "ive", "ous", "ful", "less", "ent", "ant")

# Kubernetes Secret manifests: every value under `data:` (base64) or `stringData:` (plain) is a
# secret whatever its name. Only in a YAML document (between `---` lines) or a text that says
# `kind: Secret`; a ConfigMap's `data:` is left alone. Line breaks may be JSON-escaped.
_K8S_SECRET_KIND = re.compile(r"kind\\?[\"']?\s*:\s*\\?[\"']?Secret(?![A-Za-z0-9_])")
_K8S_LINE_BREAK = re.compile(r"\r?\n|(?:\\r)?\\n")
_K8S_DATA_KEY = re.compile(r"([ \t]*(?:-[ \t]+)?)(?:data|stringData):[ \t]*$")
_K8S_ENTRY = re.compile(r"[^\s:#][^:]*:[ \t]+(?P<value>\S(?:.*\S)?)")
_K8S_QUOTES = ('\\"', '"', "'")
_K8S_JSON_DATA = re.compile(r'\\?"(?:data|stringData)\\?"\s*:\s*\{(?P<body>[^{}]*)\}')
_K8S_JSON_VALUE = re.compile(r'\\?"[^"\\]*\\?"\s*:\s*\\?"(?P<value>[^"\\]+)\\?"')

# No rule matches fewer characters than `://:p@h` (a URL password).
_SHORTEST_MATCH = 7
_MAX_PASSES = 4  # at most, over one text (in practice one, or two where a secret was found)
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pwd"})
_ASSIGNMENT_GUARDS = ("key", "secret", "pass", "pwd", "token")
_PLACEHOLDER_VALUES = frozenset(
    "string str none null nil true false undefined required optional redacted "
    "password passwd pass secret token api_key apikey".split()
)
# Code, not a value: `new_token`, `self.secret`, `args.api_key2`.
_IDENTIFIER = re.compile(r"[A-Za-z_]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")

# A replacer gets the match (its spans index the original text; its groups come from the scanned copy,
# so a value is read from the text by its span), the original text and the counter; it returns the
# replacement for the whole match, or None to keep it.
Replacer = Callable[[re.Match[str], str, Counter[str]], "str | None"]


class _Rule(NamedTuple):
    needles: tuple[str, ...]  # skip the rule unless one of these occurs
    pattern: re.Pattern[str]
    replace: Replacer
    # For lower-case rules: the same pattern with IGNORECASE, for text whose lower-cased copy
    # has another length (a few Unicode characters lower-case to two), so positions differ.
    fallback: re.Pattern[str] | None = None


def _lower_rule(needles: tuple[str, ...], pattern: re.Pattern[str], replace: Replacer) -> _Rule:
    return _Rule(needles, pattern, replace, re.compile(pattern.pattern, re.IGNORECASE))


def _whole(kind: str) -> Replacer:
    marker = f"[REDACTED:{kind}]"

    def replace(m: re.Match[str], text: str, counts: Counter[str]) -> str:
        counts[kind] += 1
        return marker

    return replace


def _group(kind: str, group: str) -> Replacer:
    """Replace only `group` inside the match (keep the user and host, the header name)."""
    marker = f"[REDACTED:{kind}]"

    def replace(m: re.Match[str], text: str, counts: Counter[str]) -> str:
        counts[kind] += 1
        start, end = m.span(group)
        return text[m.start() : start] + marker + text[end : m.end()]

    return replace


def _kind_of_word(word: str) -> str:
    word = word.lower()  # upper-case in the case-insensitive fallback scan
    if word.startswith("pass") or word == "pwd":
        return "password"
    if word.endswith("id"):
        return "private_key_id"
    if word == "token":
        return "token"
    if "secret" in word:
        return "secret"
    return "api_key"


def _is_secret_value(value: str, quoted: bool, setting: bool = False) -> bool:
    if value.startswith(("$", "<", "{", "%", "[REDACTED:")):
        return False  # a variable, a template or an earlier redaction
    if value.lower() in _PLACEHOLDER_VALUES or len(set(value)) == 1 or "****" in value:
        return False  # "string", "null", "xxxx", an already masked "gho_****"
    if quoted:
        return True
    if "/" in value and "." in value:
        return False  # a path with a file name is a path
    # Unquoted: identifiers and attribute access are code, except after an upper-case name
    # (`DB_PASSWORD=hunter`: a .env file or an export), where a value of letters is the setting.
    if setting and value.replace("_", "").isalpha():
        return True
    return not _IDENTIFIER.fullmatch(value)


def _assignment(m: re.Match[str], text: str, counts: Counter[str]) -> str | None:
    group = "qval" if m.group("q") is not None else "val"
    start, end = m.span(group)
    setting = text[m.start("word") : m.end("word")].isupper()
    if not _is_secret_value(text[start:end], quoted=group == "qval", setting=setting):
        # `password: word` ending its line (YAML, a note), the word on the same line as the colon.
        # Not `password = word` (code: a variable) nor `password: word,` (an object's field).
        labelled = group == "val" and m.group("word").lower() in _PASSWORD_WORDS
        between = text[m.end("word") : start]
        if not labelled or ":" not in between or "\n" in between or "\\n" in between:
            return None
        if not _plain_word_password(text[start:end], text, end, _LINE_END):
            return None
    kind = _kind_of_word(m.group("word"))
    counts[kind] += 1
    return f"{text[m.start() : start]}[REDACTED:{kind}]{text[end : m.end()]}"


def _cli_password(group: str) -> Replacer:
    """A password on a command line; a value that is a variable or a placeholder is kept, and so is
    `-u 1000:1000` (a uid:gid, as `docker run -u` takes)."""

    def replace(m: re.Match[str], text: str, counts: Counter[str]) -> str | None:
        start, end = m.span(group)
        value = text[start:end]
        if not _is_secret_value(value, quoted=False, setting=True):
            return None
        if "user" in m.groupdict():
            user = m.group("user") or ""
            if value.isdigit() and user.isdigit():
                return None
            if len(user) == 1 and value.startswith(("\\", "/")):
                return None  # a Windows path (`cygpath -u 'C:\\Users'`)
        counts["password"] += 1
        return text[m.start() : start] + "[REDACTED:password]" + text[end : m.end()]

    return replace


def _plain_word_password(value: str, text: str, end: int, ends: re.Pattern[str] = _CLAUSE_END) -> bool:
    """A plain word (letters, not camelCase: that is code) that ends its clause (`ends` matches after
    it) and says nothing about a password ("wrong", "required", "hashed") is given as the password."""
    if not value.isalpha() or not (value.islower() or value.isupper() or value[1:].islower()):
        return False
    word = value.lower()
    if word in _ABOUT_A_PASSWORD or word in _PLACEHOLDER_VALUES or word.endswith(_DESCRIBING_SUFFIXES):
        return False
    return ends.match(text, end) is not None


def _prose_password(m: re.Match[str], text: str, counts: Counter[str]) -> str | None:
    """A value that is not a word or an identifier ("the password is stored") is a password; so is a
    plain word that ends the sentence after "is" or "was" ("the password is hunter.")."""
    start, end = m.span("pw")
    if m.group("q") and text[end : end + 1] != text[m.start("q")]:
        return None  # an opening quote without its closing one
    value = text[start:end]
    plain = m.group("verb") != "to" and not m.group("q") and _plain_word_password(value, text, end)
    if not plain and not _is_secret_value(value, quoted=False):
        return None
    counts["password"] += 1
    return text[m.start() : start] + "[REDACTED:password]" + text[end : m.end()]


def _aws_secret_key(m: re.Match[str], text: str, counts: Counter[str]) -> str | None:
    """The 40-character key of an `_AWS` or `_AWS_SECRET_AFTER_NAME` match, unless it is all one case
    (a hex digest, not base64 of random bytes); an `_AWS` match's key id is replaced in any case."""
    key_id = m.group().startswith(("AKIA", "ASIA"))
    if key_id:
        counts["aws_access_key_id"] += 1
    head = "[REDACTED:aws_access_key_id]" if key_id else text[m.start() : m.start("gap")]
    if m.group("key") is None:
        return head
    start, end = m.span("key")
    key = text[start:end]
    if key.lower() == key or key.upper() == key:
        return head + text[m.start("gap") : m.end()] if key_id else None
    counts["aws_secret_key"] += 1
    return head + text[m.start("gap") : start] + "[REDACTED:aws_secret_key]"


def _aws_key_before_id(m: re.Match[str], text: str, counts: Counter[str]) -> str | None:
    """The key of an `_AWS_KEY_BEFORE_ID` match when it reads as base64 of random bytes: mixed case and
    a digit (a 40-character path has no digit, a digest one case). The key id is left to `_AWS`."""
    start, end = m.span("key")
    key = text[start:end]
    if key.lower() == key or key.upper() == key or not any(c.isdigit() for c in key):
        return None
    counts["aws_secret_key"] += 1
    return "[REDACTED:aws_secret_key]" + text[end : m.end()]


def _cookie(m: re.Match[str], text: str, counts: Counter[str]) -> str | None:
    """The values of a cookie header's pairs (a Set-Cookie's first pair: the rest are attributes);
    names, attributes and values that are variables or placeholders are kept."""
    start, end = m.span("value")
    value = text[start:end]
    pairs = list(_COOKIE_PAIR.finditer(value))
    if "set" in m.groupdict() and m.group("set"):
        pairs = pairs[:1]
    parts: list[str] = []
    last = 0
    for pair in pairs:
        if pair.group("name").lower() in _COOKIE_ATTRIBUTES:
            continue
        a, b = pair.span("val")
        val = value[a:b]
        if b - a < 4 or not _is_secret_value(val, quoted=True) or (val.isalpha() and val.islower()):
            continue  # short, a placeholder, or a word (`theme=dark`)
        counts["cookie"] += 1
        parts += (value[last:a], "[REDACTED:cookie]")
        last = b
    if not parts:
        return None
    return text[m.start() : start] + "".join(parts) + value[last:] + text[end : m.end()]


def _base64_reader(depth: int) -> Replacer:
    return lambda m, text, counts: _base64_secret(m, counts, depth)


def _base64_secret(m: re.Match[str], counts: Counter[str], depth: int) -> str | None:
    """A base64 run whose decoded text holds a secret, or is `user:password`: the run, redacted whole."""
    run = m.group()
    if len(run) > _BASE64_MAX or len(run.rstrip("=")) % 4 == 1:
        return None
    urlsafe = "-" in run or "_" in run
    if urlsafe and ("+" in run or "/" in run):
        return None
    try:
        raw = base64.b64decode(run + "=" * (-len(run) % 4), altchars=b"-_" if urlsafe else None)
    except ValueError:
        return None
    if len(raw) < 8 or raw.translate(None, _PRINTABLE):
        return None  # binary (a digest, an image, random bytes): no text to read
    decoded = raw.decode("ascii")
    _, found = _redact(decoded, depth)
    if found:
        counts.update(found)
        return f"[REDACTED:{next(iter(found))}]"
    credentials = _USER_PASSWORD.fullmatch(decoded)
    if credentials is not None and _is_secret_value(credentials.group("pw"), quoted=False, setting=True):
        counts["base64_credentials"] += 1
        return "[REDACTED:base64_credentials]"
    return None


def _wrapped_tail(m: re.Match[str], text: str, counts: Counter[str]) -> str | None:
    """The next line after a key that ended its line, when it reads as the key's rest (random: a digit,
    or both cases); the same secret, so it is not counted again."""
    tail = m.group("tail")
    if not any(c.isdigit() for c in tail) and (tail.islower() or tail.isupper()):
        return None
    kind = m.group("kind")
    return f"[REDACTED:{kind}]{m.group('eol')}[REDACTED:{kind}]"


# Whole blocks first: a key format right after a private key block starts a word only once the
# block is a marker, so the key-format scan runs after these (or a second pass would find it).
_BLOCK_RULES: tuple[_Rule, ...] = (
    _Rule(("PRIVATE KEY",), _PEM_BLOCK, _whole("private_key")),
    _Rule(("PRIVATE KEY",), _PEM_TRUNCATED, _whole("private_key")),
    _Rule(("Private-Lines:",), _PUTTY_PRIVATE, _group("private_key", "body")),
)
_RULES: tuple[_Rule, ...] = (
    _Rule(("sk-ant-",), _ANTHROPIC, _whole("anthropic_key")),
    _Rule(("sk-",), _OPENAI, _whole("openai_key")),
    _Rule(("AKIA", "ASIA"), _AWS_KEY_BEFORE_ID, _aws_key_before_id),  # before _AWS hides the key id
    _Rule(("AKIA", "ASIA"), _AWS, _aws_secret_key),
    _Rule(("gh",), _GITHUB, _whole("github_token")),
    _Rule(("github_pat_",), _GITHUB_PAT, _whole("github_token")),
    _Rule(("xox",), _SLACK, _whole("slack_token")),
    _Rule(("eyJ",), _JWT, _whole("jwt")),
    _Rule((":AA",), _TELEGRAM_BOT, _whole("telegram_bot_token")),
    _Rule(("-us",), _MAILCHIMP, _whole("mailchimp_key")),
    _Rule(("Q~",), _AZURE_AD_SECRET, _whole("azure_ad_client_secret")),
    _Rule(("hooks.slack.com/",), _SLACK_WEBHOOK, _group("slack_webhook", "path")),
    _Rule(("/api/webhooks/",), _DISCORD_WEBHOOK, _group("discord_webhook", "path")),
    _Rule(("AccountKey=",), _AZURE_ACCOUNT_KEY, _group("azure_storage_key", "key")),
    _Rule(("sig=",), _AZURE_SAS, _group("azure_sas", "sig")),
    _Rule(("-u", "--user"), _CLI_USER, _cli_password("pw")),
    _Rule(("mysql", "mariadb"), _MYSQL, _cli_password("pw")),
    _Rule(("sshpass",), _SSHPASS, _cli_password("pw")),
    _Rule(
        ("--pass", "--token", "--api", "--secret", "--client-secret", "--auth-token", "--access-token"),
        _CLI_FLAG,
        _cli_password("pw"),
    ),
    _Rule(("password",), _NETRC, _cli_password("pw")),
    _Rule(("redis-cli",), _REDIS_CLI, _cli_password("pw")),
    _Rule(("sudo", "--password-stdin", "passwd"), _PIPED_PASSWORD, _cli_password("pw")),
    _Rule(("kty",), _JWK_PRIVATE, _group("jwk_private_key", "value")),
    _Rule(("://",), _URL_PASSWORD, _group("url_password", "pw")),
    _lower_rule(("authorization",), _AUTHORIZATION, _group("authorization", "cred")),
    _lower_rule(_ASSIGNMENT_GUARDS, _ASSIGNMENT, _assignment),
    _lower_rule(("secret access key",), _AWS_SECRET_AFTER_NAME, _aws_secret_key),
    _lower_rule(("passw",), _PROSE_PASSWORD, _prose_password),
    _lower_rule(("cookie",), _COOKIE_HEADER, _cookie),
    _lower_rule(("curl",), _CURL_COOKIE, _cookie),
    _Rule(("[REDACTED:",), _WRAPPED_TAIL, _wrapped_tail),  # last: after every key's marker is in
)


def _scan_copy(text: str) -> str:
    """`text` with each JSON escape of a line break or tab (backslash and n, r or t) as two spaces.

    Same length, same positions; `text` itself when it holds no such escape. Spaces rather than a
    backslash and a real break: a value then ends before the escape, not on its backslash, and the
    rules bound to one line read across it as they do in the text. An escaped backslash (two) is
    kept, so one followed by n is a backslash and a letter glued to what follows.
    """
    if "\\n" not in text and "\\r" not in text and "\\t" not in text:
        return text
    # str.split pairs backslashes from the left, as a JSON decoder does: a piece holds no escaped
    # backslash, so each backslash in it starts an escape.
    pieces = text.split("\\\\")
    for i, piece in enumerate(pieces):
        if "\\" in piece:
            pieces[i] = piece.replace("\\n", "  ").replace("\\r", "  ").replace("\\t", "  ")
    scan = "\\\\".join(pieces)
    return text if scan == text else scan


def _apply(pattern: re.Pattern[str], replace: Replacer, text: str, scan: str, counts: Counter[str]) -> str:
    """Replace the matches of `pattern` in `scan` (a same-length copy of `text`) in `text`.

    Returns `text` itself when nothing was replaced.
    """
    parts: list[str] = []
    last = 0
    for m in pattern.finditer(scan):
        new = replace(m, text, counts)
        if new is not None:
            parts += (text[last : m.start()], new)
            last = m.end()
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


# The rules that check that a key or a command is not inside a longer word: what a JSON escape before
# it changes. The others start at a literal of their own (`--password`, `://`, `token=`, a PEM header)
# and, over the copy, could only read a value across a line break, which the decoded text ends there.
_BOUNDED = frozenset(
    {
        _ANTHROPIC, _OPENAI, _AWS_KEY_BEFORE_ID, _AWS, _GITHUB, _GITHUB_PAT, _SLACK, _JWT, _TELEGRAM_BOT,
        _MAILCHIMP, _AZURE_AD_SECRET, _CLI_USER, _MYSQL, _SSHPASS, _NETRC, _AWS_SECRET_AFTER_NAME,
        _PROSE_PASSWORD,
    }
)  # fmt: skip
_BOUNDED_RULES = tuple(rule for rule in _RULES if rule.pattern in _BOUNDED)


def redact(text: str) -> tuple[str, Counter[str]]:
    """Return `text` with secrets replaced by `[REDACTED:<kind>]`, and how many of each kind."""
    return _redact(text, depth=0)


def _redact(text: str, depth: int) -> tuple[str, Counter[str]]:
    """`redact`, inside `depth` layers of base64 (decoded runs are read to `_BASE64_DEPTH` layers)."""
    counts: Counter[str] = Counter()
    if len(text) < _SHORTEST_MATCH:
        return text, counts
    # One rule's replacement can uncover a secret another rule's match had hidden (a value glued to a
    # name that a wider match took first): passes go on until nothing changes, so that redacting the
    # result again finds nothing. Only texts that held a secret pay a second pass.
    for _ in range(_MAX_PASSES):
        redacted = _redact_escaped(_redact_once(text, counts), counts)
        if depth < _BASE64_DEPTH and len(redacted) >= 16:
            redacted = _apply(_BASE64_RUN, _base64_reader(depth + 1), redacted, redacted, counts)
        if redacted == text:
            break
        text = redacted
    return text, counts


def _redact_once(text: str, counts: Counter[str]) -> str:
    for needles, pattern, replace, _ in _BLOCK_RULES:
        if needles[0] in text:
            text = _apply(pattern, replace, text, text, counts)
    text = _redact_kubernetes_secrets(text, counts)  # reads JSON escapes itself
    text = _redact_prefixed(text, text, counts)
    return _run_rules(_RULES, text, False, counts)


def _redact_escaped(text: str, counts: Counter[str]) -> str:
    """The rules with a word boundary, once over `_scan_copy(text)`; `text` itself when it holds no
    JSON escape of a break or tab."""
    scan = _scan_copy(text)
    if scan is text:
        return text
    new = _redact_prefixed(text, scan, counts)
    return _run_rules(_BOUNDED_RULES, new, True, counts)


def _run_rules(rules: tuple[_Rule, ...], text: str, read_escapes: bool, counts: Counter[str]) -> str:
    """One pass of `rules` over `text`, or with `read_escapes` over its `_scan_copy`."""
    scan = _scan_copy(text) if read_escapes else text
    lowered: str | None = None
    for needles, pattern, replace, fallback in rules:
        # Plain loops, not any(): this runs for every string of a transcript.
        if fallback is None:
            for needle in needles:
                if needle in text:
                    break
            else:
                continue
            new = _apply(pattern, replace, text, scan, counts)
        else:
            if lowered is None:
                lowered = scan.lower()
            for needle in needles:
                if needle in lowered:
                    break
            else:
                continue
            if len(lowered) == len(text):
                new = _apply(pattern, replace, text, lowered, counts)
            else:
                new = _apply(fallback, replace, text, scan, counts)
        if new is not text:
            text, scan, lowered = new, _scan_copy(new) if read_escapes else new, None
    return text


def redact_obj(obj: Any) -> tuple[Any, Counter[str]]:
    """Redact every string inside a JSON-like value (dict keys are kept as they are).

    Returns a new value and the counts; the input is not mutated.
    """
    counts: Counter[str] = Counter()

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            new, found = redact(value)
            counts.update(found)
            return new
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, tuple):
            return tuple(walk(v) for v in value)
        return value

    return walk(obj), counts


# The fields of a Messages API request that carry the transcript; model and limits are the tool's own.
_REQUEST_TEXT_FIELDS = ("system", "messages")


def redact_request(params: dict[str, Any], *, enabled: bool = True) -> tuple[dict[str, Any], Counter[str]]:
    """A Messages API request (`messages.create`, `count_tokens`, a batch entry's `params`) with every
    string of its `system` and `messages` redacted: the one place every request to a model's endpoint
    passes before it is sent (docs/design.md, "Secrets"). `enabled=False` (--no-redact) returns it as
    it is. Text redacted before (a rendered transcript) is unchanged, so callers may redact earlier too.
    """
    if not enabled:
        return params, Counter()
    counts: Counter[str] = Counter()
    out = dict(params)
    for name in _REQUEST_TEXT_FIELDS:
        if name in out:
            out[name], found = redact_obj(out[name])
            counts.update(found)
    return out, counts
