-- The two install paths build the same extension (README "Upgrading"): CREATE EXTENSION at the
-- current version (sql/stoatflow--0.2.sql, the 0.2 definitions written out, then
-- sql/stoatflow--0.2--0.3.sql) and CREATE EXTENSION at 0.1 followed by ALTER EXTENSION UPDATE
-- (sql/stoatflow--0.1--0.2.sql, then sql/stoatflow--0.2--0.3.sql), each in a database of its
-- own, described by test/upgrade/catalog.sql (the description test/upgrade/run.sh compares
-- after upgrading a running 0.1 deployment). On a difference, run that test: it prints the diff.
SET client_min_messages = warning;
CREATE DATABASE stoatflow_install_fresh;
CREATE DATABASE stoatflow_install_upgraded;
RESET client_min_messages;
\set catalog `sed -e '/^--/d' -e 's/;$//' catalog.sql`

\c stoatflow_install_fresh
CREATE EXTENSION stoatflow;
SELECT extversion FROM pg_extension WHERE extname = 'stoatflow';
SELECT count(*) > 300 AS described, md5(string_agg(line, E'\n' ORDER BY line COLLATE "C")) AS fresh
  FROM (:catalog) c \gset

\c stoatflow_install_upgraded
CREATE EXTENSION stoatflow VERSION '0.1';
ALTER EXTENSION stoatflow UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'stoatflow';
SELECT md5(string_agg(line, E'\n' ORDER BY line COLLATE "C")) AS upgraded FROM (:catalog) c \gset

SELECT :'described' AS described, :'fresh' = :'upgraded' AS same_catalog;

\c contrib_regression
DROP DATABASE stoatflow_install_fresh;
DROP DATABASE stoatflow_install_upgraded;
