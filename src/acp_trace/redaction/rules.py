"""The redaction policy applied to one parsed JSON-RPC message (docs/trace-format.md,
"Redaction"). Every rule goes by the shape the ACP schemas give a secret, so a method that
carries the same shape later is covered too; only the answer to an `elicitation/create` form
is found by pairing the response with its request (`Pending`, per sender, bounded).

`redact_message` replaces the secrets in place and returns their JSON paths.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from acp_trace.credentials.values import child, spell
from acp_trace.redaction.secrets import (
    REDACTED,
    may_scrub,
    names_credential,
    scrub_text,
    scrub_words,
)

AUTH_KEEP = frozenset({"methodId"})
ANSWER_KEEP = frozenset({"action", "_meta"})
ANSWERED_BY_FORM = "elicitation/create"
PENDING_LIMIT = 1024
ID_LIMIT = 256  # characters of a string id (and 4x bits of an integer one) worth pairing


def is_auth_method(method: str) -> bool:
    """`authenticate` (v1) and every `auth/...` method (v2: login, logout, status...)."""
    return method == "authenticate" or method.startswith("auth/")


def id_key(value: Any) -> tuple[str, Any] | None:
    """A hashable request id that keeps its type (`1` and `"1"` differ); None if not an id."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value.bit_length() <= ID_LIMIT * 4:
        return ("n", value)
    if isinstance(value, str) and len(value) <= ID_LIMIT:
        return ("s", value)
    return None  # a longer id is not paired (bounded memory); form answers still go by shape


class Pending:
    """The requests one side sent that the other has not answered yet: id -> method.

    Bounded: past PENDING_LIMIT the oldest is forgotten (counted in `forgotten`). A forgotten
    or unseen `elicitation/create` still has its answer redacted by shape (`result.content`
    of a client response with `result.action`)."""

    def __init__(self, limit: int = PENDING_LIMIT) -> None:
        self._ids: OrderedDict[tuple[str, Any], str] = OrderedDict()
        self._limit = limit
        self.forgotten = 0

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, key: tuple[str, Any], method: str) -> None:
        self._ids[key] = method if len(method) <= ID_LIMIT else ""
        self._ids.move_to_end(key)
        while len(self._ids) > self._limit:
            self._ids.popitem(last=False)
            self.forgotten += 1

    def pop(self, key: tuple[str, Any] | None) -> str | None:
        return None if key is None else self._ids.pop(key, None)

    def waits_for(self, key: tuple[str, Any] | None, method: str) -> bool:
        return key is not None and self._ids.get(key) == method


def is_message(value: Any) -> bool:
    """A request or notification (a string `method`) or a response (`id` and result/error)."""
    if not isinstance(value, dict):
        return False
    return isinstance(value.get("method"), str) or (
        "id" in value and ("result" in value or "error" in value)
    )


def track(msg: dict[str, Any], src: str, pending: dict[str, Pending]) -> str | None:
    """Note a request of `src`, or settle a response to the other side's request: the
    method the response answers (None for requests, notifications and unknown ids)."""
    if isinstance(msg.get("method"), str):
        key = id_key(msg.get("id"))
        if key is not None:
            pending[src].add(key, msg["method"])
        return None
    return pending[_other(src)].pop(id_key(msg.get("id")))


def redact_message(
    msg: dict[str, Any], where: str, src: str, pending: dict[str, Pending], *, meta: bool = True
) -> list[str]:
    """Redact one message in place; the JSON paths replaced. `meta=False` skips the search
    for `_meta` objects (the caller knows the line spells no `_meta` key)."""
    answered = track(msg, src, pending)
    paths: list[str] = []
    method, params = msg.get("method"), msg.get("params")
    if isinstance(method, str):
        if isinstance(params, dict):
            paths += _request(method, params, f"{where}.params")
        elif params is not None and is_auth_method(method):
            paths.append(_replace(msg, "params", where))
    elif isinstance(msg.get("result"), dict):
        paths += _response(answered, src, msg["result"], f"{where}.result")
    elif answered == ANSWERED_BY_FORM and msg.get("result") is not None:
        paths.append(_replace(msg, "result", where))
    if meta:
        paths += _meta_anywhere(msg, where)
    return paths


def _request(method: str, params: dict[str, Any], where: str) -> list[str]:
    if is_auth_method(method):
        return [_replace(params, key, where) for key in list(params) if key not in AUTH_KEEP]
    paths: list[str] = []
    if "mcpServers" in params:
        paths += _entries(params, "mcpServers", where)
    if "authMethods" in params:
        paths += _entries(params, "authMethods", where)
    for key in ("env", "headers"):
        if key in params:
            paths += _pairs(params, key, where)
    if "args" in params:
        paths += _args(params, "args", where)
    for key in ("baseUrl", "url"):
        if key in params:
            paths += _string(params, key, where)
    return paths


def _response(answered: str | None, src: str, result: dict[str, Any], where: str) -> list[str]:
    paths: list[str] = []
    paired = answered == ANSWERED_BY_FORM
    if paired or (src == "client" and answered is None and "action" in result):
        for key in list(result):
            if key == "content" and isinstance(result[key], dict):
                paths += _pairs(result, key, where)  # every answer; the field names stay
            elif (key == "content" or (paired and key not in ANSWER_KEEP)) and _secret(result[key]):
                paths.append(_replace(result, key, where))
    if "authMethods" in result:
        paths += _entries(result, "authMethods", where)
    providers = result.get("providers")
    if isinstance(providers, list):
        for index, provider in enumerate(providers):
            if isinstance(provider, dict) and isinstance(provider.get("current"), dict):
                paths += _container(provider["current"], f"{where}.providers[{index}].current")
    return paths


def _entries(obj: dict[str, Any], key: str, where: str) -> list[str]:
    """A list (or name -> entry object) of MCP servers or auth methods: each entry whole
    by the container rules; an entry that is no object is replaced."""
    entries, path = obj[key], child(where, key)
    if isinstance(entries, dict):
        return _container(entries, path)
    if not isinstance(entries, list):
        return [_replace(obj, key, where)] if _secret(entries) else []
    paths: list[str] = []
    for index, entry in enumerate(entries):
        if isinstance(entry, dict):
            paths += _container(entry, f"{path}[{index}]")
        elif _secret(entry):
            entries[index] = REDACTED
            paths.append(f"{path}[{index}]")
    return paths


def _container(obj: dict[str, Any], where: str) -> list[str]:
    """The rules inside an object that holds credentials (an MCP server, an auth method, a
    provider's config, a `_meta`): `env`/`headers` values, `args` credentials, the value of
    every credential-named key, credentials in every string (URLs, scripts); nested too."""
    paths: list[str] = []
    for key in list(obj):
        value = obj[key]
        if value is None or value == REDACTED:
            continue
        if key in ("env", "headers"):
            paths += _pairs(obj, key, where)
        elif key == "args":
            paths += _args(obj, key, where)
        elif names_credential(key):
            paths.append(_replace(obj, key, where))
        elif isinstance(value, str):
            paths += _string(obj, key, where)
        elif isinstance(value, dict):
            paths += _container(value, child(where, key))
        elif isinstance(value, list):
            paths += _list(value, child(where, key))
    return paths


def _list(items: list[Any], where: str) -> list[str]:
    paths: list[str] = []
    for index, item in enumerate(items):
        path = f"{where}[{index}]"
        if isinstance(item, dict):
            paths += _container(item, path)
        elif isinstance(item, list):
            paths += _list(item, path)
        elif isinstance(item, str) and (new := scrub_text(item)) != item:
            items[index] = new
            paths.append(path)
    return paths


def _pairs(obj: dict[str, Any], key: str, where: str) -> list[str]:
    """`[{name, value, _meta}, ...]` (an HttpHeader, an EnvVariable): every `value`, and every
    value under its `_meta` as the pair's own value (`_pair_meta`); `{NAME: value, ...}`:
    every value; anything else (a string such as `"TOKEN=x"`, a number) replaced whole.
    Names stay."""
    pairs, path = obj[key], child(where, key)
    if isinstance(pairs, dict):
        return [_replace(pairs, name, path) for name in list(pairs) if _secret(pairs[name])]
    if not isinstance(pairs, list):
        return [_replace(obj, key, where)] if _secret(pairs) else []
    paths: list[str] = []
    for index, pair in enumerate(pairs):
        if isinstance(pair, dict):
            if _secret(pair.get("value")):
                paths.append(_replace(pair, "value", f"{path}[{index}]"))
            if "_meta" in pair:
                paths += _pair_meta(pair, f"{path}[{index}]")
        elif _secret(pair):
            pairs[index] = REDACTED
            paths.append(f"{path}[{index}]")
    return paths


def _pair_meta(pair: dict[str, Any], where: str) -> list[str]:
    """A pair's `_meta` holds what its value holds (issue 44: a header's value moved there):
    every value under it that is not null is replaced, at any depth, keys kept; a `_meta`
    that is no object or array (a string, a number) is replaced whole. Iterative."""
    if not isinstance(pair["_meta"], dict | list):
        return [_replace(pair, "_meta", where)] if _secret(pair["_meta"]) else []
    paths: list[str] = []
    stack: list[tuple[Any, Any]] = [(pair["_meta"], (None, child(where, "_meta")))]
    while stack:
        node, trail = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for step, value in list(items):
            if isinstance(value, dict | list):
                stack.append((value, (trail, step)))
            elif _secret(value):
                node[step] = REDACTED
                paths.append(spell((trail, step)))
    return paths


def _args(obj: dict[str, Any], key: str, where: str) -> list[str]:
    """An argv: the words `scrub_words` changes (credential flags and their values,
    `Authorization:` headers, `NAME=value` credentials, URL credentials)."""
    args, path = obj[key], child(where, key)
    if isinstance(args, str):
        return _string(obj, key, where)
    if not isinstance(args, list):
        return []
    scrubbed = scrub_words(args)
    paths = [f"{path}[{i}]" for i, (a, b) in enumerate(zip(args, scrubbed, strict=True)) if a != b]
    args[:] = scrubbed
    return paths


def _string(obj: dict[str, Any], key: str, where: str) -> list[str]:
    """A URL or other string: its credential parts replaced; a value that is neither a
    string nor null where a URL belongs is replaced whole."""
    value = obj[key]
    if isinstance(value, str):
        new = scrub_text(value)
        if new == value:
            return []
        obj[key] = new
        return [child(where, key)]
    if isinstance(value, dict | list):
        return [_replace(obj, key, where)]
    return []


def _meta_anywhere(msg: dict[str, Any], where: str) -> list[str]:
    """Every `_meta` object at any depth, by the container rules; a `_meta` string is
    scrubbed. Iterative (deep messages cannot exhaust the stack here), and a node's path is
    spelled only when a `_meta` is found under it."""
    paths: list[str] = []
    stack: list[tuple[Any, Any]] = [(msg, (None, where))]
    while stack:
        node, trail = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "_meta" and isinstance(value, dict | str):
                    if isinstance(value, dict) and not _may_change(value):
                        continue
                    parent = spell(trail)
                    if isinstance(value, dict):
                        paths += _container(value, child(parent, key))
                    else:
                        paths += _string(node, key, parent)
                elif isinstance(value, dict | list):
                    stack.append((value, (trail, key)))
        elif isinstance(node, list):
            stack.extend((item, (trail, index)) for index, item in enumerate(node))
    return paths


_PAIRS_AND_ARGS = frozenset({"env", "headers", "args"})


def _may_change(obj: dict[str, Any]) -> bool:
    """False only when `_container(obj)` changes nothing: no `env`, `headers` or `args` key
    at any depth, and no key or string that `may_scrub` lets through (read together, one
    per line): a name that may name a credential, a URL, a `-h`/`-u` flag. An agent's
    `_meta` on every tool call (`{"claudeCode": {"toolName": "Edit"}}`) is read in one
    search instead of path by path (issue 34)."""
    texts: list[str] = []
    stack: list[Any] = [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if not _PAIRS_AND_ARGS.isdisjoint(node):
                return True
            texts.extend(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            texts.append(node)
    return may_scrub("\n".join(texts))


def _secret(value: Any) -> bool:
    return value is not None and value != REDACTED


def _replace(container: dict[str, Any], key: str, where: str) -> str:
    container[key] = REDACTED
    return child(where, key)


def _other(src: str) -> str:
    return "agent" if src == "client" else "client"
