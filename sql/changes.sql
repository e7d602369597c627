-- changes: changes(tbl) sources.  The events of an ordinary table's
-- INSERT/UPDATE/DELETE/TRUNCATE, decoded from the WAL: key-changing updates,
-- the pseudo-columns and their defaults, first reads, the checks at
-- create_flow, out-of-line values, full_refresh that keeps the history, and
-- the statement form.
--
-- c_show(sql) shows a statement's error as "SQLSTATE: message" plus DETAIL
-- and HINT, with LSNs (which differ between runs) replaced by X/X.
CREATE FUNCTION c_show(sql text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE code text; msg text; det text; hint text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
							det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
	RETURN regexp_replace(code || ': ' || msg
		|| CASE WHEN det <> '' THEN E'\nDETAIL: ' || det ELSE '' END
		|| CASE WHEN hint <> '' THEN E'\nHINT: ' || hint ELSE '' END,
		'[0-9A-F]{1,8}/[0-9A-F]{1,8}', 'X/X', 'g');
END
$f$;
CREATE FUNCTION c_run(flow text) RETURNS bigint LANGUAGE sql AS $f$
	SELECT num_events FROM autocdc.run_flow(flow)
$f$;
-- c_state_rows(target) counts the rows of a target's hidden state
CREATE FUNCTION c_state_rows(tgt regclass) RETURNS bigint LANGUAGE plpgsql AS $f$
DECLARE
	n bigint;
BEGIN
	EXECUTE format('SELECT count(*) FROM autocdc_state.%I',
				   'target_' || (SELECT t.id FROM autocdc.target t WHERE t.relid = tgt)) INTO n;
	RETURN n;
END
$f$;

-- an OLTP table with rows before the flows exist (their first read)
CREATE TABLE c_prod (id int PRIMARY KEY, name text, price numeric);
INSERT INTO c_prod VALUES (1, 'apple', 10), (2, 'pear', 20);
SELECT autocdc.create_flow(target => 'c_copy', source => 'changes(c_prod)', keys => '{id}',
	continuous => false);
SELECT autocdc.create_flow(target => 'c_hist', source => 'stream(changes(c_prod))', keys => '{id}',
	stored_as_scd_type => '2', continuous => false);
-- the defaults, as stored and shown
SELECT name, source, sequence_by, apply_as_deletes, apply_as_truncates, source_kind
  FROM autocdc.flow WHERE name IN ('c_copy', 'c_hist') ORDER BY name;
SELECT name, source FROM autocdc.flows WHERE name LIKE 'c\_%' ORDER BY name;
-- the pseudo-columns are not target columns
SELECT attname FROM pg_attribute WHERE attrelid = 'c_hist'::regclass AND attnum > 0 ORDER BY attnum;
SELECT c_run('c_copy') AS first_read, c_run('c_hist') AS first_read;
SELECT * FROM c_copy ORDER BY id;

-- one transaction each: an update, a delete, an insert, a key change
UPDATE c_prod SET price = 11 WHERE id = 1;
DELETE FROM c_prod WHERE id = 2;
INSERT INTO c_prod VALUES (3, 'plum', 30);
UPDATE c_prod SET id = 4 WHERE id = 3;
-- the key change is a delete of 3 and an upsert of 4: five events
SELECT c_run('c_copy') AS events, c_run('c_hist') AS events;
-- SCD 1: the table as of the last applied commit
SELECT * FROM c_copy ORDER BY id;
SELECT count(*) AS differences FROM ((TABLE c_copy EXCEPT TABLE c_prod) UNION ALL (TABLE c_prod EXCEPT TABLE c_copy)) d;
-- SCD 2: every committed version of every row; a version ends where the next begins
SELECT id, name, price, __end_at IS NULL AS current FROM c_hist ORDER BY id, __start_at;
SELECT count(*) AS gaps FROM c_hist a JOIN c_hist b ON a.id = b.id AND a.__start_at < b.__start_at
 WHERE NOT EXISTS (SELECT FROM c_hist m WHERE m.id = a.id AND m.__start_at > a.__start_at AND m.__start_at < b.__start_at)
   AND a.__end_at IS DISTINCT FROM b.__start_at;

-- several changes of a key in one transaction tie on _commit_timestamp: the last wins
BEGIN;
INSERT INTO c_prod VALUES (5, 'fig', 50);
UPDATE c_prod SET price = 51 WHERE id = 5;
UPDATE c_prod SET price = 52 WHERE id = 5;
INSERT INTO c_prod VALUES (6, 'kiwi', 60);
DELETE FROM c_prod WHERE id = 6;
COMMIT;
SELECT c_run('c_copy') AS events, c_run('c_hist') AS events;
SELECT * FROM c_copy WHERE id >= 5 ORDER BY id;
SELECT id, name, price FROM c_hist WHERE id >= 5 ORDER BY id, __start_at;
-- _commit_timestamp is the commit time (a first read's: its snapshot's), one
-- per transaction, increasing along commit order
SELECT (SELECT __start_at FROM c_hist WHERE id = 1 AND price = 10) =
	   (SELECT __start_at FROM c_hist WHERE id = 2) AS first_read_one_time,
	   (SELECT __start_at FROM c_hist WHERE id = 1 AND price = 11) <
	   (SELECT __start_at FROM c_hist WHERE id = 3) AS later_commit_later,
	   (SELECT __end_at FROM c_hist WHERE id = 3) =
	   (SELECT __start_at FROM c_hist WHERE id = 4) AS key_change_one_time,
	   (SELECT bool_and(__start_at <= now()) FROM c_hist) AS not_in_the_future;

-- an update that changes nothing writes nothing to the target
SELECT xmin AS x5 FROM c_copy WHERE id = 5 \gset
UPDATE c_prod SET price = price WHERE id = 5;
SELECT c_run('c_copy') AS events;
SELECT xmin = :'x5' AS row_untouched FROM c_copy WHERE id = 5;

-- TRUNCATE is one truncate event: every key goes (SCD 2: every version ends)
TRUNCATE c_prod;
INSERT INTO c_prod VALUES (7, 'lime', 70);
SELECT c_run('c_copy') AS events, c_run('c_hist') AS events;
SELECT * FROM c_copy ORDER BY id;
SELECT id, name, __end_at IS NULL AS current FROM c_hist WHERE __end_at IS NULL ORDER BY id;

-- the pseudo-columns in expressions; a delete event that is not applied as a
-- delete is an upsert of what it carries (the key, the rest NULL)
SELECT autocdc.create_flow(target => 'c_keep', source => 'changes(c_prod)', keys => '{id}',
	sequence_by => '_commit_lsn',
	apply_as_deletes => $$_change_type = 'delete' AND _commit_lsn > '0/0' AND id <> 7$$,
	continuous => false);
SELECT c_run('c_keep');
INSERT INTO c_prod VALUES (8, 'date', 80);
DELETE FROM c_prod;
SELECT c_run('c_keep') AS events;
SELECT id, name FROM c_keep ORDER BY id;
SELECT autocdc.drop_flow('c_keep', drop_target => true);

-- full_refresh keeps the history: rows changed meanwhile show as one change
-- at the refresh, keys gone as a delete; unchanged rows write nothing
INSERT INTO c_prod VALUES (9, 'yuzu', 90), (10, 'lemon', 100);
SELECT c_run('c_hist');
SELECT count(*) AS rows_before FROM c_hist;
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.full_refresh('c_hist');
SELECT count(*) AS rows_after FROM c_hist;
-- (a change made while the flow could not see it: the refresh finds it)
UPDATE c_prod SET price = 91 WHERE id = 9;
DELETE FROM c_prod WHERE id = 10;
SELECT num_events FROM autocdc.full_refresh('c_hist');
SELECT id, name, price, __end_at IS NULL AS current FROM c_hist WHERE id >= 9 ORDER BY id, __start_at;
-- afterwards only what the refresh's snapshot did not show
SELECT c_run('c_hist') AS events;
-- discard_history empties the target and reads the table again
SELECT num_events FROM autocdc.full_refresh('c_hist', discard_history => true);
SELECT id, name, price FROM c_hist ORDER BY id, __start_at;
-- a target several flows write cannot keep its history through a refresh
SELECT autocdc.create_flow(target => 'c_hist', source => 'changes(c_prod)', keys => '{id}',
	stored_as_scd_type => '2', name => 'c_hist2', continuous => false);
SELECT c_show($$SELECT autocdc.full_refresh('c_hist')$$);
SELECT autocdc.drop_flow('c_hist2');

-- an SCD 1 copy sequenced by _commit_timestamp keeps no hidden state (its
-- events cannot be late); every other kind of flow keeps it
SELECT relid, keeps_state FROM autocdc.target
 WHERE relid IN ('c_copy'::regclass, 'c_hist'::regclass) ORDER BY relid::text;
SELECT autocdc.create_flow(target => 'c_lsn', source => 'changes(c_prod)', keys => '{id}',
	sequence_by => '_commit_lsn', continuous => false);
SELECT autocdc.create_flow(target => 'c_nulls', source => 'changes(c_prod)', keys => '{id}',
	ignore_null_updates => true, continuous => false);
SELECT relid, keeps_state FROM autocdc.target
 WHERE relid IN ('c_lsn'::regclass, 'c_nulls'::regclass) ORDER BY relid::text;
SELECT c_run('c_copy') AS events, c_run('c_lsn') AS events, c_run('c_nulls') AS events;
-- updates, deletes, a truncate: the copy still equals the table, and its
-- hidden state stays empty
UPDATE c_prod SET price = price + 1;
INSERT INTO c_prod VALUES (20, 'sloe', 200), (21, 'rowan', 210);
DELETE FROM c_prod WHERE id = 20;
SELECT c_run('c_copy') AS events;
TRUNCATE c_prod;
INSERT INTO c_prod VALUES (9, 'yuzu', 92), (22, 'quince', 220);
SELECT c_run('c_copy') AS events;
SELECT * FROM c_copy ORDER BY id;
SELECT count(*) AS differences FROM ((TABLE c_copy EXCEPT TABLE c_prod) UNION ALL (TABLE c_prod EXCEPT TABLE c_copy)) d;
SELECT c_state_rows('c_copy') AS copy_state;
-- full_refresh (keeping the target, or discarding it) needs no state either
UPDATE c_prod SET price = 93 WHERE id = 9;
SELECT num_events, num_upserted_rows, num_deleted_rows FROM autocdc.full_refresh('c_copy');
SELECT c_run('c_copy') AS events_after_refresh;
SELECT num_events FROM autocdc.full_refresh('c_copy', discard_history => true);
DELETE FROM c_prod WHERE id = 22;
SELECT c_run('c_copy') AS events;
SELECT * FROM c_copy ORDER BY id;
SELECT c_state_rows('c_copy') AS copy_state;
INSERT INTO c_prod VALUES (22, 'quince', 220);
SELECT c_run('c_copy') AS events;
SELECT c_run('c_lsn') AS events, c_run('c_nulls') AS events;
SELECT c_state_rows('c_lsn') AS lsn_state, c_state_rows('c_nulls') AS nulls_state;
-- such a target takes no second flow; a target other flows write already
-- gives the changes() flow hidden state
CREATE TABLE c_feed (id int, name text, price numeric, changed timestamptz);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_copy', source => 'changes(c_prod)',
	keys => '{id}', name => 'c_copy2')$$);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_copy', source => 'c_feed', keys => '{id}',
	sequence_by => 'price', name => 'c_copy2')$$);
SELECT autocdc.create_flow(target => 'c_both', source => 'c_feed', keys => '{id}',
	sequence_by => 'changed', except_column_list => '{changed}', continuous => false);
SELECT autocdc.create_flow(target => 'c_both', source => 'changes(c_prod)', keys => '{id}',
	name => 'c_both2', continuous => false);
SELECT keeps_state FROM autocdc.target WHERE relid = 'c_both'::regclass;
-- a late feed event loses against the changes() flow's newer one
SELECT c_run('c_both2') AS events;
INSERT INTO c_feed VALUES (9, 'old', 1, '2000-01-01');
SELECT c_run('c_both') AS events;
SELECT * FROM c_both ORDER BY id;
SELECT autocdc.drop_flow('c_both2');
SELECT autocdc.drop_flow('c_both', drop_target => true);
-- a flow of another kind joining such a target that no flow writes any more
-- turns its state on for good
SELECT autocdc.drop_flow('c_lsn', drop_target => true);
SELECT autocdc.drop_flow('c_nulls', drop_target => true);
CREATE TABLE c_solo (id int PRIMARY KEY, v text);
SELECT autocdc.create_flow(target => 'c_solo_copy', source => 'changes(c_solo)', keys => '{id}',
	continuous => false);
SELECT autocdc.drop_flow('c_solo_copy');
SELECT autocdc.create_flow(target => 'c_solo_copy', source => 'changes(c_solo)', keys => '{id}',
	continuous => false);
SELECT keeps_state FROM autocdc.target WHERE relid = 'c_solo_copy'::regclass;
SELECT autocdc.drop_flow('c_solo_copy');
SELECT autocdc.create_flow(target => 'c_solo_copy', source => 'changes(c_solo)', keys => '{id}',
	sequence_by => '_commit_lsn', continuous => false);
SELECT keeps_state FROM autocdc.target WHERE relid = 'c_solo_copy'::regclass;
SELECT autocdc.drop_flow('c_solo_copy', drop_target => true);
DROP TABLE c_solo, c_feed;

-- out-of-line values: an UPDATE that leaves one unchanged logs only a pointer
-- into the TOAST table, which autocdc never reads; each flow's row store
-- fills it.  c_big(n) is 6400 bytes of hex, which pglz cannot compress;
-- c_store(flow) counts the entries of a flow's row store.
CREATE FUNCTION c_big(n int) RETURNS text LANGUAGE sql AS $f$
	SELECT string_agg(md5(n || ':' || g), '') FROM generate_series(1, 200) g
$f$;
CREATE FUNCTION c_store(f text) RETURNS bigint LANGUAGE plpgsql AS $f$
DECLARE store text := 'autocdc_state.rows_' || (SELECT id FROM autocdc.flow WHERE name = f);
		n bigint;
BEGIN
	IF to_regclass(store) IS NULL THEN
		RETURN 0;		-- a flow has no store until it needs one
	END IF;
	EXECUTE 'SELECT count(*) FROM ' || store INTO n;
	RETURN n;
END
$f$;
CREATE TABLE c_doc (id int PRIMARY KEY, body text, n int);
INSERT INTO c_doc VALUES (1, c_big(1), 0), (3, 'short', 0);
SELECT id, pg_column_size(body) AS stored_size FROM c_doc ORDER BY id;
SELECT autocdc.create_flow(target => 'c_doc_copy', source => 'changes(c_doc)', keys => '{id}',
	continuous => false);
SELECT autocdc.create_flow(target => 'c_doc_hist', source => 'changes(c_doc)', keys => '{id}',
	stored_as_scd_type => '2', continuous => false);
CREATE VIEW c_doc_check AS
SELECT (SELECT count(*) FROM c_doc) AS rows,
	   (SELECT count(*) FROM (SELECT * FROM c_doc EXCEPT SELECT * FROM c_doc_copy) d) AS copy_differs,
	   (SELECT count(*) FROM (SELECT * FROM c_doc EXCEPT
			SELECT id, body, n FROM c_doc_hist WHERE __end_at IS NULL) d) AS history_differs,
	   c_store('c_doc_copy') AS copy_store, c_store('c_doc_hist') AS history_store;
-- the first read fills the store with the row that holds an out-of-line value
SELECT c_run('c_doc_copy') AS first_read, c_run('c_doc_hist') AS first_read;
SELECT * FROM c_doc_check;
-- an update that keeps the value, then VACUUM: the chunks it points to are
-- gone by the time the WAL is decoded
UPDATE c_doc SET n = 1 WHERE id = 1;
UPDATE c_doc SET body = 'gone' WHERE id = 1;
UPDATE c_doc SET body = c_big(2) WHERE id = 1;
UPDATE c_doc SET n = 2 WHERE id = 1;
INSERT INTO c_doc VALUES (2, c_big(3), 0);
UPDATE c_doc SET n = 3 WHERE id = 2;
VACUUM c_doc;
SELECT c_run('c_doc_copy') AS events, c_run('c_doc_hist') AS events;
SELECT * FROM c_doc_check;
-- every version of the history holds its own value
SELECT id, n, length(body), md5(body) = md5(c_big(1)) AS big1, md5(body) = md5(c_big(2)) AS big2,
	   md5(body) = md5(c_big(3)) AS big3
  FROM c_doc_hist ORDER BY id, __start_at;
-- an update that leaves the value alone fills it from the store and leaves
-- the store's entry as it was (nothing rewritten); one that writes it anew
-- rewrites the entry
SELECT format('autocdc_state.rows_%s', id) AS copy_store FROM autocdc.flow WHERE name = 'c_doc_copy' \gset
SELECT xmin AS entry_xmin FROM :copy_store WHERE id = 2 \gset
UPDATE c_doc SET n = 4 WHERE id = 2;
SELECT c_run('c_doc_copy') AS events;
SELECT xmin = :'entry_xmin' AS entry_untouched, (SELECT n FROM c_doc_copy WHERE id = 2) AS n
  FROM :copy_store WHERE id = 2;
UPDATE c_doc SET body = c_big(4) WHERE id = 2;
UPDATE c_doc SET body = c_big(3) WHERE id = 2;
SELECT c_run('c_doc_copy') AS events;
SELECT xmin = :'entry_xmin' AS entry_untouched FROM :copy_store WHERE id = 2;
SELECT c_run('c_doc_hist') AS events;
SELECT * FROM c_doc_check;
-- a key-changing update fills from the old key's entry, which moves; a value
-- made short leaves the store; the values of rows not yet applied meanwhile
-- are rewritten by VACUUM FULL
UPDATE c_doc SET id = 10 WHERE id = 1;
UPDATE c_doc SET n = 4 WHERE id = 10;
UPDATE c_doc SET body = 'short now', n = 4 WHERE id = 2;
UPDATE c_doc SET n = 5 WHERE id = 2;
VACUUM FULL c_doc;
UPDATE c_doc SET n = 6 WHERE id = 10;
SELECT c_run('c_doc_copy') AS events, c_run('c_doc_hist') AS events;
SELECT * FROM c_doc_check;
SELECT id, n, md5(body) = md5(c_big(2)) AS big2 FROM c_doc_hist WHERE id IN (1, 10) ORDER BY __start_at;
-- deletes and truncates empty the store; the store counts in hidden_state_bytes
SELECT hidden_state_bytes = pg_total_relation_size('autocdc_state.target_' || target_id)
	   + pg_total_relation_size('autocdc_state.rows_' || f.id) AS store_counted
  FROM autocdc.flows s JOIN autocdc.flow f USING (name) WHERE name = 'c_doc_copy';
DELETE FROM c_doc WHERE id = 10;
SELECT c_run('c_doc_copy') AS events, c_store('c_doc_copy') AS copy_store;
INSERT INTO c_doc VALUES (4, c_big(4), 0);
TRUNCATE c_doc;
INSERT INTO c_doc VALUES (5, c_big(5), 0);
UPDATE c_doc SET n = 1;
SELECT c_run('c_doc_copy') AS events, c_run('c_doc_hist') AS events;
SELECT * FROM c_doc_check;
-- a pointer the store cannot fill fails the run, and says what to do;
-- full_refresh builds the store again and keeps the history
DO $$ BEGIN EXECUTE format('DELETE FROM autocdc_state.%I',
	'rows_' || (SELECT id FROM autocdc.flow WHERE name = 'c_doc_hist')); END $$;
UPDATE c_doc SET n = 2;
SELECT c_show($$SELECT autocdc.run_flow('c_doc_hist')$$);
SELECT num_events FROM autocdc.full_refresh('c_doc_hist');
SELECT c_run('c_doc_copy') AS events;
SELECT * FROM c_doc_check;
SELECT count(*) AS versions_of_5 FROM c_doc_hist WHERE id = 5;
-- events skipped by skip_events do not reach the store, which then starts
-- empty: a pointer it would have filled with an older value fails instead
SELECT pg_current_wal_lsn() AS before_skip \gset
UPDATE c_doc SET body = c_big(6);
SELECT pg_current_wal_lsn() AS skip_upto \gset
SELECT autocdc.skip_events('c_doc_copy', :'skip_upto');
UPDATE c_doc SET n = 7;
SELECT c_show($$SELECT autocdc.run_flow('c_doc_copy')$$) LIKE '55000: flow "c_doc_copy": an update of source "c_doc" at X/X left the out-of-line value%' AS fails;
SELECT num_skipped_events, c_store('c_doc_copy') AS copy_store FROM autocdc.flows WHERE name = 'c_doc_copy';
SELECT num_events FROM autocdc.full_refresh('c_doc_copy');
SELECT c_run('c_doc_hist') AS events;
SELECT * FROM c_doc_check;
-- under REPLICA IDENTITY FULL the WAL's old row holds the value
ALTER TABLE c_doc REPLICA IDENTITY FULL;
UPDATE c_doc SET n = 3;
VACUUM FULL c_doc;
SELECT c_run('c_doc_copy') AS events, c_run('c_doc_hist') AS events;
SELECT * FROM c_doc_check;
-- under FULL too, an update that leaves the value alone rewrites no entry
-- that holds it already, and writes one that is missing
SELECT format('autocdc_state.rows_%s', id) AS copy_store FROM autocdc.flow WHERE name = 'c_doc_copy' \gset
SELECT min(xmin::text) AS entry_xmin FROM :copy_store \gset
UPDATE c_doc SET n = 5;
SELECT c_run('c_doc_copy') AS events;
SELECT bool_and(xmin::text = :'entry_xmin') AS entries_untouched, count(*) AS entries FROM :copy_store;
DELETE FROM :copy_store;
UPDATE c_doc SET n = 6;
SELECT c_run('c_doc_copy') AS events;
SELECT count(*) AS entries, bool_and(xmin::text <> :'entry_xmin') AS written_again FROM :copy_store;
-- back under the default identity, the store fills the pointers again
ALTER TABLE c_doc REPLICA IDENTITY DEFAULT;
UPDATE c_doc SET n = 7;
SELECT c_run('c_doc_copy') AS events, c_run('c_doc_hist') AS events;
SELECT * FROM c_doc_check;
DROP VIEW c_doc_check;
-- the row store goes with its flow
SELECT id AS hist_id FROM autocdc.flow WHERE name = 'c_doc_hist' \gset
SELECT to_regclass('autocdc_state.rows_' || :hist_id) IS NOT NULL AS store_before;
SELECT autocdc.drop_flow('c_doc_hist', drop_target => true);
SELECT to_regclass('autocdc_state.rows_' || :hist_id) IS NOT NULL AS store_after;

-- a later change of the replica identity: updates and deletes under it
-- cannot be told, and fail the run with a hint; full_refresh repairs it
-- and keeps the history
CREATE TABLE c_ident (id int PRIMARY KEY, v text);
INSERT INTO c_ident VALUES (1, 'a'), (2, 'b');
SELECT autocdc.create_flow(target => 'c_ident_hist', source => 'changes(c_ident)', keys => '{id}',
	stored_as_scd_type => '2', continuous => false);
SELECT c_run('c_ident_hist') AS first_read;
ALTER TABLE c_ident REPLICA IDENTITY NOTHING;
INSERT INTO c_ident VALUES (3, 'c');
UPDATE c_ident SET id = 4 WHERE id = 1;
SELECT c_show($$SELECT autocdc.run_flow('c_ident_hist')$$);
-- the flow needs a resync: it is off its slot (pins nothing), a run says why
SELECT state, last_error LIKE '%cannot be told%' AS why FROM autocdc.flows WHERE name = 'c_ident_hist';
SELECT count(*) AS on_a_slot FROM autocdc.flow_state WHERE name = 'c_ident_hist' AND slot_name IS NOT NULL;
SELECT c_show($$SELECT autocdc.run_flow('c_ident_hist')$$);
SELECT c_show($$SELECT autocdc.run_flow('c_ident_hist')$$) LIKE '%taken off its replication slot: flow "c_ident_hist": an update%' AS same_reason;
SELECT state FROM autocdc.flows WHERE name = 'c_ident_hist';
ALTER TABLE c_ident REPLICA IDENTITY DEFAULT;
SELECT num_events FROM autocdc.full_refresh('c_ident_hist');
SELECT id, v, __end_at IS NULL AS current FROM c_ident_hist ORDER BY id, __start_at;
SELECT state, last_error FROM autocdc.flows WHERE name = 'c_ident_hist';
DELETE FROM c_ident WHERE id = 2;
SELECT c_run('c_ident_hist') AS events;
SELECT autocdc.drop_flow('c_ident_hist', drop_target => true);
DROP TABLE c_ident;

-- apply_as_truncates => 'false': a TRUNCATE is then no event at all (not an
-- upsert of NULLs), and the rest of its transaction applies
CREATE TABLE c_tr (id int PRIMARY KEY, v text);
INSERT INTO c_tr VALUES (1, 'a');
SELECT autocdc.create_flow(target => 'c_tr_copy', source => 'changes(c_tr)', keys => '{id}',
	apply_as_truncates => 'false', continuous => false);
SELECT c_run('c_tr_copy') AS first_read;
BEGIN;
TRUNCATE c_tr;
INSERT INTO c_tr VALUES (2, 'b');
COMMIT;
SELECT c_run('c_tr_copy') AS events;
SELECT * FROM c_tr_copy ORDER BY id;
SELECT autocdc.drop_flow('c_tr_copy', drop_target => true);
DROP TABLE c_tr;

-- an out-of-line value of a column the flow does not read is no obstacle
CREATE TABLE c_wide_doc (id int PRIMARY KEY, name text, doc text);
ALTER TABLE c_wide_doc ALTER doc SET STORAGE EXTERNAL;
INSERT INTO c_wide_doc SELECT 1, 'a', string_agg(md5(g::text), '') FROM generate_series(1, 200) g;
SELECT autocdc.create_flow(target => 'c_wide_doc_t', source => 'changes(c_wide_doc)', keys => '{id}',
	column_list => '{id,name}', continuous => false);
SELECT c_run('c_wide_doc_t') AS first_read;
UPDATE c_wide_doc SET name = 'b' WHERE id = 1;
SELECT c_run('c_wide_doc_t') AS events;
SELECT * FROM c_wide_doc_t;
SELECT autocdc.drop_flow('c_wide_doc_t', drop_target => true);
DROP TABLE c_wide_doc;

-- a refresh that keeps the history compares keys under the source's collation
CREATE TABLE c_coll (code text COLLATE "POSIX" PRIMARY KEY, v text);
CREATE TABLE c_coll_t (code text COLLATE "C" NOT NULL, v text);
INSERT INTO c_coll VALUES ('a', '1'), ('b', '2');
SELECT autocdc.create_flow(target => 'c_coll_t', source => 'changes(c_coll)', keys => '{code}',
	continuous => false);
SELECT c_run('c_coll_t') AS first_read;
DELETE FROM c_coll WHERE code = 'b';
SELECT num_events FROM autocdc.full_refresh('c_coll_t');
SELECT * FROM c_coll_t ORDER BY code;
SELECT autocdc.drop_flow('c_coll_t', drop_target => true);
DROP TABLE c_coll;

-- the checks at create_flow
CREATE TABLE c_nokey (id int, v text);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_nokey)', keys => '{id}')$$);
CREATE UNIQUE INDEX ON c_nokey (id) WHERE id > 0;
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_nokey)', keys => '{id}')$$);
CREATE UNIQUE INDEX c_nokey_id ON c_nokey (id);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_nokey)', keys => '{id}')$$);
ALTER TABLE c_nokey ALTER id SET NOT NULL;
-- a unique index that is not the replica identity
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_nokey)', keys => '{id}')$$);
ALTER TABLE c_nokey REPLICA IDENTITY USING INDEX c_nokey_id;
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_nokey)', keys => '{id}', continuous => false)$$);
SELECT autocdc.drop_flow('c_x', drop_target => true);
ALTER TABLE c_nokey REPLICA IDENTITY NOTHING;
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_nokey)', keys => '{id}')$$);
-- a deferrable primary key is no replica identity
CREATE TABLE c_defer (id int PRIMARY KEY DEFERRABLE, v text);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_defer)', keys => '{id}')$$);
-- keys wider than a unique index are fine, if the identity holds them
CREATE TABLE c_wide (a int, b int, v text, PRIMARY KEY (a, b));
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_wide)', keys => '{a}')$$);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_wide)', keys => '{a,b}', continuous => false)$$);
SELECT autocdc.drop_flow('c_x', drop_target => true);
-- sequences may read only the pseudo-columns
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_prod)', keys => '{id}', sequence_by => 'price')$$);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_prod)', keys => '{id}', sequence_by => 'ROW(_commit_timestamp, id)')$$);
-- whole rows and system columns are not expressions of a flow
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_prod)', keys => '{id}', sequence_by => 'ROW(__autocdc_change)')$$);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_prod)', keys => '{id}', apply_as_deletes => 'xmin IS NULL')$$);
-- a column with a pseudo-column's name
CREATE TABLE c_clash (id int PRIMARY KEY, _change_type text);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_clash)', keys => '{id}')$$);
-- a partition whose replica identity does not hold the keys (the parent's
-- identity does not reach its partitions); once and snapshot flows
CREATE TABLE c_part (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE c_part_1 PARTITION OF c_part FOR VALUES FROM (0) TO (100);
ALTER TABLE c_part_1 REPLICA IDENTITY NOTHING;
ALTER TABLE c_part REPLICA IDENTITY FULL;
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_part)', keys => '{id}')$$);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_prod)', keys => '{id}', once => true)$$);
SELECT c_show($$SELECT autocdc.create_snapshot_flow(target => 'c_x', source => 'changes(c_prod)', keys => '{id}')$$);
CREATE UNLOGGED TABLE c_unlogged (id int PRIMARY KEY);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_unlogged)', keys => '{id}')$$);
SELECT count(*) AS c_x_left FROM pg_class WHERE relname = 'c_x';

-- a flow that would close a cycle of flows is refused
CREATE TABLE c_a (id int PRIMARY KEY, v text);
SELECT autocdc.create_flow(target => 'c_b', source => 'changes(c_a)', keys => '{id}', continuous => false);
SELECT autocdc.create_flow(target => 'c_c', source => 'changes(c_b)', keys => '{id}', continuous => false);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_a', source => 'changes(c_c)', keys => '{id}')$$);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_b', source => 'c_c', keys => '{id}', sequence_by => 'id', name => 'c_loop')$$);
SELECT autocdc.drop_flow('c_c', drop_target => true), autocdc.drop_flow('c_b', drop_target => true);

-- a user publication of all tables would forward the hidden state: a warning
CREATE PUBLICATION c_all FOR ALL TABLES;
SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_a)', keys => '{id}', continuous => false);
DROP PUBLICATION c_all;
SELECT autocdc.drop_flow('c_x', drop_target => true);

-- the statement form: SEQUENCE BY is optional for changes()
DO LANGUAGE autocdc $$
CREATE FLOW c_stmt AS AUTO CDC INTO c_stmt_t FROM changes(c_prod) KEYS (id) STORED AS SCD TYPE 2
$$;
SELECT name, source, sequence_by, scd_type FROM autocdc.flow WHERE name = 'c_stmt';
INSERT INTO c_prod VALUES (11, 'quince', 110);
SELECT num_events FROM autocdc.run_flow('c_stmt');
SELECT id, name FROM c_stmt_t ORDER BY id;
DO LANGUAGE autocdc $$ DROP FLOW c_stmt $$;

-- partitioned tables: the changes of every leaf, also of leaves attached
-- later; a move between partitions is a delete and an insert; a TRUNCATE of
-- the table is one truncate event
CREATE TABLE c_pt (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE c_pt_1 PARTITION OF c_pt FOR VALUES FROM (0) TO (100);
CREATE TABLE c_pt_2 PARTITION OF c_pt FOR VALUES FROM (100) TO (200);
INSERT INTO c_pt VALUES (1, 'a'), (101, 'b');
SELECT autocdc.create_flow(target => 'c_pt_copy', source => 'changes(c_pt)', keys => '{id}', continuous => false);
SELECT autocdc.create_flow(target => 'c_pt_hist', source => 'changes(c_pt)', keys => '{id}', continuous => false,
	stored_as_scd_type => '2', column_list => '{id, v, _change_type}');
SELECT c_run('c_pt_copy') AS first_read, c_run('c_pt_hist') AS first_read;
INSERT INTO c_pt VALUES (2, 'c'), (102, 'd');
UPDATE c_pt SET v = 'b2' WHERE id = 101;
UPDATE c_pt SET id = 150 WHERE id = 2;	-- moves from c_pt_1 to c_pt_2
DELETE FROM c_pt WHERE id = 1;
SELECT c_run('c_pt_copy'), c_run('c_pt_hist');
SELECT NOT EXISTS (SELECT * FROM c_pt EXCEPT SELECT * FROM c_pt_copy)
   AND NOT EXISTS (SELECT * FROM c_pt_copy EXCEPT SELECT * FROM c_pt) AS copy_is_table;
SELECT id, v, _change_type, __end_at IS NULL AS open FROM c_pt_hist ORDER BY id, __start_at;
TRUNCATE c_pt;
SELECT c_run('c_pt_copy') AS one_truncate_event, c_run('c_pt_hist') AS one_truncate_event;
SELECT count(*) AS copy_rows, (SELECT count(*) FROM c_pt_hist WHERE __end_at IS NULL) AS open_versions FROM c_pt_copy;
-- a TRUNCATE of some partitions cannot be told: needs_resync, and a refresh
INSERT INTO c_pt VALUES (3, 'e'), (103, 'f');
SELECT c_run('c_pt_copy'), c_run('c_pt_hist');
TRUNCATE c_pt_1;
SELECT c_show($$SELECT autocdc.run_flow('c_pt_hist')$$);
SELECT name, state FROM autocdc.flows WHERE name LIKE 'c_pt%' ORDER BY name;
SELECT num_events FROM autocdc.full_refresh('c_pt_hist');
SELECT num_events FROM autocdc.full_refresh('c_pt_copy');
SELECT id, v, __end_at IS NULL AS open FROM c_pt_hist WHERE id IN (3, 103) ORDER BY id, __start_at;
-- an attached empty table: its rows are followed
CREATE TABLE c_pt_3 (LIKE c_pt INCLUDING ALL);
ALTER TABLE c_pt ATTACH PARTITION c_pt_3 FOR VALUES FROM (200) TO (300);
INSERT INTO c_pt VALUES (201, 'g');
SELECT c_run('c_pt_copy'), c_run('c_pt_hist');
SELECT name, state FROM autocdc.flows WHERE name LIKE 'c_pt%' ORDER BY name;
SELECT * FROM c_pt_copy ORDER BY id;
-- attaching a table that holds rows, detaching and dropping a partition
-- change the table's rows with nothing in the WAL: needs_resync
CREATE TABLE c_pt_4 (LIKE c_pt INCLUDING ALL);
INSERT INTO c_pt_4 VALUES (301, 'h');
BEGIN;
ALTER TABLE c_pt ATTACH PARTITION c_pt_4 FOR VALUES FROM (300) TO (400);
ROLLBACK;
SELECT name, state FROM autocdc.flows WHERE name LIKE 'c_pt%' ORDER BY name;
ALTER TABLE c_pt ATTACH PARTITION c_pt_4 FOR VALUES FROM (300) TO (400);
SELECT name, state, resync_reason FROM autocdc.flows
 WHERE name LIKE 'c_pt%' ORDER BY name;
SELECT c_show($$SELECT autocdc.run_flow('c_pt_copy')$$);
SELECT num_events FROM autocdc.full_refresh('c_pt_copy');
SELECT num_events FROM autocdc.full_refresh('c_pt_hist');
SELECT * FROM c_pt_copy ORDER BY id;
ALTER TABLE c_pt DETACH PARTITION c_pt_4;
SELECT name, state, resync_reason FROM autocdc.flows
 WHERE name LIKE 'c_pt%' ORDER BY name;
SELECT num_events FROM autocdc.full_refresh('c_pt_copy');
SELECT num_events FROM autocdc.full_refresh('c_pt_hist');
DROP TABLE c_pt_3;
SELECT name, state, resync_reason FROM autocdc.flows
 WHERE name LIKE 'c_pt%' ORDER BY name;
SELECT num_events FROM autocdc.full_refresh('c_pt_copy');
SELECT num_events FROM autocdc.full_refresh('c_pt_hist');
SELECT * FROM c_pt_copy ORDER BY id;
SELECT id, v, __end_at IS NULL AS open FROM c_pt_hist WHERE id IN (201, 301) ORDER BY id, __start_at;
-- a partition dropped with its schema, or with its owner's objects
CREATE SCHEMA c_pt_s;
CREATE TABLE c_pt_s.c_pt_5 PARTITION OF c_pt FOR VALUES FROM (500) TO (600);
INSERT INTO c_pt VALUES (501, 'x');
SELECT c_run('c_pt_copy');
DROP SCHEMA c_pt_s CASCADE;
SELECT name, state, resync_reason FROM autocdc.flows
 WHERE name = 'c_pt_copy';
SELECT num_events FROM autocdc.full_refresh('c_pt_copy');
CREATE ROLE regress_c_pt_owner;
CREATE TABLE c_pt_6 PARTITION OF c_pt FOR VALUES FROM (600) TO (700);
ALTER TABLE c_pt_6 OWNER TO regress_c_pt_owner;
INSERT INTO c_pt VALUES (601, 'y');
SELECT c_run('c_pt_copy');
DROP OWNED BY regress_c_pt_owner;
DROP ROLE regress_c_pt_owner;
SELECT name, state, resync_reason FROM autocdc.flows
 WHERE name = 'c_pt_copy';
SELECT num_events FROM autocdc.full_refresh('c_pt_copy');
SELECT * FROM c_pt_copy ORDER BY id;
SELECT num_events FROM autocdc.full_refresh('c_pt_hist');
-- a partition whose replica identity stops holding the keys later
ALTER TABLE c_pt_2 REPLICA IDENTITY NOTHING;
UPDATE c_pt SET v = 'f2' WHERE id = 103;
SELECT c_show($$SELECT autocdc.run_flow('c_pt_copy')$$);
SELECT state FROM autocdc.flows WHERE name = 'c_pt_copy';
ALTER TABLE c_pt_2 REPLICA IDENTITY DEFAULT;
SELECT num_events FROM autocdc.full_refresh('c_pt_copy');
SELECT * FROM c_pt_copy ORDER BY id;
-- a partition named without its schema is guarded too (SET UNLOGGED refused)
SELECT c_show($$ALTER TABLE c_pt_1 SET UNLOGGED$$);
SELECT autocdc.drop_flow(name, drop_target => true) FROM autocdc.flow
 WHERE name IN ('c_pt_copy', 'c_pt_hist') ORDER BY name;
DROP TABLE c_pt, c_pt_4;

-- pseudo-columns in column_list: target columns of their own, renamed with AS
CREATE TABLE c_pc (id int PRIMARY KEY, v text);
INSERT INTO c_pc VALUES (1, 'a'), (2, 'b');
SELECT autocdc.create_flow(target => 'c_pc1', source => 'changes(c_pc)', keys => '{id}', continuous => false,
	column_list => '{id, v, "_commit_timestamp AS changed_at", _change_type, "_commit_lsn as lsn"}');
SELECT autocdc.create_flow(target => 'c_pc2', source => 'changes(c_pc)', keys => '{id}', continuous => false,
	stored_as_scd_type => '2', column_list => '{id, v, "_commit_timestamp AS changed_at", "_change_type AS how"}',
	track_history_except_column_list => '{how}');
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'c_pc1'::regclass AND attnum > 0 ORDER BY attnum;
SELECT column_list, columns FROM autocdc.flow WHERE name = 'c_pc1';
SELECT c_run('c_pc1'), c_run('c_pc2');
UPDATE c_pc SET v = 'A' WHERE id = 1;
DELETE FROM c_pc WHERE id = 2;
INSERT INTO c_pc VALUES (3, 'c');
SELECT c_run('c_pc1'), c_run('c_pc2');
-- SCD 1: the last change's pseudo-columns; its commit time is the SCD 2 version's start
SELECT c1.id, c1.v, c1._change_type, c1.changed_at = c2.__start_at AS changed_at_is_start
  FROM c_pc1 c1 JOIN c_pc2 c2 ON c2.id = c1.id AND c2.__end_at IS NULL ORDER BY c1.id;
SELECT (SELECT lsn FROM c_pc1 WHERE id = 1) < (SELECT lsn FROM c_pc1 WHERE id = 3) AS commit_order;
SELECT id, v, how, changed_at = __start_at AS changed_at_is_start, __end_at IS NULL AS open
  FROM c_pc2 ORDER BY id, __start_at;
-- full_refresh reads only the rows that differ from the target (in the
-- table's columns): an unchanged row keeps its last change's time and kind
CREATE TEMP TABLE c_pc_before AS SELECT * FROM c_pc1;
UPDATE c_pc SET v = 'AA' WHERE id = 1;
SELECT num_events, num_upserted_rows FROM autocdc.full_refresh('c_pc1');
SELECT p.id, p.v, p._change_type, p.changed_at = b.changed_at AS same_time, p.lsn = b.lsn AS same_lsn
  FROM c_pc1 p JOIN c_pc_before b USING (id) ORDER BY id;
SELECT num_events, num_upserted_rows FROM autocdc.full_refresh('c_pc2');
SELECT id, v, how, __end_at IS NULL AS open FROM c_pc2 ORDER BY id, __start_at;
-- the table gaining a column with such a target column's name stops the flow
ALTER TABLE c_pc ADD COLUMN changed_at text;
SELECT c_show($$SELECT autocdc.run_flow('c_pc1')$$);
ALTER TABLE c_pc DROP COLUMN changed_at;
SELECT c_run('c_pc1');
-- a statement's COLUMNS may rename them too
DO LANGUAGE autocdc $$
CREATE FLOW c_pc3 AS AUTO CDC INTO c_pc3 FROM changes(c_pc) KEYS (id)
	COLUMNS (id, _commit_timestamp AS "Changed At") STORED AS SCD TYPE 1
$$;
SELECT column_list FROM autocdc.flow WHERE name = 'c_pc3';
SELECT c_run('c_pc3');
SELECT id, "Changed At" IS NOT NULL AS has_time FROM c_pc3 ORDER BY id;
-- refusals: renaming a table column, a name the table or autocdc has, a
-- pseudo-column as key or in except_column_list, a feed's pseudo-column
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_pc)', keys => '{id}', column_list => '{id, "v AS w"}')$$);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_pc)', keys => '{id}', column_list => '{id, "_change_type AS v"}')$$);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_pc)', keys => '{id}', stored_as_scd_type => '2', column_list => '{id, "_change_type AS __end_at"}')$$);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_pc)', keys => '{_commit_lsn}')$$);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_pc)', keys => '{id}', except_column_list => '{_commit_lsn}')$$);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_pc)', keys => '{id}', column_list => '{id, "_change_type AS x", "_commit_lsn AS x"}')$$);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'changes(c_pc)', keys => '{id}', column_list => '{id, "_change_type AS"}')$$);
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_x', source => 'c_pc', keys => '{id}', sequence_by => 'id', column_list => '{id, _change_type}')$$);
SELECT count(*) AS c_x_left FROM pg_class WHERE relname = 'c_x';
SELECT autocdc.drop_flow(name, drop_target => true) FROM autocdc.flow
 WHERE name IN ('c_pc1', 'c_pc2', 'c_pc3') ORDER BY name;
DROP TABLE c_pc;

-- a flow's source kind is stored by name and looked up in the library's
-- table of kinds: autocdc.flows writes the source as its kind's wrapper
-- around the table's current name, and a name the library does not know
-- (a damaged catalog, an older library) fails the run, naming the kinds
SELECT name, source FROM autocdc.flows WHERE name IN ('c_hist', 'c_copy') ORDER BY name;
BEGIN;
UPDATE autocdc.flow SET source_kind = 'nosuch' WHERE name = 'c_hist';
SELECT c_show($$SELECT autocdc.run_flow('c_hist')$$);
ROLLBACK;
-- a kind's wrapper is a word in any case, spaced from its parenthesis
SELECT c_show($$SELECT autocdc.create_flow(target => 'c_y', source => ' CHANGES ( c_prod ) ', keys => '{id}')$$);
SELECT source_kind, source, sequence_by FROM autocdc.flow WHERE name = 'c_y';
-- columns_to_update over changes(): the list is a column of the table, read
-- like the columns the flow selects; an out-of-line list that an UPDATE
-- leaves unchanged comes from the row store
CREATE TABLE c_ctu (id int PRIMARY KEY, a text, b text, upd text[]);
ALTER TABLE c_ctu ALTER COLUMN upd SET STORAGE EXTERNAL;
INSERT INTO c_ctu VALUES (1, 'a1', 'b1', '{a,b}'), (2, 'a1', 'b1', array_fill('a'::text, ARRAY[1500]));
SELECT autocdc.create_flow(target => 'c_ctu_t', source => 'changes(c_ctu)', keys => '{id}',
	except_column_list => '{upd}', columns_to_update => 'upd', continuous => false);
SELECT c_run('c_ctu_t') AS events;
-- 1 (a1, b1); 2 (a1, null): its list names a only
SELECT * FROM c_ctu_t ORDER BY id;
UPDATE c_ctu SET a = NULL, b = 'b2', upd = '{b}' WHERE id = 1;
UPDATE c_ctu SET a = 'a2', b = 'b2' WHERE id = 2;
SELECT c_run('c_ctu_t') AS events, c_store('c_ctu_t') AS store;
-- 1 (a1, b2); 2 (a2, null)
SELECT * FROM c_ctu_t ORDER BY id;
SELECT autocdc.drop_flow(name, drop_target => true) FROM autocdc.flow
 WHERE name IN ('c_copy', 'c_hist', 'c_doc_copy', 'c_stmt_t', 'c_y', 'c_ctu_t') ORDER BY name;
DROP TABLE c_prod, c_a, c_doc, c_nokey, c_defer, c_wide, c_clash, c_part, c_unlogged, c_stmt_t, c_ctu;
DROP FUNCTION c_show(text), c_run(text), c_big(int), c_store(text);
