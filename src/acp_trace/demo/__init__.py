"""The reference peers: a demo ACP agent (`agent`, with its fabricated `history` and faults),
a scripted client (`client`), the JSON-RPC line endpoint they share (`rpc`) and `run`, which
records both through the tap and analyzes the traces (`acp-trace demo`)."""
