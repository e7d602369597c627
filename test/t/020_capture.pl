
# Capture guarantees of feed sources (semantics §2): transactional create_flow,
# first read, late-committing transactions, purged feed rows, runs inside a
# writing transaction, and exactly-once application across immediate
# shutdowns (between a feed commit and the apply, in the middle of a run, and
# just after a committed run), and run_flow at a WAL page boundary.
#
# All flows here are continuous => false so that only run_flow() applies them
# and the per-run event counts are deterministic.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

# an engine crash must not hide the remaining assertions; it is reported below
my $node = autocdc_node('capture', conf => ['restart_after_crash = on']);

# Run SQL; return its output, or "ERROR: <stderr>" (never dies, so that an
# engine failure shows up as a failed assertion and the script continues).
sub sql
{
	my ($sql, $db) = @_;
	$db //= 'postgres';
	my $timed_out = 0;
	my ($rc, $out, $err) = $node->psql(
		$db, $sql,
		on_error_stop => 1,
		timeout => 120,
		timed_out => \$timed_out);
	if ($timed_out)
	{
		diag("TIMEOUT running: $sql");
		return "ERROR: timeout";
	}
	if ($rc != 0)
	{
		diag("failed: $sql\n$err");
		return "ERROR: $err";
	}
	return $out;
}

# run_flow in its own transaction; returns num_events (or the error)
sub run_events
{
	my ($flow, $db) = @_;
	return sql("SELECT num_events FROM autocdc.run_flow('$flow')", $db);
}

sub scd1_dump
{
	my ($tbl, $db) = @_;
	return sql(
		"SELECT coalesce(string_agg(format('%s:%s', k, coalesce(v, '-')), ' ' ORDER BY k), '') FROM $tbl",
		$db);
}

sub scd2_dump
{
	my ($tbl, $db) = @_;
	return sql(
		"SELECT coalesce(string_agg(format('%s:%s:%s:%s', k, coalesce(v, '-'), __start_at, coalesce(__end_at::text, '-')), ' ' ORDER BY k, __start_at), '') FROM $tbl",
		$db);
}

sub flow_total
{
	my ($flow, $db) = @_;
	return sql("SELECT num_events FROM autocdc.flows WHERE name = '$flow'",
		$db);
}

sub autocdc_slots
{
	my ($db) = @_;
	return sql(
		"SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'autocdc%' AND database = current_database()",
		$db);
}

# Everything create_flow could leave behind, as named counts.
my $catalog_sql = q{
SELECT format('flows=%s flow=%s flow_state=%s target=%s state_rels=%s state_types=%s relations=%s types=%s slots=%s pubs=%s pubrels=%s pubnsps=%s',
  (SELECT count(*) FROM autocdc.flows),
  (SELECT count(*) FROM autocdc.flow),
  (SELECT count(*) FROM autocdc.flow_state),
  (SELECT count(*) FROM autocdc.target),
  (SELECT count(*) FROM pg_class WHERE relnamespace = 'autocdc_state'::regnamespace),
  (SELECT count(*) FROM pg_type WHERE typnamespace = 'autocdc_state'::regnamespace),
  (SELECT count(*) FROM pg_class),
  (SELECT count(*) FROM pg_type),
  (SELECT count(*) FROM pg_replication_slots),
  (SELECT count(*) FROM pg_publication),
  (SELECT count(*) FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid
	WHERE p.pubname LIKE 'autocdc%'
	   OR p.oid IN (SELECT objid FROM pg_depend
					 WHERE classid = 'pg_publication'::regclass AND deptype = 'e'
					   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'autocdc'))),
  (SELECT count(*) FROM pg_publication_namespace pn JOIN pg_publication p ON p.oid = pn.pnpubid
	WHERE p.pubname LIKE 'autocdc%'))
};

$node->safe_psql('postgres', 'CREATE EXTENSION autocdc');

###########################################################################
# 1. create_flow rolled back leaves nothing behind (fresh database, no slot)
###########################################################################

$node->safe_psql('postgres',
	'CREATE TABLE rb_feed2 (k int, v text, seq int, op text)');
my $before = sql($catalog_sql);
like($before, qr/^flows=0 /, 'catalog snapshot before rolled-back create_flow');

my $out = sql(q{
BEGIN;
CREATE TABLE rb_feed (k int, v text, seq int);
INSERT INTO rb_feed VALUES (1, 'a', 1), (2, 'b', 1);
SELECT autocdc.create_flow('rb_target', 'rb_feed', ARRAY['k'], 'seq', continuous => false);
ROLLBACK;
});
is($out, 'rb_target', 'create_flow with new feed in transaction succeeded before ROLLBACK');
is(sql($catalog_sql), $before, 'ROLLBACK of CREATE TABLE + create_flow leaves nothing behind');
is(sql(q{SELECT to_regclass('rb_target') IS NULL AND to_regclass('rb_feed') IS NULL}),
	't', 'rolled-back target and feed do not exist');

$out = sql(q{
BEGIN;
SELECT autocdc.create_flow('rb_target2', 'rb_feed2', ARRAY['k'], 'seq',
	apply_as_deletes => 'op = ''D''', except_column_list => ARRAY['op'],
	stored_as_scd_type => '2', name => 'rb2', continuous => false);
SELECT autocdc.create_flow('rb_target3', 'rb_feed2', ARRAY['k'], 'ROW(seq, k)',
	name => 'rb3', stored_as_scd_type => '2', continuous => false);
ROLLBACK;
});
is($out, "rb2\nrb3", 'create_flow on existing feed succeeded before ROLLBACK');
is(sql($catalog_sql), $before, 'ROLLBACK of create_flow on an existing feed leaves nothing behind');
is(sql(q{SELECT count(*) FROM pg_class WHERE relname IN ('rb_target2', 'rb_target3')}),
	'0', 'rolled-back targets not created');
is(sql(q{SELECT count(*) FROM pg_type WHERE typname = 'rb_target3_seq'}),
	'0', 'rolled-back ROW sequence type not created');
is(autocdc_slots(), '0', 'no replication slot after rolled-back create_flow');

# the name is free again: the same flow can be created and dropped
is( sql(q{SELECT autocdc.create_flow('rb_target2', 'rb_feed2', ARRAY['k'], 'seq',
	apply_as_deletes => 'op = ''D''', except_column_list => ARRAY['op'],
	stored_as_scd_type => '2', name => 'rb2', continuous => false)}),
	'rb2', 'flow name reusable after ROLLBACK');
is(sql(q{SELECT autocdc.drop_flow('rb2', true)}), '', 'drop_flow rb2');
is(sql(q{SELECT count(*) FROM pg_class WHERE relname = 'rb_target2'}),
	'0', 'rb_target2 dropped');

###########################################################################
# 2. CREATE TABLE feed + INSERT + create_flow in one committed transaction
###########################################################################

$out = sql(q{
BEGIN;
CREATE TABLE tx_feed (k int, v text, seq int);
INSERT INTO tx_feed VALUES (1, 'a', 1), (2, 'b', 1), (3, 'c', 1);
SELECT autocdc.create_flow('tx_target', 'tx_feed', ARRAY['k'], 'seq', continuous => false);
INSERT INTO tx_feed VALUES (4, 'd', 1);
COMMIT;
});
is($out, 'tx_target', 'create_flow in the transaction that creates and fills the feed');
is(run_events('tx_target'), '4', 'first run applies the rows of the creating transaction');
is(scd1_dump('tx_target'), '1:a 2:b 3:c 4:d', 'tx_target after first run');
is(run_events('tx_target'), '0', 'second run applies nothing (rows not doubled from WAL)');
is(scd1_dump('tx_target'), '1:a 2:b 3:c 4:d', 'tx_target unchanged');
is(autocdc_slots(), '1', 'the first run created one autocdc slot');
is( sql(q{SELECT slot_type || '/' || plugin FROM pg_replication_slots WHERE slot_name LIKE 'autocdc%'}),
	'logical/pgoutput', 'the slot is a pgoutput logical slot');

sql(q{INSERT INTO tx_feed VALUES (5, 'e', 1); INSERT INTO tx_feed VALUES (6, 'f', 1), (2, 'b2', 2)});
is(run_events('tx_target'), '3', 'run applies rows committed after the first run');
is(scd1_dump('tx_target'), '1:a 2:b2 3:c 4:d 5:e 6:f', 'tx_target after WAL run');

###########################################################################
# 3. a run in the same transaction as inserts does not see its own rows
###########################################################################

sql(q{INSERT INTO tx_feed VALUES (7, 'g', 1)});
$out = sql(q{
BEGIN;
INSERT INTO tx_feed VALUES (8, 'h', 1), (1, 'a2', 2);
SELECT num_events FROM autocdc.run_flow('tx_target');
SELECT string_agg(format('%s:%s', k, v), ' ' ORDER BY k) FROM tx_target;
COMMIT;
});
is( $out,
	"1\n1:a 2:b2 3:c 4:d 5:e 6:f 7:g",
	'run inside a writing transaction applies only others\' committed rows');
is(scd1_dump('tx_target'), '1:a 2:b2 3:c 4:d 5:e 6:f 7:g', 'own rows not applied after commit');
is(run_events('tx_target'), '2', 'next run applies the rows of the earlier run\'s transaction');
is(scd1_dump('tx_target'), '1:a2 2:b2 3:c 4:d 5:e 6:f 7:g 8:h', 'tx_target complete');
is(run_events('tx_target'), '0', 'nothing more');
is(flow_total('tx_target'), '10', 'tx_target total num_events');

###########################################################################
# 4. purged feed rows (feed without primary key)
###########################################################################

sql(q{CREATE TABLE pf (k int, v text, seq int)});
is( sql(q{SELECT autocdc.create_flow('pf_target', 'pf', ARRAY['k'], 'seq', name => 'pf', continuous => false)}),
	'pf', 'create flow on feed without primary key');
is(run_events('pf'), '0', 'first run of pf (empty feed)');

sql(q{INSERT INTO pf VALUES (1, 'a', 1), (2, 'b', 1); INSERT INTO pf VALUES (3, 'c', 1)});
is(sql(q{DELETE FROM pf}), '', 'DELETE FROM feed without primary key works');
is(sql(q{SELECT count(*) FROM pf}), '0', 'feed purged');
is(run_events('pf'), '3', 'rows deleted from the feed before the run are still applied');
is(scd1_dump('pf_target'), '1:a 2:b 3:c', 'pf_target after purged-before-run rows');

sql(q{INSERT INTO pf VALUES (4, 'd', 1), (5, 'e', 1)});
is(sql(q{TRUNCATE pf}), '', 'TRUNCATE feed works');
is(run_events('pf'), '2', 'rows truncated from the feed before the run are still applied');
is(scd1_dump('pf_target'), '1:a 2:b 3:c 4:d 5:e', 'pf_target after truncated-before-run rows');

$out = sql(q{
BEGIN;
INSERT INTO pf VALUES (6, 'orig', 1);
UPDATE pf SET v = 'changed', seq = 99 WHERE k = 6;
INSERT INTO pf VALUES (7, 'g', 1);
DELETE FROM pf WHERE k = 7;
COMMIT;
});
is($out, '', 'UPDATE and DELETE of feed rows in the inserting transaction work');
is(run_events('pf'), '2', 'events of rows updated/deleted in their inserting transaction');
is(scd1_dump('pf_target'), '1:a 2:b 3:c 4:d 5:e 6:orig 7:g',
	'a later UPDATE/DELETE neither changes nor cancels the INSERT event');

# purge processed rows: nothing changes in the target
sql(q{INSERT INTO pf VALUES (8, 'h', 1)});
is(run_events('pf'), '1', 'run applies row 8');
is(sql(q{DELETE FROM pf WHERE k IN (6, 8)}), '', 'purge processed rows with DELETE');
is(run_events('pf'), '0', 'purging processed rows with DELETE yields no events');
is(scd1_dump('pf_target'), '1:a 2:b 3:c 4:d 5:e 6:orig 7:g 8:h', 'target unchanged after DELETE purge');
sql(q{INSERT INTO pf VALUES (9, 'i', 1)});
is(run_events('pf'), '1', 'run applies row 9');
is(sql(q{TRUNCATE pf}), '', 'purge processed rows with TRUNCATE');
is(run_events('pf'), '0', 'purging processed rows with TRUNCATE yields no events');
is(scd1_dump('pf_target'), '1:a 2:b 3:c 4:d 5:e 6:orig 7:g 8:h 9:i', 'target unchanged after TRUNCATE purge');
is(flow_total('pf'), '9', 'pf total num_events');

###########################################################################
# 5. late-committing transaction
###########################################################################

sql(q{CREATE TABLE lc_feed (k int, v text, seq int)});
is( sql(q{SELECT autocdc.create_flow('lc_target', 'lc_feed', ARRAY['k'], 'seq', name => 'lc', continuous => false)}),
	'lc', 'create flow lc');
is(run_events('lc'), '0', 'first run of lc');

my $sa = $node->background_psql('postgres', on_error_stop => 0);
my ($o, $e) = $sa->query(q{BEGIN; INSERT INTO lc_feed VALUES (1, 'a-early', 1), (5, 'from-A', 1)});
is($e, 0, 'session A: open transaction with an insert');

sql(q{INSERT INTO lc_feed VALUES (2, 'b', 1), (5, 'from-B', 1)});
is(run_events('lc'), '2', 'run applies B\'s committed rows while A is open');
is(scd1_dump('lc_target'), '2:b 5:from-B', 'lc_target has only B\'s rows');

($o, $e) = $sa->query(q{INSERT INTO lc_feed VALUES (3, 'a-late', 1)});
is($e, 0, 'session A: second insert');
sql(q{INSERT INTO lc_feed VALUES (4, 'b2', 1)});
is(run_events('lc'), '1', 'run applies B\'s second commit while A is open');
is(scd1_dump('lc_target'), '2:b 4:b2 5:from-B', 'lc_target still without A\'s rows');

($o, $e) = $sa->query(q{COMMIT});
is($e, 0, 'session A commits');
is(run_events('lc'), '3', 'run after A commits applies all of A\'s rows');
# key 5 has equal sequences: A's event arrives last (A committed last)
is(scd1_dump('lc_target'), '1:a-early 2:b 3:a-late 4:b2 5:from-A',
	'late-committing transaction applied, and it arrives after B');
is(run_events('lc'), '0', 'nothing more for lc');
is(flow_total('lc'), '6', 'lc total num_events');

###########################################################################
# 6. first read: transactions that began before the flow existed
###########################################################################

sql(q{CREATE TABLE fr_feed (k int, v text, seq int); INSERT INTO fr_feed VALUES (1, 'a', 1), (2, 'b', 1)});

my $sa2 = $node->background_psql('postgres', on_error_stop => 0);
($o, $e) = $sa->query(q{BEGIN; INSERT INTO fr_feed VALUES (3, 'late', 1)});
is($e, 0, 'session A: transaction begun before the flow exists');
($o, $e) = $sa2->query(q{BEGIN; INSERT INTO fr_feed VALUES (6, 'before-first-run', 1)});
is($e, 0, 'session A2: transaction begun before the flow exists');

is( sql(q{SET statement_timeout = '30s'; SELECT autocdc.create_flow('fr_target', 'fr_feed', ARRAY['k'], 'seq', name => 'fr', continuous => false)}),
	'fr', 'create_flow does not wait for open transactions');
sql(q{INSERT INTO fr_feed VALUES (4, 'd', 1)});
($o, $e) = $sa2->query(q{COMMIT});
is($e, 0, 'session A2 commits after create_flow, before the first run');

is(sql(q{SET statement_timeout = '60s'; SELECT num_events FROM autocdc.run_flow('fr')}),
	'4', 'first run reads the committed rows (snapshot) while A is open');
is(scd1_dump('fr_target'), '1:a 2:b 4:d 6:before-first-run', 'fr_target after first read');

($o, $e) = $sa->query(q{INSERT INTO fr_feed VALUES (5, 'late2', 1); COMMIT});
is($e, 0, 'session A commits after the first run');
is(run_events('fr'), '2', 'next run applies the transaction that began before the flow existed');
is(scd1_dump('fr_target'), '1:a 2:b 3:late 4:d 5:late2 6:before-first-run', 'fr_target complete');
is(run_events('fr'), '0', 'nothing doubled after first read');
is(flow_total('fr'), '6', 'fr total num_events');

$sa->quit;
$sa2->quit;

###########################################################################
# 7. exactly once across immediate shutdowns
###########################################################################

sql(q{CREATE TABLE cr_feed (k int, v text, seq int, op text);
	  CREATE TABLE cr2_feed (k int, v text, seq int)});
is( sql(q{SELECT autocdc.create_flow('cr_target', 'cr_feed', ARRAY['k'], 'seq',
	apply_as_deletes => 'op = ''D''', column_list => ARRAY['k', 'v'],
	stored_as_scd_type => '2', name => 'c1', continuous => false)}),
	'c1', 'create SCD2 flow c1');
is( sql(q{SELECT autocdc.create_flow('cr2_target', 'cr2_feed', ARRAY['k'], 'seq',
	name => 'c2', continuous => false)}),
	'c2', 'create SCD1 flow c2');
is(run_events('c1'), '0', 'first run c1');
is(run_events('c2'), '0', 'first run c2');

# a database with a single flow: nothing else holds its slot back, so only
# the flow's own progress protects it when the slot's position is lost
sql(q{CREATE DATABASE solo});
sql(q{CREATE EXTENSION autocdc; CREATE TABLE s_feed (k int, v text, seq int)}, 'solo');
is( sql(q{SELECT autocdc.create_flow('s_target', 's_feed', ARRAY['k'], 'seq', name => 's1', continuous => false)}, 'solo'),
	's1', 'create flow s1 in database solo');
is(run_events('s1', 'solo'), '0', 'first run s1');

# c2's events stay pending through everything below until step (g)
sql(q{INSERT INTO cr2_feed VALUES (1, 'x', 1), (2, 'y', 1)});

# (a) events committed, then crash before any apply
sql(q{INSERT INTO cr_feed VALUES (1, 'a', 1, 'U'), (2, 'b', 1, 'U')});
sql(q{INSERT INTO cr_feed VALUES (1, 'a2', 2, 'U'), (3, 'c', 1, 'U')});
sql(q{INSERT INTO cr_feed VALUES (2, NULL, 2, 'D')});
sql(q{INSERT INTO cr_feed VALUES (4, 'd', 1, 'U')});
sql(q{INSERT INTO cr_feed VALUES (5, 'first', 1, 'U')});
sql(q{INSERT INTO cr_feed VALUES (5, 'second', 1, 'U')});

$node->stop('immediate', fail_ok => 1);
$node->start;

my $c1_after_a = '1:a:1:2 1:a2:2:- 2:b:1:2 3:c:1:- 4:d:1:- 5:second:1:-';
is(run_events('c1'), '8', 'after crash: run applies each committed event once');
is(scd2_dump('cr_target'), $c1_after_a, 'cr_target after crash between commit and apply');
is(run_events('c1'), '0', 'after crash: nothing applied twice');
is(flow_total('c1'), '8', 'c1 total after crash');

# (b) c1 advances (with checkpoints) while c2 still has pending events
sql(q{CHECKPOINT});
sql(q{INSERT INTO cr_feed VALUES (3, 'c2', 2, 'U'), (6, 'e', 1, 'U')});
is(run_events('c1'), '2', 'c1 run after checkpoint');
sql(q{CHECKPOINT});
is(run_events('c1'), '0', 'c1 nothing more');

# (c) a committed run just before the crash is not re-applied
sql(q{INSERT INTO s_feed VALUES (1, 'a', 1), (2, 'b', 1)}, 'solo');
is(run_events('s1', 'solo'), '2', 's1 run');
sql(q{CHECKPOINT});
sql(q{INSERT INTO s_feed VALUES (3, 'c', 1)}, 'solo');
sql(q{INSERT INTO s_feed VALUES (1, 'a2', 2)}, 'solo');
is(run_events('s1', 'solo'), '2', 's1 run committed just before crash');
sql(q{INSERT INTO cr_feed VALUES (4, NULL, 3, 'D')});
is(run_events('c1'), '1', 'c1 run committed just before crash');
note('slots before crash: ' . sql(q{SELECT string_agg(slot_name || '@' || confirmed_flush_lsn, ' ') FROM pg_replication_slots}));
$node->stop('immediate', fail_ok => 1);
$node->start;
note('slots after crash: ' . sql(q{SELECT string_agg(slot_name || '@' || confirmed_flush_lsn, ' ') FROM pg_replication_slots}));

is(scd1_dump('s_target', 'solo'), '1:a2 2:b 3:c', 's_target survived the crash');
is(run_events('s1', 'solo'), '0', 's1: committed run not re-applied after crash');
is(scd1_dump('s_target', 'solo'), '1:a2 2:b 3:c', 's_target unchanged after post-crash run');
sql(q{INSERT INTO s_feed VALUES (4, 'd', 1)}, 'solo');
is(run_events('s1', 'solo'), '1', 's1 applies new events after crash');
is(scd1_dump('s_target', 'solo'), '1:a2 2:b 3:c 4:d', 's_target after crash and new events');
is(flow_total('s1', 'solo'), '5', 's1 total');
is( sql(q{SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'autocdc%'}),
	'2', 'one autocdc slot per database');

my $c1_after_c = '1:a:1:2 1:a2:2:- 2:b:1:2 3:c:1:2 3:c2:2:- 4:d:1:3 5:second:1:- 6:e:1:-';
is(scd2_dump('cr_target'), $c1_after_c, 'committed run survived the crash');
is(run_events('c1'), '0', 'committed run is not re-applied after crash');
is(scd2_dump('cr_target'), $c1_after_c, 'cr_target unchanged after post-crash run');
is(flow_total('c1'), '11', 'c1 total after second crash');

# (d) the other flow's events, pending across runs, checkpoints and crashes
is(run_events('c2'), '2', 'c2 pending events survived c1 runs, checkpoints and crashes');
is(scd1_dump('cr2_target'), '1:x 2:y', 'cr2_target');
is(run_events('c2'), '0', 'c2 nothing more');

# (e) crash in the middle of a run (inside an open transaction)
sql(q{INSERT INTO cr_feed VALUES (7, 'g', 1, 'U'), (1, 'a3', 3, 'U')});
my $sb = $node->background_psql('postgres', on_error_stop => 0);
($o, $e) = $sb->query(q{BEGIN; SELECT num_events FROM autocdc.run_flow('c1')});
is($o, '2', 'run inside open transaction sees 2 events');
is($e, 0, 'run inside open transaction succeeded');
is(scd2_dump('cr_target'), $c1_after_c, 'uncommitted run invisible to others');
sql(q{INSERT INTO cr_feed VALUES (8, 'h', 1, 'U')});
$node->stop('immediate', fail_ok => 1);
eval { $sb->quit; };
$node->start;

is(scd2_dump('cr_target'), $c1_after_c, 'crashed run\'s effects are absent');
is(flow_total('c1'), '11', 'crashed run not counted');
is(run_events('c1'), '3', 'next run applies the crashed run\'s events and later ones once');
is( scd2_dump('cr_target'),
	'1:a:1:2 1:a2:2:3 1:a3:3:- 2:b:1:2 3:c:1:2 3:c2:2:- 4:d:1:3 5:second:1:- 6:e:1:- 7:g:1:- 8:h:1:-',
	'cr_target after crash in the middle of a run');
is(run_events('c1'), '0', 'nothing more for c1');
is(flow_total('c1'), '14', 'c1 total: every event counted once');
is(flow_total('c2'), '2', 'c2 total');
is( sql(q{SELECT string_agg(name || '=' || state, ' ' ORDER BY name) FROM autocdc.flows WHERE name IN ('c1', 'c2')}),
	'c1=idle c2=idle', 'flows idle after crashes (not needs_resync)');

# nothing was doubled in the other flows either
is(run_events('tx_target'), '0', 'tx_target: nothing after crashes');
is(run_events('pf'), '0', 'pf: nothing after crashes');
is(run_events('lc'), '0', 'lc: nothing after crashes');
is(run_events('fr'), '0', 'fr: nothing after crashes');
is(scd1_dump('lc_target'), '1:a-early 2:b 3:a-late 4:b2 5:from-A', 'lc_target unchanged after crashes');
is(autocdc_slots(), '1', 'still exactly one autocdc slot');
is( sql(q{SELECT coalesce(string_agg(f.name || ':' || f.num_events || '<>' || coalesce(r.n, 0), ' '), '')
		  FROM autocdc.flows f
		  LEFT JOIN (SELECT flow, sum(num_events) AS n FROM autocdc.flow_runs
					  WHERE status = 'ok' GROUP BY flow) r ON r.flow = f.name
		 WHERE f.num_events IS DISTINCT FROM coalesce(r.n, 0)}),
	'', 'flow_runs (status ok) add up to the totals in autocdc.flows');

###########################################################################
# 8. run_flow flushes WAL first: it must work wherever the WAL insert
#    position is, including exactly at the start of a WAL page (the page
#    header is not yet written there).  Pad the WAL with non-transactional
#    logical messages so that the insert position lands 0, 8, 16, ... bytes
#    before a page boundary, and run the flow after each.
###########################################################################

sql(q{INSERT INTO s_feed VALUES (5, 'e', 1)}, 'solo');
my $pad = '';
for my $j (0 .. 63)
{
	$pad .= qq{DO \$\$
DECLARE
  off int := (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint % 8192;
  room int := 8192 - off - 8 * $j;
BEGIN
  IF room < 400 THEN room := room + 8192 - 24; END IF;
  PERFORM pg_logical_emit_message(false, 'autocdc-pad', repeat('x', room - 65));
END \$\$;
SELECT 'run=' || num_events FROM autocdc.run_flow('s1');
};
}
{
	my ($rc, $pout, $perr) = $node->psql('solo', $pad, on_error_stop => 0, timeout => 120);
	my @errs = ($perr =~ /^.*ERROR.*$/mg);
	is(join("\n", @errs), '', 'run_flow works at every WAL position near a page boundary');
	my @runs = ($pout =~ /^run=(\d+)$/mg);
	is(scalar(@runs), 64, 'all 64 padded runs returned a row');
	my $sum = 0;
	$sum += $_ for @runs;
	is($sum, 1, 'the padded runs applied the one pending event once');
}
is(scd1_dump('s_target', 'solo'), '1:a2 2:b 3:c 4:d 5:e', 's_target after padded runs');

my @crashes = (slurp_file($node->logfile) =~ /^.*terminated by signal.*\n.*$/mg);
is(join("\n", @crashes), '', 'no server process crashed');
ok($node->stop('fast', fail_ok => 1), 'server still running at the end');
done_testing();
