-- errors: every misuse of a change flow (semantics §7) is refused with a SQLSTATE,
-- a lower-case message that names the object and a hint where one helps,
-- and changes nothing (no flow row, no target, no hidden state, no type).
--
-- e_try(sql) runs a statement and shows "SQLSTATE: message", then DETAIL and
-- HINT lines; 'ok' when it succeeds.
CREATE FUNCTION e_try(sql text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	st text; msg text; det text; hnt text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
							det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
	RETURN st || ': ' || msg
		|| CASE WHEN det <> '' THEN E'\nDETAIL: ' || det ELSE '' END
		|| CASE WHEN hnt <> '' THEN E'\nHINT: ' || hnt ELSE '' END;
END
$f$;

-- What exists now; e_leftovers() reports what appeared since: new flows,
-- new targets, new hidden-state tables, and any relation or type whose name
-- starts with e_t_ (the would-be targets of the refused flows below).
CREATE TABLE e_base_flows AS SELECT name FROM autocdc.flow;
CREATE TABLE e_base_targets AS SELECT relid::text AS relid FROM autocdc.target;
CREATE TABLE e_base_state AS
	SELECT relname FROM pg_class WHERE relnamespace = 'autocdc_state'::regnamespace;
CREATE FUNCTION e_leftovers() RETURNS text LANGUAGE sql AS $f$
	SELECT coalesce(nullif(concat_ws('; ',
		'flows: ' || (SELECT string_agg(name, ', ' ORDER BY name) FROM autocdc.flow
					   WHERE name NOT IN (SELECT name FROM e_base_flows)),
		'targets: ' || (SELECT string_agg(relid::text, ', ' ORDER BY relid::text) FROM autocdc.target
						 WHERE relid::text NOT IN (SELECT relid FROM e_base_targets)),
		'state tables: ' || (SELECT nullif(count(*), 0) FROM pg_class
							  WHERE relnamespace = 'autocdc_state'::regnamespace
								AND relkind = 'r' AND relname NOT IN (SELECT relname FROM e_base_state)),
		'relations: ' || (SELECT string_agg(relname, ', ' ORDER BY relname) FROM pg_class
						   WHERE relname LIKE 'e\_t\_%'),
		'types: ' || (SELECT string_agg(typname, ', ' ORDER BY typname) FROM pg_type
					   WHERE typname LIKE 'e\_t\_%' AND typrelid = 0)), ''), 'nothing')
$f$;

-- a feed with every kind of column the cases below need
CREATE TABLE e_feed (id int, name text, city text, op text, seq int, pt point, js json);
CREATE TABLE e_tfeed (id int, name text, __start_at int, seq int);

-- unknown source, target schema, columns
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_nosuch', '{id}', 'seq')$$) AS unknown_source;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_nosuch_schema.e_feed', '{id}', 'seq')$$) AS unknown_source_schema;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'stream(e_nosuch)', '{id}', 'seq')$$) AS unknown_stream_source;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed x y', '{id}', 'seq')$$) AS invalid_source_name;
SELECT e_try($$SELECT autocdc.create_flow('e_nosuch_schema.e_t_a', 'e_feed', '{id}', 'seq')$$) AS unknown_target_schema;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{nosuch}', 'seq')$$) AS unknown_key;
-- names follow identifier rules: "Id" keeps its case and is not id
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', ARRAY['"Id"'], 'seq')$$) AS quoted_key_case;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', ARRAY['id', 'a.b'], 'seq')$$) AS qualified_key_name;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', column_list => '{id,nosuch}')$$) AS unknown_column_list_column;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', except_column_list => '{nosuch}')$$) AS unknown_except_column;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'nosuch + 1')$$) AS unknown_sequence_column;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', apply_as_deletes => 'nosuch = 1')$$) AS unknown_delete_column;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', stored_as_scd_type => '2',
	track_history_column_list => '{nosuch}')$$) AS unknown_track_column;
SELECT e_leftovers();

-- keys: missing, excluded by the column selection, empty, null, repeated, not orderable
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', column_list => '{name,city}')$$) AS key_not_in_column_list;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', except_column_list => '{id,op}')$$) AS key_in_except_list;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{}', 'seq')$$) AS no_keys;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id,NULL}', 'seq')$$) AS null_key_name;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id,id}', 'seq')$$) AS repeated_key;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{pt}', 'seq')$$) AS key_without_btree_order;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', column_list => '{id,name,name}')$$) AS repeated_column;
-- columns autocdc adds cannot come from the source
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_tfeed', '{id}', 'seq', stored_as_scd_type => '2')$$) AS source_column_clash;
SELECT e_leftovers();

-- both lists of one kind; history lists only with SCD 2
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq',
	column_list => '{id,name}', except_column_list => '{op}')$$) AS both_column_lists;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', stored_as_scd_type => '2',
	track_history_column_list => '{name}', track_history_except_column_list => '{city}')$$) AS both_track_lists;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq',
	track_history_column_list => '{name}')$$) AS track_list_scd1;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', stored_as_scd_type => '1',
	track_history_except_column_list => '{city}')$$) AS track_except_list_scd1;
-- a tracked column must be a non-key column of the target
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', stored_as_scd_type => '2',
	track_history_column_list => '{id}')$$) AS track_key_column;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', stored_as_scd_type => '2',
	except_column_list => '{op,seq,pt,js}', track_history_column_list => '{op}')$$) AS track_excluded_column;
SELECT e_leftovers();

-- partial updates: ignore_null_updates, its two column lists and
-- columns_to_update exclude each other; the lists name selected non-key
-- columns; bitemporal flows take neither the lists nor columns_to_update
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', ignore_null_updates => true,
	ignore_null_updates_column_list => '{name}')$$) AS ignore_nulls_and_list;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq',
	ignore_null_updates_column_list => '{name}',
	ignore_null_updates_except_column_list => '{city}')$$) AS both_ignore_null_lists;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq',
	ignore_null_updates_except_column_list => '{city}', columns_to_update => 'op')$$) AS except_list_and_columns_to_update;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', ignore_null_updates => true,
	columns_to_update => 'op')$$) AS ignore_nulls_and_columns_to_update;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq',
	ignore_null_updates_column_list => '{nosuch}')$$) AS unknown_ignore_null_column;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq',
	ignore_null_updates_except_column_list => '{id}')$$) AS ignore_null_key_column;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', except_column_list => '{op,pt,js}',
	ignore_null_updates_column_list => '{name,op}')$$) AS ignore_null_excluded_column;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', stored_as_scd_type => 'bitemporal',
	system_sequence_by => 'seq', ignore_null_updates_column_list => '{name}')$$) AS bitemporal_ignore_null_list;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', stored_as_scd_type => 'bitemporal',
	system_sequence_by => 'seq', columns_to_update => 'op')$$) AS bitemporal_columns_to_update;
-- columns_to_update names a text[] or name[] column of the source
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq',
	columns_to_update => 'nosuch')$$) AS unknown_columns_to_update;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq',
	columns_to_update => 'op')$$) AS columns_to_update_not_an_array;
SELECT e_leftovers();

-- SCD type; features that are not there yet
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', stored_as_scd_type => '3')$$) AS unknown_scd_type;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', stored_as_scd_type => 'bitemporal')$$)
	AS bitemporal_without_system_sequence;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', stored_as_scd_type => 'bitemporal',
	system_sequence_by => 'seq', tombstone_retention => '1 day')$$) AS bitemporal_tombstone_retention;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq',
	system_sequence_by => 'seq')$$) AS system_sequence_without_bitemporal;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'changes(e_feed)', '{id}')$$) AS changes_source;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'stream(changes(e_feed))', '{id}', 'seq')$$) AS stream_changes_source;
SELECT e_try($$SELECT autocdc.create_snapshot_flow('e_t_a', 'e_feed', '{id}', stored_as_scd_type => 'bitemporal')$$) AS snapshot_flow;
SELECT e_leftovers();

-- sequence and conditions
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}')$$) AS missing_sequence_by;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'pt')$$) AS point_sequence;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'js')$$) AS json_sequence;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'ROW(seq, pt)')$$) AS row_sequence_with_point;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq +')$$) AS sequence_syntax_error;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'max(seq)')$$) AS aggregate_sequence;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', '(SELECT 1)')$$) AS subquery_sequence;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq) FROM e_feed; SELECT (1')$$) AS injected_sequence;
-- an expression is an expression, not the rest of a query (whatever the
-- wording of the error, these must be refused)
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq) FROM e_feed WHERE (false')$$) AS injected_where;
SELECT e_try($$SELECT autocdc.create_flow('e_t_inj1', 'e_feed', '{id}', 'seq) FROM e_feed WHERE false --')$$) <> 'ok'
	AS injected_where_comment_refused;
SELECT e_try($$SELECT autocdc.create_flow('e_t_inj2', 'e_feed', '{id}', 'seq) FROM e_tfeed --')$$) <> 'ok'
	AS injected_other_table_refused;
-- while a trailing comment is part of a valid expression
SELECT e_try($$SELECT autocdc.create_flow('e_t_comment', 'e_feed', '{id}', 'seq -- the order',
	column_list => '{id,name}', continuous => false)$$) AS trailing_comment;
-- (drop whatever the three cases above created, silently)
DO $$BEGIN PERFORM autocdc.drop_flow(name, true) FROM autocdc.flow
	WHERE name IN ('e_t_inj1', 'e_t_inj2', 'e_t_comment'); END$$;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', apply_as_deletes => 'op')$$) AS text_delete_condition;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', apply_as_truncates => 'seq')$$) AS int_truncate_condition;
-- Spark writes string literals in double quotes; in PostgreSQL "DELETE" is a
-- column, which e_feed does not have: the error hints at single quotes
SELECT split_part(e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq',
	apply_as_deletes => 'op = "DELETE"')$$), E'\n', 1) AS spark_double_quotes,
	e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq',
	apply_as_deletes => 'op = "DELETE"')$$) ~* 'HINT:.*single quote' AS hints_single_quotes;
SELECT e_leftovers();

-- duplicate flow name (explicit, and the default: the target's name)
CREATE TABLE e_dupfeed (id int, name text, seq int);
SELECT autocdc.create_flow('e_ok_dup', 'e_dupfeed', '{id}', 'seq', continuous => false);
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', 'seq', column_list => '{id,name}',
	name => 'e_ok_dup')$$) AS duplicate_name;
CREATE SCHEMA e_other;
SELECT e_try($$SELECT autocdc.create_flow('e_other.e_ok_dup', 'e_feed', '{id}', 'seq',
	column_list => '{id,name}')$$) AS duplicate_default_name;
-- a second flow into e_ok_dup must agree on keys, SCD type and sequence type
SELECT e_try($$SELECT autocdc.create_flow('e_ok_dup', 'e_feed', '{id}', 'seq::bigint', column_list => '{id,name}',
	name => 'e_t_other_seq')$$) AS disagreeing_sequence_type;
SELECT e_try($$SELECT autocdc.create_flow('e_ok_dup', 'e_feed', '{name}', 'seq', column_list => '{id,name}',
	name => 'e_t_other_keys')$$) AS disagreeing_keys;
SELECT e_try($$SELECT autocdc.create_flow('e_ok_dup', 'e_feed', '{id}', 'seq', column_list => '{id,name}',
	stored_as_scd_type => '2', name => 'e_t_other_scd')$$) AS disagreeing_scd_type;
SELECT e_leftovers();

-- incompatible existing targets (they stay as they were)
CREATE TABLE e_x_missing (id int PRIMARY KEY, name text);
CREATE TABLE e_x_wrongtype (id int PRIMARY KEY, name text, city varchar(10));
CREATE TABLE e_x_noscd2 (id int, name text, city text);
CREATE TABLE e_x_endonly (id int, name text, city text, __end_at int);
CREATE TABLE e_x_seqtype (id int, name text, city text, __start_at bigint, __end_at bigint);
CREATE TABLE e_x_scd2cols (id int, name text, city text, __start_at int, __end_at int);
CREATE VIEW e_x_view AS SELECT id, name, city FROM e_feed;
SELECT e_try($$SELECT autocdc.create_flow('e_x_missing', 'e_feed', '{id}', 'seq', column_list => '{id,name,city}')$$) AS target_missing_column;
SELECT e_try($$SELECT autocdc.create_flow('e_x_wrongtype', 'e_feed', '{id}', 'seq', column_list => '{id,name,city}')$$) AS target_wrong_type;
SELECT e_try($$SELECT autocdc.create_flow('e_x_noscd2', 'e_feed', '{id}', 'seq', column_list => '{id,name,city}',
	stored_as_scd_type => '2')$$) AS scd2_target_without_start_at;
SELECT e_try($$SELECT autocdc.create_flow('e_x_endonly', 'e_feed', '{id}', 'seq', column_list => '{id,name,city}',
	stored_as_scd_type => '2')$$) AS scd2_target_without_start_at_2;
SELECT e_try($$SELECT autocdc.create_flow('e_x_seqtype', 'e_feed', '{id}', 'seq', column_list => '{id,name,city}',
	stored_as_scd_type => '2')$$) AS scd2_target_wrong_sequence_type;
SELECT e_try($$SELECT autocdc.create_flow('e_x_scd2cols', 'e_feed', '{id}', 'seq', column_list => '{id,name,city}')$$) AS scd1_into_scd2_table;
SELECT e_try($$SELECT autocdc.create_flow('e_x_view', 'e_feed', '{id}', 'seq', column_list => '{id,name,city}')$$) AS target_is_view;
SELECT e_try($$SELECT autocdc.create_flow('e_feed', 'e_feed', '{id}', 'seq')$$) AS target_is_source;
SELECT e_try($$SELECT autocdc.create_flow('public.e_feed', 'stream(e_feed)', '{id}', 'seq')$$) AS target_is_source_qualified;
SELECT c.relname, count(a.attnum) AS columns,
	   (SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid) AS indexes
  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
 WHERE c.relname LIKE 'e\_x\_%' AND c.relkind IN ('r', 'v')
 GROUP BY c.oid, c.relname ORDER BY c.relname;
SELECT e_leftovers();

-- feeds must be logged ordinary or partitioned tables
CREATE UNLOGGED TABLE e_unlogged (id int, seq int);
CREATE TEMP TABLE e_temp (id int, seq int);
CREATE VIEW e_view AS SELECT id, seq FROM e_feed;
CREATE MATERIALIZED VIEW e_matview AS SELECT id, seq FROM e_feed;
CREATE FOREIGN DATA WRAPPER e_fdw;
CREATE SERVER e_server FOREIGN DATA WRAPPER e_fdw;
CREATE FOREIGN TABLE e_foreign (id int, seq int) SERVER e_server;
CREATE SEQUENCE e_sequence;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_unlogged', '{id}', 'seq')$$) AS unlogged_feed;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_temp', '{id}', 'seq')$$) AS temporary_feed;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_view', '{id}', 'seq')$$) AS view_feed;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_matview', '{id}', 'seq')$$) AS matview_feed;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_foreign', '{id}', 'seq')$$) AS foreign_feed;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_sequence', '{last_value}', 'log_cnt')$$) AS sequence_feed;
SELECT e_leftovers();
-- once => true reads the source as a batch: a view is fine
SELECT autocdc.create_flow('e_ok_once', 'e_view', '{id}', 'seq', once => true, continuous => false);
SELECT name, kind, source, target, scd_type, continuous, state FROM autocdc.flows WHERE name = 'e_ok_once';
INSERT INTO e_feed (id, name, seq) VALUES (1, 'one', 1), (2, 'two', 1);
SELECT * FROM autocdc.run_flow('e_ok_once');
SELECT * FROM e_ok_once ORDER BY id;
-- once: read again only by a full refresh
INSERT INTO e_feed (id, name, seq) VALUES (3, 'three', 1);
SELECT * FROM autocdc.run_flow('e_ok_once');
SELECT count(*) FROM e_ok_once;

-- roles for the privilege cases
CREATE ROLE regress_e_alice;
CREATE ROLE regress_e_bob;
GRANT CREATE ON SCHEMA public TO regress_e_alice, regress_e_bob;

-- row-level security: refused unless the flow owner bypasses it
CREATE TABLE e_rls (id int, seq int, tenant text);
ALTER TABLE e_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY e_rls_tenant ON e_rls USING (tenant = current_user);
GRANT SELECT ON e_rls TO regress_e_alice;
SET ROLE regress_e_alice;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_rls', '{id}', 'seq')$$) AS rls_source;
RESET ROLE;
-- FORCE makes it apply to the table's owner too
CREATE TABLE e_rls_forced (id int, seq int, tenant text);
ALTER TABLE e_rls_forced OWNER TO regress_e_alice;
ALTER TABLE e_rls_forced ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
SET ROLE regress_e_alice;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_rls_forced', '{id}', 'seq')$$) AS rls_forced_source;
RESET ROLE;
SELECT e_leftovers();
-- a superuser bypasses row-level security: accepted
SELECT autocdc.create_flow('e_ok_rls', 'e_rls', '{id}', 'seq', continuous => false);
SELECT autocdc.drop_flow('e_ok_rls', true);

-- privileges: SELECT on what the flow reads, CREATE on the target's schema,
-- ownership of an existing target
CREATE TABLE e_priv (id int, name text, seq int, secret text);
CREATE TABLE e_pub (id int, name text, seq int);
GRANT SELECT ON e_pub TO regress_e_alice, regress_e_bob;
CREATE SCHEMA e_closed;
CREATE TABLE e_x_pgowned (id int PRIMARY KEY, name text);
GRANT ALL ON e_x_pgowned TO regress_e_alice;
SET ROLE regress_e_alice;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_priv', '{id}', 'seq')$$) AS no_select_on_source;
SELECT e_try($$SELECT autocdc.create_flow('e_closed.e_t_a', 'e_pub', '{id}', 'seq', column_list => '{id,name}')$$) AS no_create_on_target_schema;
SELECT e_try($$SELECT autocdc.create_flow('e_x_pgowned', 'e_pub', '{id}', 'seq', column_list => '{id,name}')$$) AS target_owned_by_other;
RESET ROLE;
-- column privileges: SELECT on id, name and seq only
GRANT SELECT (id, name, seq) ON e_priv TO regress_e_alice;
SET ROLE regress_e_alice;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_priv', '{id}', 'seq')$$) AS no_select_on_selected_column;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_priv', '{id}', 'seq', column_list => '{id,name}',
	apply_as_deletes => $c$secret = 'x'$c$)$$) AS no_select_on_condition_column;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_priv', '{id}', 'seq::text || secret', column_list => '{id,name}')$$) AS no_select_on_sequence_column;
RESET ROLE;
SELECT e_leftovers();
-- SELECT on exactly the columns the flow reads (expressions included) is enough
SET ROLE regress_e_alice;
SELECT e_try($$SELECT autocdc.create_flow('e_ok_cols', 'e_priv', '{id}', 'seq', except_column_list => '{secret}',
	apply_as_deletes => $c$name = 'x'$c$, continuous => false)$$) AS select_on_the_columns_read;
RESET ROLE;
SELECT name, owner, target, (SELECT relowner::regrole FROM pg_class WHERE oid = target) AS target_owner
  FROM autocdc.flows WHERE name = 'e_ok_cols';
-- ... and runs: the first read and the decoded rows carry only what the owner may read
INSERT INTO e_priv VALUES (1, 'one', 1, 'hidden');
SET ROLE regress_e_alice;
SELECT * FROM autocdc.run_flow('e_ok_cols');
RESET ROLE;
INSERT INTO e_priv VALUES (2, 'two', 2, 'hidden');
SET ROLE regress_e_alice;
SELECT * FROM autocdc.run_flow('e_ok_cols');
SELECT * FROM e_ok_cols ORDER BY id;
RESET ROLE;
DO $$BEGIN PERFORM autocdc.drop_flow(name, true) FROM autocdc.flow WHERE name = 'e_ok_cols'; END$$;
-- a feed's column named like a pseudo-column of changes() is an ordinary
-- column: the owner losing SELECT on it stops the flow
CREATE TABLE e_pseudo (id int, _commit_timestamp text, seq int);
GRANT SELECT ON e_pseudo TO regress_e_alice;
SET ROLE regress_e_alice;
SELECT autocdc.create_flow('e_pseudo_t', 'e_pseudo', '{id}', 'seq', column_list => '{id,_commit_timestamp}',
	continuous => false);
RESET ROLE;
REVOKE SELECT ON e_pseudo FROM regress_e_alice;
GRANT SELECT (id, seq) ON e_pseudo TO regress_e_alice;
SET ROLE regress_e_alice;
SELECT e_try($$SELECT * FROM autocdc.run_flow('e_pseudo_t')$$) AS lost_select_on_feed_column;
RESET ROLE;
DO $$BEGIN PERFORM autocdc.drop_flow(name, true) FROM autocdc.flow WHERE name = 'e_pseudo_t'; END$$;
DROP TABLE e_pseudo;
-- alice's flow for the ownership cases below
SET ROLE regress_e_alice;
SELECT autocdc.create_flow('e_ok_alice', 'e_pub', '{id}', 'seq', continuous => false);
RESET ROLE;
SELECT name, owner, target, (SELECT relowner::regrole FROM pg_class WHERE oid = target) AS target_owner
  FROM autocdc.flows WHERE name = 'e_ok_alice';

-- unknown flows
SELECT e_try($$SELECT * FROM autocdc.run_flow('e_nosuch')$$) AS run_unknown;
SELECT e_try($$SELECT * FROM autocdc.full_refresh('e_nosuch')$$) AS refresh_unknown;
SELECT e_try($$SELECT autocdc.drop_flow('e_nosuch')$$) AS drop_unknown;
SELECT e_try($$SELECT autocdc.skip_events('e_nosuch', '0/1')$$) AS skip_unknown;
SELECT e_try($$SELECT autocdc.pause_flow('e_nosuch')$$) AS pause_unknown;
SELECT e_try($$SELECT autocdc.resume_flow('e_nosuch')$$) AS resume_unknown;

-- another owner's flow: running, refreshing, skipping, pausing and dropping
-- need ownership of the flow (or superuser)
SET ROLE regress_e_bob;
SELECT e_try($$SELECT * FROM autocdc.run_flow('e_ok_alice')$$) AS run_other_owner;
SELECT e_try($$SELECT * FROM autocdc.full_refresh('e_ok_alice')$$) AS refresh_other_owner;
SELECT e_try($$SELECT autocdc.skip_events('e_ok_alice', '0/1')$$) AS skip_other_owner;
SELECT e_try($$SELECT autocdc.pause_flow('e_ok_alice')$$) AS pause_other_owner;
SELECT e_try($$SELECT autocdc.resume_flow('e_ok_alice')$$) AS resume_other_owner;
SELECT e_try($$SELECT autocdc.drop_flow('e_ok_alice')$$) AS drop_other_owner;
-- nor may bob add a flow into alice's target
SELECT e_try($$SELECT autocdc.create_flow('e_ok_alice', 'e_pub', '{id}', 'seq', name => 'e_t_bob')$$)
	AS flow_into_other_owners_target;
RESET ROLE;
SELECT name, state FROM autocdc.flows WHERE name = 'e_ok_alice';

-- DROP TABLE of a source or target in use is refused with a hint
SELECT e_try($$DROP TABLE e_dupfeed$$) AS drop_source_in_use;
SELECT e_try($$DROP VIEW e_view$$) AS drop_view_source_in_use;
SELECT e_try($$DROP TABLE e_ok_dup$$) AS drop_target_in_use;
SELECT e_try($$DROP TABLE e_ok_dup, e_x_missing$$) AS drop_target_among_others;

-- NULL arguments
SELECT e_try($$SELECT autocdc.create_flow(NULL, 'e_feed', '{id}', 'seq')$$) AS null_target;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', NULL, '{id}', 'seq')$$) AS null_source;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', NULL, 'seq')$$) AS null_keys;
SELECT e_try($$SELECT autocdc.create_flow('e_t_a', 'e_feed', '{id}', NULL)$$) AS null_sequence_by;
SELECT e_leftovers();
-- the other functions refuse NULL arguments
SELECT count(*) AS rows_of_run_null FROM autocdc.run_flow(NULL);
SELECT autocdc.drop_flow(NULL) IS NULL AS drop_null;
SELECT autocdc.drop_flow('e_ok_dup', NULL) IS NULL AS drop_null_drop_target;
SELECT autocdc.skip_events('e_ok_dup', NULL) IS NULL AS skip_null;
SELECT count(*) AS e_ok_dup_still_there FROM autocdc.flows WHERE name = 'e_ok_dup';

-- a hidden state altered by hand (a bookkeeping column retyped), or a
-- source retyped under its flow: the run refuses, applies nothing, and goes
-- on once the column is back
CREATE TABLE e_altfeed (id int, name text, seq int);
SELECT autocdc.create_flow('e_alt', 'e_altfeed', '{id}', 'seq', continuous => false);
INSERT INTO e_altfeed VALUES (1, 'one', 1);
SELECT * FROM autocdc.run_flow('e_alt');
SELECT format('autocdc_state.target_%s', target_id) AS alt_state FROM autocdc.flow WHERE name = 'e_alt' \gset
ALTER TABLE :alt_state ALTER COLUMN __autocdc_at TYPE timestamp;
INSERT INTO e_altfeed VALUES (1, 'uno', 2);
SELECT regexp_replace(e_try($$SELECT * FROM autocdc.run_flow('e_alt')$$), 'target_[0-9]+', 'target_N')
	   AS altered_bookkeeping;
SELECT * FROM e_alt;
ALTER TABLE :alt_state ALTER COLUMN __autocdc_at TYPE timestamptz;
ALTER TABLE e_altfeed ALTER COLUMN name TYPE varchar;
SELECT e_try($$SELECT * FROM autocdc.run_flow('e_alt')$$) AS retyped_source_column;
SELECT * FROM e_alt;
ALTER TABLE e_altfeed ALTER COLUMN name TYPE text;
SELECT * FROM autocdc.run_flow('e_alt');
SELECT * FROM e_alt;
SELECT autocdc.drop_flow('e_alt', true);
DROP TABLE e_altfeed;

-- a target to distribute, without Citus: nothing is created
SELECT e_try($$SELECT autocdc.create_flow('e_dist', 'e_feed', '{id}', 'seq', distributed_by => 'id')$$)
	AS distributed_without_citus;
SELECT e_try($$SELECT * FROM autocdc.execute('CREATE STREAMING TABLE e_dist (id int) DISTRIBUTED BY (id)')$$)
	AS distributed_by_without_citus;
SELECT e_try($$SELECT * FROM autocdc.execute('CREATE STREAMING TABLE e_dist DISTRIBUTED BY (id)')$$)
	AS distributed_by_without_columns;
SELECT e_try($$SELECT * FROM autocdc.execute('CREATE STREAMING TABLE e_dist (id int) DISTRIBUTED (id)')$$)
	AS distributed_by_syntax;
SELECT to_regclass('e_dist') IS NULL AS no_table, count(*) AS no_flow FROM autocdc.flows WHERE name = 'e_dist';

-- clean up
SELECT autocdc.drop_flow('e_ok_alice', true);
SELECT autocdc.drop_flow('e_ok_dup', true);
SELECT autocdc.drop_flow('e_ok_once', true);
SELECT e_leftovers();
DROP SCHEMA e_other, e_closed;
DROP VIEW e_view, e_x_view;
DROP MATERIALIZED VIEW e_matview;
DROP TABLE e_feed, e_tfeed, e_dupfeed, e_pub, e_x_missing, e_x_wrongtype, e_x_noscd2, e_x_endonly, e_x_seqtype,
	e_x_scd2cols, e_unlogged, e_temp, e_rls, e_rls_forced, e_priv, e_x_pgowned;
DROP FOREIGN TABLE e_foreign;
DROP SERVER e_server;
DROP FOREIGN DATA WRAPPER e_fdw;
DROP SEQUENCE e_sequence;
REVOKE CREATE ON SCHEMA public FROM regress_e_alice, regress_e_bob;
DROP OWNED BY regress_e_alice, regress_e_bob;
DROP ROLE regress_e_alice, regress_e_bob;
DROP TABLE e_base_flows, e_base_targets, e_base_state;
DROP FUNCTION e_leftovers(), e_try(text);
