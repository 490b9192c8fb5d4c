-- stoatflow 0.2 -> 0.3 (ALTER EXTENSION stoatflow UPDATE). Until 0.3 is released this is also how
-- a fresh CREATE EXTENSION reaches 0.3: PostgreSQL runs the frozen stoatflow--0.2.sql, then this
-- script, so the two install paths cannot drift (README "Upgrading"). At the 0.3 release the
-- definitions are written out into stoatflow--0.3.sql and this script is frozen like the others.
\echo Use "ALTER EXTENSION stoatflow UPDATE" to load this file. \quit
