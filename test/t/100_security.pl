
# A hostile but unprivileged flow owner: nothing autocdc runs for a flow may
# evaluate the owner's code with more privileges than the owner's.  Schema
# sync (ADD COLUMN of a domain with a DEFAULT, ALTER COLUMN TYPE to a domain
# with a CHECK, indexes over the owner's functions) through run_flow - also
# when a superuser calls it -, through the worker and through full_refresh;
# a target given away to another role stops the flow with a hint.  (Targets
# take domains as their base types, so schema sync no longer evaluates the
# domains' code at all: 170_foreign_code.pl.)

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $node = autocdc_node('security', worker => 1, conf => ["autocdc.naptime = '100ms'"]);

$node->safe_psql('postgres', q{
	CREATE EXTENSION autocdc;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE SCHEMA alice AUTHORIZATION alice;
	GRANT USAGE ON SCHEMA alice TO bob;
});

# alice's trap: every call notes who ran it, and tries to make alice a superuser
$node->safe_psql('postgres', q{
	SET ROLE alice;
	CREATE TABLE alice.seen (what text, who text);
	CREATE FUNCTION alice.grab(what text) RETURNS int LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO alice.seen VALUES (what, current_user);
		IF current_user <> 'alice' THEN
			EXECUTE 'ALTER ROLE alice SUPERUSER BYPASSRLS';
		END IF;
		RETURN 1;
	END $$;
	CREATE FUNCTION alice.check_it(v int) RETURNS boolean LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM alice.grab('domain check');
		RETURN true;
	END $$;
	CREATE FUNCTION alice.idx(v text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
	BEGIN
		PERFORM alice.grab('index expression');
		RETURN v;
	END $$;
	CREATE DOMAIN alice.dint AS int DEFAULT alice.grab('domain default');
	CREATE DOMAIN alice.dchk AS bigint CHECK (alice.check_it(VALUE::int));
});

# nobody but alice ran alice's code, and alice is no superuser
sub check_seen
{
	my ($what, $min) = @_;
	is( $node->safe_psql('postgres', q{
			SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = 'alice'}),
		'f', "$what: alice gained no privilege");
	is( $node->safe_psql('postgres', q{
			SELECT coalesce(string_agg(DISTINCT who, ','), '') FROM alice.seen WHERE who <> 'alice'}),
		'', "$what: alice's functions ran as alice only");
	cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM alice.seen}),
		'>=', $min, "$what: the trap was sprung");
	$node->safe_psql('postgres', 'TRUNCATE alice.seen');
}

sub alice
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', "SET ROLE alice; $sql");
}

# --- run_flow: a new feed column of a domain with a DEFAULT ----------------
alice(q{
	CREATE TABLE alice.feed1 (id int, v text, seq int);
	SELECT autocdc.create_flow('alice.t1', 'alice.feed1', '{id}', 'seq', continuous => false);
	CREATE INDEX ON alice.t1 (alice.idx(v));
	INSERT INTO alice.feed1 VALUES (1, 'a', 1), (2, 'b', 1);
	SELECT * FROM autocdc.run_flow('t1');
	TRUNCATE alice.seen;
	ALTER TABLE alice.feed1 ADD COLUMN extra alice.dint;
	INSERT INTO alice.feed1 VALUES (3, 'c', 1, 7);
	SELECT * FROM autocdc.run_flow('t1');
});
# the target's column has the base type: its existing rows stay NULL
is($node->safe_psql('postgres', 'SELECT id, v, extra FROM alice.t1 ORDER BY id'),
	"1|a|\n2|b|\n3|c|7", 'run_flow added the column to the target');
check_seen('run_flow, ADD COLUMN of a domain with a default', 2);

# a superuser running alice's flow runs it as alice
$node->safe_psql('postgres', q{
	SET ROLE alice;
	ALTER TABLE alice.feed1 ADD COLUMN extra2 alice.dint;
	INSERT INTO alice.feed1 VALUES (4, 'd', 1, 8, 9);
	RESET ROLE;
	SELECT * FROM autocdc.run_flow('t1');
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM alice.t1 WHERE extra2 IS NOT NULL'), '1',
	'a superuser ran the flow');
check_seen('run_flow by a superuser', 2);

# --- the worker: alice only commits ----------------------------------------
alice(q{
	CREATE TABLE alice.feed2 (id int, v text, seq int);
	SELECT autocdc.create_flow('alice.t2', 'alice.feed2', '{id}', 'seq', stored_as_scd_type => '2');
	INSERT INTO alice.feed2 VALUES (1, 'a', 1);
});
ok($node->poll_query_until('postgres', 'SELECT count(*) = 1 FROM alice.t2'), 'the worker applies t2');
alice(q{
	TRUNCATE alice.seen;
	ALTER TABLE alice.feed2 ADD COLUMN extra alice.dint;
	INSERT INTO alice.feed2 VALUES (2, 'b', 2, 5);
});
ok($node->poll_query_until('postgres', 'SELECT count(*) = 2 FROM alice.t2'),
	'the worker added the column and applied the row');
check_seen('the worker, ADD COLUMN of a domain with a default', 1);

# --- full_refresh after a retype to a domain with a CHECK ------------------
alice(q{
	CREATE TABLE alice.feed3 (id int, n int, seq int);
	SELECT autocdc.create_flow('alice.t3', 'alice.feed3', '{id}', 'seq', continuous => false);
	INSERT INTO alice.feed3 VALUES (1, 10, 1);
	SELECT * FROM autocdc.run_flow('t3');
	ALTER TABLE alice.feed3 ALTER COLUMN n TYPE alice.dchk;
	TRUNCATE alice.seen;
});
my ($ret, $out, $err) = $node->psql('postgres', q{SET ROLE alice; SELECT * FROM autocdc.run_flow('t3')});
like($err, qr/column "n" of source "feed3" changed type from integer to alice\.dchk/,
	'a retyped column fails the run');
like($err, qr/full_refresh/, '... with the hint to refresh');
alice(q{SELECT * FROM autocdc.full_refresh('t3')});
is($node->safe_psql('postgres', q{SELECT format_type(atttypid, atttypmod) FROM pg_attribute
	WHERE attrelid = 'alice.t3'::regclass AND attname = 'n'}), 'bigint',
	'full_refresh retyped the target column (to the base type)');
check_seen('full_refresh, ALTER COLUMN TYPE to a domain with a check', 0);

# the same through the worker: a refresh-free retype fails the flow, visibly
alice(q{
	CREATE TABLE alice.feed4 (id int, n int, seq int);
	SELECT autocdc.create_flow('alice.t4', 'alice.feed4', '{id}', 'seq');
	INSERT INTO alice.feed4 VALUES (1, 10, 1);
});
ok($node->poll_query_until('postgres', 'SELECT count(*) = 1 FROM alice.t4'), 'the worker applies t4');
alice(q{
	ALTER TABLE alice.feed4 ALTER COLUMN n TYPE alice.dchk;
	INSERT INTO alice.feed4 VALUES (2, 20, 2);
	TRUNCATE alice.seen;
});
ok( $node->poll_query_until('postgres', q{
		SELECT state = 'error' AND last_error LIKE '%changed type%' FROM autocdc.flows WHERE name = 't4'}),
	'the worker shows the retyped flow in error');
alice(q{SELECT * FROM autocdc.full_refresh('t4')});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 2 FROM alice.t4}),
	'after full_refresh the worker goes on');
check_seen('full_refresh of a worker flow', 0);

# --- a target given away stops the flow ---------------------------------------
$node->safe_psql('postgres', q{ALTER TABLE alice.t1 OWNER TO bob});
($ret, $out, $err) = $node->psql('postgres', q{SET ROLE alice; SELECT * FROM autocdc.run_flow('t1')});
like($err, qr/flow "t1": its owner alice does not own its target alice\.t1/,
	'a flow whose owner no longer owns the target fails');
like($err, qr/HINT:  Give it back with ALTER TABLE alice\.t1 OWNER TO alice/, '... with a hint');
$node->safe_psql('postgres', q{ALTER TABLE alice.t1 OWNER TO alice});
$node->safe_psql('postgres', q{ALTER TABLE alice.t2 OWNER TO bob});
alice(q{INSERT INTO alice.feed2 VALUES (3, 'c', 3, 1)});
ok( $node->poll_query_until('postgres', q{
		SELECT state = 'error' AND last_error LIKE '%does not own its target%' FROM autocdc.flows WHERE name = 't2'}),
	'the worker shows a given-away target as an error of its flow');
$node->safe_psql('postgres', q{ALTER TABLE alice.t2 OWNER TO alice});
alice(q{SELECT autocdc.resume_flow('t2')});
ok($node->poll_query_until('postgres', 'SELECT count(*) = 3 FROM alice.t2'),
	'given back, the flow goes on');
is($node->safe_psql('postgres', q{SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = 'alice'}),
	'f', 'alice is still no superuser');

# --- the worker: a flow whose code drops the flow being applied --------------
my $started = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');
alice(q{
	CREATE TABLE alice.feed5 (id int, v text, seq int, op text);
	CREATE FUNCTION alice.drop_me(op text) RETURNS boolean LANGUAGE plpgsql AS $$
	BEGIN
		IF op = 'X' THEN PERFORM autocdc.drop_flow('t5', true); END IF;
		RETURN op = 'D';
	END $$;
	SELECT autocdc.create_flow('alice.t5', 'alice.feed5', '{id}', 'seq',
							   apply_as_deletes => 'alice.drop_me(op)');
	INSERT INTO alice.feed5 VALUES (1, 'a', 1, 'U');
});
ok($node->poll_query_until('postgres', 'SELECT count(*) = 1 FROM alice.t5'), 'the worker applies t5');
alice(q{INSERT INTO alice.feed5 VALUES (2, 'b', 2, 'X')});
alice(q{INSERT INTO alice.feed2 VALUES (10, 'z', 10, 10)});
ok( $node->poll_query_until('postgres', q{
		SELECT state = 'error' AND last_error LIKE 'cannot drop a flow while flow "t5" is being applied%'
		  FROM autocdc.flows WHERE name = 't5'}),
	'a worker run whose code drops its flow fails that flow');
ok($node->poll_query_until('postgres', 'SELECT count(*) = 4 FROM alice.t2'),
	'other flows go on');
sleep(2);	# the flow's retries (1 s, 2 s) must not crash the server either
is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $started,
	'the server did not crash and restart');
is($node->safe_psql('postgres', 'SELECT count(*) FROM alice.t5'), '1', 't5 is intact');
alice(q{SELECT autocdc.drop_flow('t5')});

# --- a long error with multibyte characters: the database still restores ------
alice(q{
	CREATE TABLE alice.feed6 (k text, seq int);
	SELECT autocdc.create_flow('alice.t6', 'alice.feed6', '{k}', 'seq', continuous => false);
	INSERT INTO alice.feed6 VALUES (repeat(U&'\00e9\20ac', 1200), NULL);
});
my ($ret2, $out2, $err2) = $node->psql('postgres', q{SET ROLE alice; SELECT * FROM autocdc.run_flow('t6')});
like($err2, qr/has a null sequence/, 'a run fails with a long error');
alice(q{SELECT * FROM autocdc.run_flow('t3')});    # writes the error down
is( $node->safe_psql('postgres', q{
		SELECT octet_length(last_error) < 2048 AND length(last_error) > 600
		  FROM autocdc.flows WHERE name = 't6'}),
	't', 'the stored error is cut, and valid text');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
my $dump = $node->basedir . '/security.sql';
$node->command_ok([ 'pg_dump', '-d', $node->connstr('postgres'), '-f', $dump ], 'pg_dump');
my ($rc, $rout, $rerr) = $node->psql('restored', undef, extra_params => [ '-f', $dump ],
	on_error_stop => 1);
is($rc, 0, 'the dump restores') or diag($rerr);
is( $node->safe_psql('restored', q{
		SELECT count(*) FROM autocdc.flow_state s JOIN autocdc.flow f USING (name)}),
	$node->safe_psql('postgres', 'SELECT count(*) FROM autocdc.flow'),
	'every flow and its state came back');

# --- two concurrent create_flow of one name ----------------------------------
my $s1 = $node->background_psql('postgres', on_error_stop => 0);
my $s2 = $node->background_psql('postgres', on_error_stop => 0);
$s1->query_safe(q{BEGIN; SELECT autocdc.create_flow('alice.t7a', 'alice.feed1', '{id}', 'seq', name => 'same')});
$s2->query_until(qr/started/, q{
	\echo started
	SELECT autocdc.create_flow('alice.t7b', 'alice.feed1', '{id}', 'seq', name => 'same');
	\echo done
});
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock'
		   AND query LIKE '%t7b%'}),
	'the second create_flow waits for the first');
$s1->query_safe('COMMIT');
$s2->query('SELECT 1');
like($s2->{stderr}, qr/ERROR:  flow "same" already exists/,
	'the second one fails with duplicate_object, not a unique violation');
$s1->quit;
$s2->quit;

$node->stop;
done_testing();
