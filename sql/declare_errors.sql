-- Errors a user causes when declaring (README "SQL reference"): the message and hint in the
-- user's own names (the columns and texts they wrote, never the analysis's own names), the
-- SQLSTATE, and no CONTEXT line naming the extension's internal SQL. A number without a unit
-- given as a window's interval is refused: PostgreSQL would read '5' as 5 seconds.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
SET timezone = 'UTC';
\set VERBOSITY default
\set SHOW_CONTEXT errors

-- windows: a bare number is refused (zero is zero in any unit), a unit or a typed interval is not
SELECT stoatflow.tumbling('5');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.tumbling('5 minutes', '30');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.tumbling('5 minutes', grace => '30');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.hopping('10 minutes', '1');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.hopping('10', '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.sliding(' -2.5 ');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.session('+5', grace => '0');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.tumbling('0');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.tumbling('5 minutes', '0');
SELECT stoatflow.tumbling('5 minutes', '0.0');
SELECT stoatflow.tumbling('5 minutes', '30 seconds');
SELECT stoatflow.tumbling(interval '5 minutes', interval '30');
SELECT stoatflow.hopping('10 minutes', '1 minute', grace => '30 s');
SELECT stoatflow.sliding('00:05:00');
SELECT stoatflow.session('PT30M');
SELECT stoatflow.tumbling('5 minuts');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.tumbling('1 month');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.tumbling(NULL);
\echo :LAST_ERROR_SQLSTATE

-- a source with columns
SELECT stoatflow.create_source('de_orders', 'de_orders', '127.0.0.1:9092',
    key => 'customer', event_time => 'ts',
    columns => 'customer text, ts timestamptz, amount numeric, region text, note jsonb');

-- typos and bad expressions in create_source: the column the user meant, no internal alias
SELECT stoatflow.create_source('de_bad', 'de_orders', '127.0.0.1:9092',
    event_time => 'tss', columns => 'customer text, ts timestamptz');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('de_bad', 'de_orders', '127.0.0.1:9092',
    key => 'custmer', columns => 'customer text, ts timestamptz');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('de_bad', 'de_orders', '127.0.0.1:9092',
    event_time => 'customer', columns => 'customer text, ts timestamptz');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('de_bad', 'de_orders', '127.0.0.1:9092',
    event_time => 'ts + 1', columns => 'customer text, ts timestamptz');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('de_bad', 'de_orders', '127.0.0.1:9092',
    columns => 'customer text, ts timestamptzz');
\echo :LAST_ERROR_SQLSTATE

-- typos and bad expressions in create_aggregation
SELECT stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
    'sum(amout)', 'de_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
    'count(*) AS n, customer', 'de_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
    'count(*)', 'de_sink', group_by => 'regon');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
    'count(*)', 'de_sink', filter => 'amout > 3');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
    'count(*)', 'de_sink', filter => 'amount >');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
    'count(*)', 'de_sink', filter => 'orders.amount > 3');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
    'sum(note)', 'de_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('de_a', 'de_nosuch', stoatflow.tumbling('5 minutes'),
    'count(*)', 'de_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('de_a', 'de_orders', NULL, 'count(*)', 'de_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
    'count(*)', 'de_sink', emit => 'sometimes');
\echo :LAST_ERROR_SQLSTATE
-- bad sinks
SELECT stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
    'count(*)', 'de_nosuchschema.de_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
    'count(*)', 'a.b.c');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE de_sink (key text, window_start timestamptz, window_end timestamptz,
    event_time timestamptz, final boolean, PRIMARY KEY (key, window_start));
SELECT stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
    'sum(amount)', 'de_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
    'count(*)', 'de_sink', group_by => 'region AS where_from');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE de_sink;
CREATE TABLE de_sink (key integer, window_start timestamptz, window_end timestamptz,
    count bigint, event_time timestamptz, final boolean, PRIMARY KEY (key, window_start));
SELECT stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
    'count(*)', 'de_sink');
\echo :LAST_ERROR_SQLSTATE

-- called from the user's own code, the user's context stays
DO $$
BEGIN
    PERFORM stoatflow.create_aggregation('de_a', 'de_orders', stoatflow.tumbling('5 minutes'),
        'sum(amout)', 'de_sink2');
END $$;
\echo :LAST_ERROR_SQLSTATE

-- nothing was declared
SELECT count(*) AS aggregations FROM stoatflow.aggregation;
SELECT stoatflow.drop_source('de_orders');
DROP TABLE de_sink;
