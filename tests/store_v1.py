"""Stores as schema 1 (before users and groups were apart) wrote them, for the migration tests:
the DDL and row layout of that release, written without today's code."""

from __future__ import annotations

import json
import sqlite3

from store_cases import EMB

SQLITE_V1 = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE versions(doc TEXT NOT NULL, version INTEGER NOT NULL, status TEXT NOT NULL, date TEXT, effective_to TEXT,
  title TEXT, source TEXT, content_hash TEXT NOT NULL, n_chunks INTEGER NOT NULL, indexed_at TEXT, PRIMARY KEY (doc, version));
CREATE TABLE chunks(rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL, version INTEGER NOT NULL,
  position INTEGER, status TEXT NOT NULL, date TEXT, effective_to TEXT, title TEXT, section TEXT,
  source_type TEXT, trust TEXT, acl TEXT, public INTEGER NOT NULL, metadata TEXT, text TEXT NOT NULL,
  tokens INTEGER NOT NULL, vector BLOB NOT NULL);
CREATE INDEX chunks_docver ON chunks(doc, version, position);
CREATE TABLE chunk_acl(principal TEXT NOT NULL, chunk INTEGER NOT NULL, PRIMARY KEY (principal, chunk)) WITHOUT ROWID;
CREATE INDEX chunk_acl_chunk ON chunk_acl(chunk);
CREATE VIRTUAL TABLE chunks_fts USING fts5(title, section, text, tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE principals(name TEXT PRIMARY KEY, groups TEXT NOT NULL);
INSERT INTO meta VALUES ('schema', '1'), ('generation', '0');
"""

PG_V1 = """
CREATE TABLE meta(key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE versions(doc text NOT NULL, version integer NOT NULL, status text NOT NULL, date date, effective_to date,
  title text, source text, content_hash text NOT NULL, n_chunks integer NOT NULL, indexed_at timestamptz,
  PRIMARY KEY (doc, version));
CREATE TABLE principals(name text PRIMARY KEY, groups text[] NOT NULL);
CREATE TABLE chunks(rowid bigserial PRIMARY KEY, id text NOT NULL UNIQUE, doc text NOT NULL, version integer NOT NULL,
  position integer, status text NOT NULL, date date, effective_to date, title text, section text,
  source_type text, trust text, acl text[], public boolean NOT NULL, metadata jsonb, text text NOT NULL,
  tokens integer NOT NULL, vector vector(64) NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', coalesce(title, '') || ' ' || coalesce(section, '')), 'B')
    || setweight(to_tsvector('english', text), 'A')) STORED,
  len integer NOT NULL DEFAULT 0);
CREATE TABLE chunk_terms(term text NOT NULL, chunk bigint NOT NULL REFERENCES chunks(rowid) ON DELETE CASCADE,
  tf real NOT NULL, len real NOT NULL, PRIMARY KEY (term, chunk) INCLUDE (tf, len));
CREATE TABLE fts_stats(one boolean PRIMARY KEY DEFAULT true CHECK (one), n bigint NOT NULL, total_len bigint NOT NULL);
INSERT INTO fts_stats VALUES (true, 0, 0);
CREATE INDEX chunks_acl ON chunks USING gin(acl);
"""

#: (doc, id, text, acl) rows of the old store: a user's chunk, a group's, a public one
ROWS = [
    ("pub", "pub-0", "holiday rules for everyone in the company", None),
    ("hr", "hr-0", "holiday payout table for the finance team", ["finance"]),
    ("ceo", "ceo-0", "holiday plans of the chief executive carol", ["carol"]),
    ("both", "both-0", "holiday budget shared by carol and finance", ["carol", "finance"]),
]
#: carol is a registered user (and nobody's group), finance is dave's group
PRINCIPALS = [("carol", []), ("dave", ["finance"])]


def write_sqlite_v1(path: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(SQLITE_V1)
    conn.execute("INSERT INTO meta VALUES ('embedder', ?), ('dim', ?)", (EMB.name, str(EMB.dim)))
    for name, groups in PRINCIPALS:
        conn.execute("INSERT INTO principals VALUES (?, ?)", (name, json.dumps(groups)))
    for i, (doc, cid, text, acl) in enumerate(ROWS, 1):
        conn.execute("INSERT INTO versions VALUES (?, 1, 'current', NULL, NULL, ?, 'v1', 'h', 1, NULL)", (doc, doc))
        conn.execute(
            "INSERT INTO chunks VALUES (?,?,?,1,0,'current',NULL,NULL,?,'',NULL,NULL,?,?,NULL,?,?,?)",
            (i, cid, doc, doc, json.dumps(acl) if acl is not None else None, 1 if acl is None else 0, text,
             len(text.split()), EMB.embed([text])[0].tobytes()))
        conn.execute("INSERT INTO chunks_fts(rowid, title, section, text) VALUES (?, ?, '', ?)", (i, doc, text))
        for p in acl or ():
            conn.execute("INSERT INTO chunk_acl VALUES (?, ?)", (p, i))
    conn.close()


def write_pg_v1(url: str) -> None:
    import psycopg
    from pgvector.psycopg import register_vector

    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute(PG_V1)
        conn.execute("INSERT INTO meta VALUES ('embedder', %s), ('dim', %s)", (EMB.name, str(EMB.dim)))
        for name, groups in PRINCIPALS:
            conn.execute("INSERT INTO principals VALUES (%s, %s)", (name, groups))
        for doc, cid, text, acl in ROWS:
            conn.execute("INSERT INTO versions VALUES (%s, 1, 'current', NULL, NULL, %s, 'v1', 'h', 1, NULL)", (doc, doc))
            conn.execute("INSERT INTO chunks(id, doc, version, position, status, title, section, acl, public, text, tokens,"
                         " vector) VALUES (%s,%s,1,0,'current',%s,'',%s,%s,%s,%s,%s)",
                         (cid, doc, doc, acl, acl is None, text, len(text.split()), EMB.embed([text])[0]))
        conn.execute("UPDATE chunks c SET len = l.n FROM (SELECT c2.rowid, sum(cardinality(u.positions)) AS n "
                     "FROM chunks c2, unnest(c2.tsv) u GROUP BY c2.rowid) l WHERE c.rowid = l.rowid")
        conn.execute("INSERT INTO chunk_terms SELECT u.lexeme, c.rowid, cardinality(u.positions), c.len "
                     "FROM chunks c, unnest(c.tsv) u")
        conn.execute("UPDATE fts_stats SET n = (SELECT count(*) FROM chunks), total_len = (SELECT sum(len) FROM chunks)")
