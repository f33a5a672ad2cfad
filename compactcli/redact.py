"""Replace secrets in text with `[REDACTED:<kind>]` before a transcript leaves the machine.

Each rule is a precompiled regex that starts with a literal (so `re` can skip ahead to
candidates) behind a cheap substring guard, so text without candidates costs little. The
"not inside a longer word" checks are lookbehinds placed after the literal for the same reason.
Case-insensitive rules scan a lower-cased copy of the text (same length, same positions)
instead of using `re.IGNORECASE`, which is several times slower.

Rules run in a fixed order: key formats first, then generic `name = value` assignments, whose
values are skipped when an earlier rule already redacted them. A `[REDACTED:...]` marker never
matches any rule, so redacting twice changes nothing more.
"""

from __future__ import annotations

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
_AWS = re.compile(r"A(?<![A-Za-z0-9]A)[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9])")
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
_PEM_TRUNCATED = re.compile(
    _PEM_HEADER + _EOL + r"*[A-Za-z0-9+/=]{40,}(?:" + _EOL + r"+[A-Za-z0-9+/=]{16,})*"
)
# scheme://user:PASSWORD@host; user may be empty (redis://:pw@host). Placeholders are kept.
_URL_PASSWORD = re.compile(r"://[^:/@\s'\"<>]*:(?!\[REDACTED:)(?![${<])(?P<pw>[^@/\s'\"<>]+)@[A-Za-z0-9.-]+")
# Lower-case patterns, run over the lower-cased text.
_AUTHORIZATION = re.compile(
    r"authorization\\?[\"']?\s*[:=]\s*\\?[\"']?\s*(?:bearer|basic|token|bot)\s+"
    r"(?P<cred>[a-z0-9._~+/=-]{6,})"
)
# `<name ending in a secret word> = value`: the name must end with the word (so `tokens`,
# `max_tokens`, `token_count`, `password_reset` do not match); `==` is a comparison.
_ASSIGNMENT = re.compile(
    r"(?P<word>api[_-]?key|apikey|access[_-]?key|private[_-]?key|secret[_-]?key|"
    r"client[_-]?secret|secret|password|passwd|passphrase|token)(?![a-z0-9_])"
    r"\\?[\"']?\s*[:=](?!=)\s*"
    r"(?:(?P<q>\\?[\"'])(?P<qval>[^\"'\\\s]{4,256})(?P=q)"
    r"|(?P<val>[^\s\"'`,;&(){}\[\]<>\\]{6,256}))"
)
# No rule matches fewer characters than `://:p@h` (a URL password).
_SHORTEST_MATCH = 7
_ASSIGNMENT_GUARDS = ("key", "secret", "passw", "passphrase", "token")
_PLACEHOLDER_VALUES = frozenset(
    "string str none null nil true false undefined required optional redacted "
    "password passwd secret token api_key apikey".split()
)
# Code, not a value: `new_token`, `self.secret`, `args.api_key2`.
_IDENTIFIER = re.compile(r"[A-Za-z_]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")

# A replacer gets the match (its spans index the original text), the original text and the
# counter; it returns the replacement for the whole match, or None to keep it.
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
    if word.startswith("pass"):
        return "password"
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
        return None
    kind = _kind_of_word(m.group("word"))
    counts[kind] += 1
    return f"{text[m.start() : start]}[REDACTED:{kind}]{text[end : m.end()]}"


_RULES: tuple[_Rule, ...] = (
    _Rule(("PRIVATE KEY",), _PEM_BLOCK, _whole("private_key")),
    _Rule(("PRIVATE KEY",), _PEM_TRUNCATED, _whole("private_key")),
    _Rule(("sk-ant-",), _ANTHROPIC, _whole("anthropic_key")),
    _Rule(("sk-",), _OPENAI, _whole("openai_key")),
    _Rule(("AKIA", "ASIA"), _AWS, _whole("aws_access_key_id")),
    _Rule(("gh",), _GITHUB, _whole("github_token")),
    _Rule(("github_pat_",), _GITHUB_PAT, _whole("github_token")),
    _Rule(("xox",), _SLACK, _whole("slack_token")),
    _Rule(("eyJ",), _JWT, _whole("jwt")),
    _Rule(("://",), _URL_PASSWORD, _group("url_password", "pw")),
    _lower_rule(("authorization",), _AUTHORIZATION, _group("authorization", "cred")),
    _lower_rule(_ASSIGNMENT_GUARDS, _ASSIGNMENT, _assignment),
)


def _apply(pattern: re.Pattern[str], replace: Replacer, text: str, scan: str, counts: Counter[str]) -> str:
    """Replace the matches of `pattern` in `scan` (`text` or its lower-cased copy) in `text`.

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


def redact(text: str) -> tuple[str, Counter[str]]:
    """Return `text` with secrets replaced by `[REDACTED:<kind>]`, and how many of each kind."""
    counts: Counter[str] = Counter()
    if len(text) < _SHORTEST_MATCH:
        return text, counts
    lowered: str | None = None
    for needles, pattern, replace, fallback in _RULES:
        # Plain loops, not any(): this runs for every string of a transcript.
        if fallback is None:
            for needle in needles:
                if needle in text:
                    break
            else:
                continue
            new = _apply(pattern, replace, text, text, counts)
        else:
            if lowered is None:
                lowered = text.lower()
            for needle in needles:
                if needle in lowered:
                    break
            else:
                continue
            if len(lowered) == len(text):
                new = _apply(pattern, replace, text, lowered, counts)
            else:
                new = _apply(fallback, replace, text, text, counts)
        if new is not text:
            text, lowered = new, None
    return text, counts


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
