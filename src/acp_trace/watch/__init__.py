"""`acp-trace watch`: traces followed as the tap writes them (`follow`), the live picture of
their connections, sessions and replays (`live`), the analyzer's verdicts on the records so
far (`judge`), the loop that joins them into events (`engine`), printed as JSON lines
(`stream`) or shown on a Textual screen (`screen`, `views`; Textual is the `[watch]` extra).
"""
