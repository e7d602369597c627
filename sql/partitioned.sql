--
-- partitioned: a flow's target may be a partitioned table, made by its
-- owner before the flow.  A run reads each target row with the partition
-- that holds it and deletes it there by its row id, so rows are never
-- confused across partitions (every partition numbers its rows from the
-- start); inserts go through the partitioned table, which routes them, and
-- a row whose partitioning columns change moves to its new partition.
-- Every kind of flow writes one: SCD 1, SCD 2 (partitioned by the key or by
-- __start_at), bitemporal, changes(), snapshot flows, the statement form;
-- as_of reads it; full_refresh empties it; a first load rebuilds each
-- partition's indexes; a row no partition accepts fails the run, which
-- applies nothing.
--
\pset null '(null)'
CREATE TABLE pt_feed (id int, v text, seq int, op text);
-- SCD 1, by hash of the key
CREATE TABLE pt1 (id int PRIMARY KEY, v text) PARTITION BY HASH (id);
CREATE TABLE pt1_0 PARTITION OF pt1 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE pt1_1 PARTITION OF pt1 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
SELECT autocdc.create_flow('pt1', 'pt_feed', '{id}', 'seq', column_list => '{id,v}',
	apply_as_deletes => $$op = 'D'$$, continuous => false);
-- SCD 2, by range of __start_at
CREATE TABLE pt2 (id int, v text, __start_at int, __end_at int, PRIMARY KEY (id, __start_at))
	PARTITION BY RANGE (__start_at);
CREATE TABLE pt2_old PARTITION OF pt2 FOR VALUES FROM (MINVALUE) TO (3);
CREATE TABLE pt2_new PARTITION OF pt2 FOR VALUES FROM (3) TO (MAXVALUE);
SELECT autocdc.create_flow('pt2', 'pt_feed', '{id}', 'seq', column_list => '{id,v}',
	apply_as_deletes => $$op = 'D'$$, stored_as_scd_type => '2', continuous => false);
-- SCD 1, by list of a data column: an update of v moves its row
CREATE TABLE pt3 (id int, v text) PARTITION BY LIST (v);
CREATE TABLE pt3_a PARTITION OF pt3 FOR VALUES IN ('a');
CREATE TABLE pt3_rest PARTITION OF pt3 DEFAULT;
SELECT autocdc.create_flow('pt3', 'pt_feed', '{id}', 'seq', column_list => '{id,v}',
	apply_as_deletes => $$op = 'D'$$, continuous => false);
INSERT INTO pt_feed SELECT g, 'a', 1, 'U' FROM generate_series(1, 6) g;
SELECT f, (autocdc.run_flow(f)).* FROM unnest('{pt1,pt2,pt3}'::text[]) f;
-- updates, deletes and a late update; the rows at the same row ids in
-- other partitions must stay as they are
INSERT INTO pt_feed SELECT g, 'b', 4, 'U' FROM generate_series(1, 3) g;
INSERT INTO pt_feed SELECT g, NULL, 5, 'D' FROM generate_series(5, 6) g;
INSERT INTO pt_feed VALUES (1, 'late', 2, 'U');
SELECT f, (autocdc.run_flow(f)).* FROM unnest('{pt1,pt2,pt3}'::text[]) f;
SELECT tableoid::regclass, * FROM pt1 ORDER BY id;
SELECT tableoid::regclass, * FROM pt2 ORDER BY id, __start_at;
SELECT tableoid::regclass, * FROM pt3 ORDER BY id;
-- the same rows as ordinary targets of the same events
SELECT autocdc.create_flow('pt1_plain', 'pt_feed', '{id}', 'seq', column_list => '{id,v}',
	apply_as_deletes => $$op = 'D'$$, continuous => false);
SELECT autocdc.create_flow('pt2_plain', 'pt_feed', '{id}', 'seq', column_list => '{id,v}',
	apply_as_deletes => $$op = 'D'$$, stored_as_scd_type => '2', continuous => false);
SELECT num_events FROM autocdc.run_flow('pt1_plain');
SELECT num_events FROM autocdc.run_flow('pt2_plain');
SELECT (SELECT array_agg(t::text ORDER BY id) FROM pt1 t)
		 = (SELECT array_agg(t::text ORDER BY id) FROM pt1_plain t) AS scd1_same,
	   (SELECT array_agg(t::text ORDER BY id, __start_at) FROM pt2 t)
		 = (SELECT array_agg(t::text ORDER BY id, __start_at) FROM pt2_plain t) AS scd2_same;
-- as_of over the partitioned SCD 2 target, against the ordinary one
SELECT x, (SELECT array_agg(r::text ORDER BY id) FROM autocdc.as_of(NULL::pt2, x) r)
		  IS NOT DISTINCT FROM (SELECT array_agg(r::text ORDER BY id) FROM autocdc.as_of(NULL::pt2_plain, x) r) AS same
  FROM generate_series(0, 6) x;
SELECT * FROM autocdc.as_of_key(NULL::pt2, 1, 3);
-- a row no partition accepts fails the run, which applies nothing
CREATE TABLE pt4 (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE pt4_low PARTITION OF pt4 FOR VALUES FROM (0) TO (100);
CREATE TABLE pt4_feed (id int, v text, seq int);
SELECT autocdc.create_flow('pt4', 'pt4_feed', '{id}', 'seq', continuous => false, column_list => '{id,v}');
INSERT INTO pt4_feed VALUES (1, 'a', 1), (2, 'a', 1), (500, 'a', 1);
SELECT * FROM autocdc.run_flow('pt4');
SELECT count(*) AS rows, (SELECT num_events FROM autocdc.flow_state WHERE name = 'pt4') AS applied FROM pt4;
CREATE TABLE pt4_high PARTITION OF pt4 FOR VALUES FROM (100) TO (1000);
SELECT num_events, num_upserted_rows FROM autocdc.run_flow('pt4');
SELECT tableoid::regclass, * FROM pt4 ORDER BY id;
-- two levels of partitions, bitemporal: by hash of the key, then by range of __start_at
CREATE TABLE pt_bt_feed (id int, v text, bt int, st int);
CREATE TABLE pt5 (id int, v text, __start_at int, __end_at int, __system_start_at int, __system_end_at int,
	PRIMARY KEY (id, __start_at, __system_start_at)) PARTITION BY HASH (id);
CREATE TABLE pt5_0 PARTITION OF pt5 FOR VALUES WITH (MODULUS 2, REMAINDER 0) PARTITION BY RANGE (__start_at);
CREATE TABLE pt5_0a PARTITION OF pt5_0 FOR VALUES FROM (MINVALUE) TO (5);
CREATE TABLE pt5_0b PARTITION OF pt5_0 FOR VALUES FROM (5) TO (MAXVALUE);
CREATE TABLE pt5_1 PARTITION OF pt5 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
SELECT autocdc.create_flow('pt5', 'pt_bt_feed', '{id}', 'bt', stored_as_scd_type => 'bitemporal',
	system_sequence_by => 'st', column_list => '{id,v}', continuous => false);
SELECT autocdc.create_flow('pt5_plain', 'pt_bt_feed', '{id}', 'bt', stored_as_scd_type => 'bitemporal',
	system_sequence_by => 'st', column_list => '{id,v}', continuous => false);
INSERT INTO pt_bt_feed VALUES (1, 'a', 1, 1), (2, 'a', 1, 1), (3, 'a', 1, 1), (4, 'a', 6, 1);
SELECT num_events FROM autocdc.run_flow('pt5');
INSERT INTO pt_bt_feed VALUES (1, 'b', 6, 2), (2, 'b', 3, 2), (4, 'c', 2, 3), (3, 'late', 1, 4);
SELECT num_events FROM autocdc.run_flow('pt5');
SELECT num_events FROM autocdc.run_flow('pt5_plain');
SELECT tableoid::regclass, * FROM pt5 ORDER BY id, __system_start_at, __start_at;
SELECT (SELECT array_agg(t::text ORDER BY id, __system_start_at, __start_at) FROM pt5 t)
	   = (SELECT array_agg(t::text ORDER BY id, __system_start_at, __start_at) FROM pt5_plain t) AS same;
SELECT * FROM autocdc.as_of(NULL::pt5, 4, 2) ORDER BY id;
-- changes() of a table into a partitioned target, its first read and a refresh
CREATE TABLE pt_src (id int PRIMARY KEY, v text);
INSERT INTO pt_src SELECT g, 'v' || g FROM generate_series(1, 5) g;
CREATE TABLE pt6 (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE pt6_a PARTITION OF pt6 FOR VALUES FROM (0) TO (3);
CREATE TABLE pt6_b PARTITION OF pt6 FOR VALUES FROM (3) TO (MAXVALUE);
SELECT autocdc.create_flow('pt6', 'changes(pt_src)', '{id}', column_list => '{id,v}', continuous => false);
SELECT num_events FROM autocdc.run_flow('pt6');
UPDATE pt_src SET v = 'w' WHERE id IN (1, 4);
DELETE FROM pt_src WHERE id = 5;
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('pt6');
SELECT tableoid::regclass, * FROM pt6 ORDER BY id;
SELECT num_deleted_rows FROM autocdc.full_refresh('pt6');
SELECT tableoid::regclass, * FROM pt6 ORDER BY id;
-- a snapshot flow into a partitioned target, and its full_refresh
CREATE TABLE pt_snap (id int PRIMARY KEY, v text);
INSERT INTO pt_snap VALUES (1, 'a'), (2, 'a'), (4, 'a');
CREATE TABLE pt7 (id int PRIMARY KEY, v text) PARTITION BY HASH (id);
CREATE TABLE pt7_0 PARTITION OF pt7 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE pt7_1 PARTITION OF pt7 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
SELECT autocdc.create_snapshot_flow('pt7', 'pt_snap', '{id}', continuous => false);
SELECT num_events, num_upserted_rows FROM autocdc.run_flow('pt7');
UPDATE pt_snap SET v = 'b' WHERE id = 2;
DELETE FROM pt_snap WHERE id = 4;
INSERT INTO pt_snap VALUES (3, 'a');
SELECT num_upserted_rows, num_deleted_rows FROM autocdc.run_flow('pt7');
SELECT tableoid::regclass, * FROM pt7 ORDER BY id;
SELECT num_upserted_rows FROM autocdc.full_refresh('pt7');
SELECT tableoid::regclass, * FROM pt7 ORDER BY id;
-- the statement form over an existing partitioned table
CREATE TABLE pt8 (id int PRIMARY KEY, v text) PARTITION BY HASH (id);
CREATE TABLE pt8_0 PARTITION OF pt8 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE pt8_1 PARTITION OF pt8 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
SELECT * FROM autocdc.execute($$
	CREATE STREAMING TABLE pt8;
	CREATE FLOW pt8_flow AS AUTO CDC INTO pt8 FROM pt4_feed KEYS (id) SEQUENCE BY seq COLUMNS (id, v)$$);
SELECT num_events FROM autocdc.run_flow('pt8_flow');
SELECT tableoid::regclass, * FROM pt8 ORDER BY id;
-- a first load of 10,000 rows or more rebuilds each partition's indexes:
-- valid, holding every row
CREATE TABLE pt_big_feed (id int, v text, seq int);
INSERT INTO pt_big_feed SELECT g, 'x', 1 FROM generate_series(1, 12000) g;
CREATE TABLE pt9 (id int PRIMARY KEY, v text) PARTITION BY HASH (id);
CREATE TABLE pt9_0 PARTITION OF pt9 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE pt9_1 PARTITION OF pt9 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
SELECT autocdc.create_flow('pt9', 'pt_big_feed', '{id}', 'seq', column_list => '{id,v}', continuous => false);
CREATE TEMP TABLE pt9_nodes AS
	SELECT indexrelid::regclass AS idx, pg_relation_filenode(indexrelid) AS node
	  FROM pg_index WHERE indrelid IN ('pt9_0'::regclass, 'pt9_1'::regclass);
SELECT num_upserted_rows FROM autocdc.run_flow('pt9');
SELECT n.idx, pg_relation_filenode(n.idx) <> n.node AS rebuilt, i.indisvalid, i.indisready
  FROM pt9_nodes n JOIN pg_index i ON i.indexrelid = n.idx ORDER BY 1;
SET enable_seqscan = off;
SELECT count(*) FROM pt9 WHERE id BETWEEN 100 AND 199;
RESET enable_seqscan;
