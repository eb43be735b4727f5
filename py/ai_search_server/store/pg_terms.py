"""The PostgreSQL full-text table the keyword branch searches when ``keyword_index = "postgres"``.

``message_terms`` holds one row per message: the tokens the keyword branch matches (cut in Python
by ``retrieval.tokens``, the same words, CJK pairs and identifier parts as the FTS5 index, handed
to PostgreSQL as a ready ``tsvector``, so no text search configuration and no stopword list of
PostgreSQL's takes part), the message's room, folded author, time and marks (``has:``/``is:``),
a digest of all that, and ``seq``, the order rows were first written (ties of ``ts``). A GIN index serves ``@@``; the scope is checked in the same statement.

The rows are written by the retrieval side (``retrieval/pg_keyword.py``), which follows the
store's change log; the store only drops a message's row in the same transaction as the message
(a trigger), so a deleted message is never found again, whoever deleted it. ``message_terms_state``
records which change of the log the table is level with, shared by every process.

Thread roots are not stored: ``has:thread`` asks ``messages.tmid`` (indexed) at search time.
"""

from __future__ import annotations

__all__ = ["MESSAGE_TERMS_SQL"]

# pi^2 / 6: ts_rank scores n occurrences of one lexeme (weight 1) sum(1/j^2, j = 1..n) / (pi^2 / 6).
_PI2_6 = 1.6449340668482264

MESSAGE_TERMS_SQL: tuple[str, ...] = (
    """CREATE TABLE message_terms (
        message_id text COLLATE "C" PRIMARY KEY,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        room_id text COLLATE "C" NOT NULL,
        username text COLLATE "C" NOT NULL,
        ts bigint NOT NULL,
        marks text[] NOT NULL DEFAULT '{}',
        tokens integer NOT NULL,
        terms tsvector NOT NULL,
        digest bytea NOT NULL
    )""",
    # No pending list (fastupdate): each search would read it through, and a chat's writes are
    # few enough to go straight into the index.
    "CREATE INDEX message_terms_search ON message_terms USING gin (terms) WITH (fastupdate = off)",
    "CREATE INDEX message_terms_room_ts ON message_terms (room_id, ts)",
    # How often a term occurs in a message, from ts_rank of the message's vector against the term
    # alone (with one weight set to 1): one lexeme's n occurrences rank sum(1/j^2, j <= n), which
    # is below pi^2/6 and gives n back (the tail of the sum is 1/(n + 1/2) to within 1%); a prefix
    # matching several lexemes ranks 1 or more for each, so past pi^2/6 the rank is the count.
    f"""CREATE FUNCTION term_frequency(ranked real) RETURNS double precision
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN CASE
            WHEN ranked <= 0 THEN 0
            WHEN ranked * {_PI2_6} < 1.6449 THEN round(1 / ({_PI2_6} - ranked * {_PI2_6}) - 0.5)
            ELSE round(ranked * {_PI2_6})
        END""",
    """CREATE TABLE message_terms_state (
        key text COLLATE "C" PRIMARY KEY,
        value text NOT NULL
    )""",
    """CREATE FUNCTION forget_message_terms() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM message_terms WHERE message_id = OLD.id;
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER messages_forget_terms AFTER DELETE ON messages
        FOR EACH ROW EXECUTE FUNCTION forget_message_terms()""",
)
