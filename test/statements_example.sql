--
-- statements_example.sql: the worked examples 1-4 of semantics §8 written as a
-- Databricks pipeline (CREATE OR REFRESH STREAMING TABLE + CREATE FLOW ... AS
-- AUTO CDC INTO), run through the statement form of semantics §3.1.
-- sql/statements.sql creates the feeds st_users_cdf and st_users_cdf_trunc
-- and then includes this file with \i.
--
-- Spark writes string literals in double quotes; in PostgreSQL they are
-- single-quoted, so the conditions below use 'DELETE' and 'TRUNCATE'.
--

-- Examples 1 and 2 (SCD type 1): one DO block, four statements
DO LANGUAGE autocdc $$
-- Example 1: SCD type 1
CREATE OR REFRESH STREAMING TABLE st_ex1;

CREATE FLOW st_ex1_flow AS AUTO CDC INTO st_ex1
FROM stream(st_users_cdf)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
APPLY AS TRUNCATE WHEN operation = 'TRUNCATE'
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 1;

-- Example 2: the same flow over the feed that also holds a TRUNCATE row
-- (no STORED AS clause: SCD type 1 is the default)
CREATE OR REFRESH STREAMING TABLE st_ex2;

CREATE FLOW st_ex2_flow AS AUTO CDC INTO st_ex2
FROM stream(st_users_cdf_trunc)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
APPLY AS TRUNCATE WHEN operation = 'TRUNCATE'
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
$$;

-- Examples 3 and 4 (SCD type 2) through autocdc.execute: one command tag
-- per statement, in order
SELECT * FROM autocdc.execute($$
-- Example 3: SCD type 2
CREATE OR REFRESH STREAMING TABLE st_ex3;

CREATE FLOW st_ex3_flow AS AUTO CDC INTO st_ex3
FROM stream(st_users_cdf)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 2;

-- Example 4: SCD type 2, history tracked on every column but city
CREATE OR REFRESH STREAMING TABLE st_ex4;

CREATE FLOW st_ex4_flow AS AUTO CDC INTO st_ex4
FROM stream(st_users_cdf)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 2
TRACK HISTORY ON * EXCEPT (city);
$$);
