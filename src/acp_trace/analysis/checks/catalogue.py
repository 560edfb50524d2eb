"""The rule catalogue as data: id, severity, side and summary of every rule, in catalogue
order (docs/rules.md). It imports nothing, polars and the analysis least of all, so
`acp-trace rules` starts at once; each check function registers under its id
(`registry.rule`), which refuses an entry other than this one: the two cannot drift apart."""

from __future__ import annotations

from typing import NamedTuple

SEVERITIES = ("error", "warning", "info")
# Who a finding blames: the agent, the client, or both (a fact about the exchange itself).
SIDES = ("agent", "client", "both")


class Entry(NamedTuple):
    """A rule of the catalogue."""

    id: str
    severity: str
    side: str  # who breaks it, unless a finding says otherwise
    summary: str


# fmt: off
CATALOGUE = tuple(Entry(*fields) for fields in (
    ('marker-missing', 'error', 'agent', 'a replaying v2 resume succeeded without a replay_complete marker'),
    ('marker-duplicate', 'error', 'agent', 'a second marker for a resume that already had its marker'),
    ('marker-late', 'error', 'agent', 'a marker arrived after the response of the resume it belongs to'),
    ('marker-unexpected', 'error', 'agent', 'a marker on a session that no open replaying resume covers'),
    ('marker-with-rejection', 'error', 'agent', 'a marker in the window of a resume answered -32602'),
    ('live-before-marker', 'error', 'agent', "a live-only update before the session's marker"),
    ('request-before-marker', 'warning', 'agent', 'a permission or elicitation request before the marker'),
    ('child-marker-missing', 'error', 'agent', 'an announced child has no marker before a success response'),
    ('child-marker-before-announce', 'error', 'agent', "a child's marker came before its subagent_update"),
    ('concurrent-replay', 'warning', 'client', 'a second replaying resume of a session while one that covers it is pending'),
    ('updates-with-rejection', 'error', 'agent', 'a v2 resume with a cursor answered -32602 got history updates in its window'),
    ('state-snapshot-missing', 'error', 'agent', 'a successful v2 session/resume sent no state_update'),
    ('replay-without-cursor', 'warning', 'agent', 'a resume without cursor replayed history'),
    ('message-id-missing', 'error', 'agent', 'a replayed v2 message has no messageId'),
    ('load-updates-after-response', 'error', 'agent', "history arrived after a v1 load's response"),
    ('child-update-before-announce', 'error', 'agent', 'a live update or agent request for a child came before the subagent_update announcing it'),
    ('suggestions-in-replay', 'warning', 'agent', 'a prompt_suggestions_update before the marker of a replay'),
    ('subagents-not-advertised', 'error', 'agent', 'a v1 agent sent subagent updates to a client that did not advertise subagents'),
    ('replay-prompt-id-changed', 'error', 'agent', "a prompt's user message replayed under another messageId, or its id with other content"),
    ('replay-chunk-before-message', 'error', 'agent', 'a replayed chunk came before the whole-message update of its messageId'),
    ('replay-duplicate-message', 'warning', 'agent', 'a replay repeated a whole message or a tool call under the same id'),
    ('replay-id-unstable', 'warning', 'agent', 'a replayed message matched its source by content under another id'),
    ('replay-reordered', 'warning', 'agent', 'a replay carried messages out of the order of its source'),
    ('replay-truncated-content', 'warning', 'agent', 'a replayed message or tool call carried less content than its source'),
    ('replay-missing-messages', 'info', 'agent', 'a replay left out messages of its source'),
    ('replay-extra-messages', 'info', 'agent', 'a replay carried messages its complete source lacks'),
    ('frame-over-client-limit', 'warning', 'both', 'a line longer than a known client limit'),
    ('silence-past-client-deadline', 'info', 'agent', "a silence inside a replay or session/new window longer than a known client deadline"),
    ('replay-outlasts-quiet-window', 'info', 'agent', 'history updates after a quiet-window client would have taken the replay for over'),
    ('non-json-line', 'error', 'both', "a line on the agent's stdout or the client's stdin is not JSON-RPC"),
    ('unanswered-request', 'warning', 'both', 'a request has no response when the trace ends'),
    ('orphan-response', 'warning', 'both', 'a response answers no pending request of the other side'),
    ('duplicate-request-id', 'warning', 'both', 'a sender reuses the id of its own pending request'),
    ('cancel-unanswered', 'error', 'both', 'a cancelled request never got a response'),
    ('import-ambiguous-direction', 'info', 'both', "an imported message's direction had to be guessed"),
    ('schema-invalid', 'error', 'both', 'a message does not match the ACP JSON Schema of its method and direction'),
    ('caused-error', 'info', 'both', 'an error response (-32602, -32600) answers a request that broke the schema'),
    ('acceptance-duplicate', 'warning', 'agent', 'more than one acceptance update for one prompt'),
    ('acceptance-carries-info', 'warning', 'agent', 'the acceptance update carries title or updatedAt'),
    ('acceptance-outside-prompt', 'warning', 'agent', 'an acceptance update with no prompt turn under way'),
    ('uuid-on-cancelled', 'warning', 'agent', 'a cancelled turn names an assistantMessageUuid'),
    ('import-unknown-error-code', 'info', 'both', 'an imported error response whose code was not recorded'),
    ('remote-wrong-stream', 'error', 'agent', "a message for one session came on another session's stream"),
    ('remote-client-error', 'error', 'client', 'the client provoked a 400, 409 or 426, or a WebSocket close 1002 or 1008, from the agent'),
    ('remote-stream-closed-owing', 'error', 'agent', "the agent's side ended a stream while a request it would answer there was pending"),
    ('remote-reconnect-lost', 'warning', 'agent', 'a stream opened again lost what its last reader was owed'),
    ('remote-order-by-stamps', 'info', 'both', "a replay's updates and response came on more than one stream: their order is the proxy's stamps"),
))
# fmt: on
ENTRIES = {entry.id: entry for entry in CATALOGUE}
# The official ACP test kit's requirement that a rule checks on recorded traffic (acp-tck's
# ACP-<AREA>-<NNN> ids; protocol-notes.md "What a replay must carry").
TCK = {
    "load-updates-after-response": "ACP-RESUME-202",
    "replay-without-cursor": "ACP-RESUME-203",
    "replay-prompt-id-changed": "ACP-RESUME-204",
    "replay-chunk-before-message": "ACP-RESUME-205",
}
