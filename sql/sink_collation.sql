-- Text keys stoatflow creates compare bytewise (README "Key collation"): the sink's and the state
-- tables' key columns are COLLATE "C", so the primary key's comparisons are memcmp, not the
-- database collation's. Windows stay exact (equality is the same in any deterministic
-- collation), the writer's upserts find their rows, restore and resync_sink work; a sink the
-- user made (or a 0.2 sink) with the database's collation keeps working as it is.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

CREATE FUNCTION coll_rec(u text, ts bigint, amount numeric DEFAULT 1) RETURNS jsonb
LANGUAGE sql AS $$ SELECT jsonb_build_object('partition', 0,
    'value', jsonb_build_object('user', u, 'ts', ts, 'amount', amount)) $$;
-- the collation of each text column of a table (NULL: the column is not collatable)
CREATE FUNCTION coll_of(t regclass) RETURNS TABLE (col name, coll name) LANGUAGE sql AS $$
    SELECT a.attname, c.collname FROM pg_attribute a LEFT JOIN pg_collation c ON c.oid = a.attcollation
     WHERE a.attrelid = t AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid IN ('text'::regtype, 'varchar'::regtype)
     ORDER BY a.attnum $$;

SELECT stoatflow.create_source('s_coll', 'events', '127.0.0.1:9092', key => 'user', event_time => 'ts',
    max_out_of_orderness => '1 hour');
SELECT stoatflow.create_aggregation('coll_tum', 's_coll', stoatflow.tumbling('1 minute'),
    'count(*) AS n, sum(amount) AS total', 'coll_tum');
-- the created sink: key COLLATE "C" (window_start is not text)
SELECT * FROM coll_of('coll_tum');
SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indrelid = 'coll_tum'::regclass;

-- Hostile keys: case and accents (different bytes, equal under some linguistic collations'
-- first level), trailing and leading blanks, an empty key, quotes, and non-ASCII; each is its
-- own window, in two commits (the second one upserts them all). A 3,000-byte key is over the
-- key length limit: a dead letter each time, never a sink row.
CREATE TABLE coll_keys (k text);
INSERT INTO coll_keys VALUES ('a'), ('A'), ('á'), ('a '), (' a'), (''), (repeat('é', 1500)),
    ('O''Brien'), ('"x"'), ('日本'), ('ß'), ('ss'), ('Ω'), ('z');
SELECT processed, dead_letters FROM stoatflow.process_records('s_coll',
    (SELECT jsonb_agg(coll_rec(k, 60000, 1)) FROM coll_keys));
SELECT processed, dead_letters FROM stoatflow.process_records('s_coll',
    (SELECT jsonb_agg(coll_rec(k, 61000, 2)) FROM coll_keys));
-- every key once, two events each, in byte order (COLLATE "C": 'A' < 'a' < 'z' < 'ß' < ...)
SELECT left(key, 8) AS key, length(key) AS len, n, total FROM coll_tum ORDER BY key, window_start;
SELECT count(*) = (SELECT count(*) FROM coll_keys WHERE octet_length(k) < 3000) AS one_row_per_key FROM coll_tum;
SELECT reason, count(*) FROM stoatflow.dead_letters WHERE source_name = 's_coll' GROUP BY reason;
-- lookups by a literal of the database's collation find the rows
SELECT n, total FROM coll_tum WHERE key = 'á';
SELECT count(*) FROM coll_tum WHERE key IN (SELECT k FROM coll_keys);

-- the state table the commit created: key COLLATE "C"
SELECT format('stoatflow_state.%I', relname) AS seg FROM stoatflow.segment s
  JOIN stoatflow.aggregation a USING (aggregation_id) WHERE a.aggregation_name = 'coll_tum' \gset
SELECT * FROM coll_of(:'seg');
-- restore reads that state: a third commit adds to the restored windows
SELECT processed, dead_letters FROM stoatflow.process_records('s_coll',
    (SELECT jsonb_agg(coll_rec(k, 62000, 4)) FROM coll_keys WHERE k IN ('a', 'A', '')));
SELECT key, n, total FROM coll_tum WHERE key IN ('a', 'A', '', 'z') ORDER BY key;
-- resync_sink rewrites the sink from the state tables
TRUNCATE coll_tum;
SELECT stoatflow.resync_sink('coll_tum') AS rewritten;
SELECT left(key, 8) AS key, n, total FROM coll_tum ORDER BY key, window_start;

-- A sink the user made with the database's collation (as 0.2 created them) keeps working.
CREATE TABLE coll_user (key text NOT NULL, window_start timestamptz NOT NULL, window_end timestamptz NOT NULL,
    n bigint, total numeric, event_time timestamptz NOT NULL, final boolean NOT NULL DEFAULT false,
    PRIMARY KEY (key, window_start));
SELECT stoatflow.create_aggregation('coll_usr', 's_coll', stoatflow.tumbling('1 minute'),
    'count(*) AS n, sum(amount) AS total', 'coll_user');
SELECT * FROM coll_of('coll_user');
SELECT processed, dead_letters FROM stoatflow.process_records('s_coll',
    (SELECT jsonb_agg(coll_rec(k, 63000, 8)) FROM coll_keys WHERE k IN ('a', 'á', 'Ω')));
SELECT processed, dead_letters FROM stoatflow.process_records('s_coll',
    (SELECT jsonb_agg(coll_rec(k, 63500, 16)) FROM coll_keys WHERE k IN ('a', 'á')));
SELECT key, n, total FROM coll_user ORDER BY key COLLATE "C", window_start;

-- The executor's route: a text group_by key is COLLATE "C" too, a non-text one has none.
SELECT stoatflow.create_source('s_coll_cols', 'events2', '127.0.0.1:9092', event_time => 'ts',
    max_out_of_orderness => '1 hour', columns => 'user text, ts bigint, amount integer');
SELECT stoatflow.create_aggregation('coll_exec', 's_coll_cols', stoatflow.tumbling('1 minute'),
    'count(*) AS n, sum(amount) AS total', 'coll_exec', group_by => 'lower("user") AS who, amount % 2 AS parity');
SELECT * FROM coll_of('coll_exec');
SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attcollation = 0 AS no_collation
  FROM pg_attribute a WHERE a.attrelid = 'coll_exec'::regclass AND a.attname = 'parity';
SELECT processed, dead_letters FROM stoatflow.process_records('s_coll_cols', jsonb_build_array(
    coll_rec('Ab', 60000, 1), coll_rec('aB', 60500, 3), coll_rec('ÁB', 61000, 2)));
SELECT who, parity, n, total FROM coll_exec ORDER BY who, parity;

SELECT stoatflow.drop_source('s_coll', cascade => true);
SELECT stoatflow.drop_source('s_coll_cols', cascade => true);
DROP TABLE coll_tum, coll_user, coll_exec, coll_keys;
DROP FUNCTION coll_rec(text, bigint, numeric), coll_of(regclass);
