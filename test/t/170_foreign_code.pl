
# The owner of a source cannot make a flow's owner run its code.  bob owns
# the sources and domains whose DEFAULT and CHECK call his functions; those
# note current_user and, run as alice, grant bob her private table.  alice
# owns changes() and feed flows over bob's tables.  When bob adds columns
# of his domains (a DEFAULT, a CHECK, an array of one) the targets and the
# hidden state get the base types and nothing of bob's runs as alice -
# through run_flow and through the worker; a domain as a sequence is
# flattened too.  A composite type of bob's with a domain inside is
# refused with a hint, at create_flow and at schema sync; alice's own
# composite is kept.  An existing target with a column of bob's domain is
# refused with the ALTER TABLE that flattens it.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $node = autocdc_node('foreign_code', worker => 1, conf => ["autocdc.naptime = '100ms'"]);

sub sql { return $node->safe_psql('postgres', $_[0]); }
sub as { my ($role, $q) = @_; return $node->safe_psql('postgres', "SET ROLE $role; $q"); }

# psql as alice; returns stderr
sub alice_err
{
	my ($q) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "SET ROLE alice; $q");
	return $err;
}

sql(q{
	CREATE EXTENSION autocdc;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE SCHEMA alice AUTHORIZATION alice;
	CREATE SCHEMA bob AUTHORIZATION bob;
	GRANT USAGE ON SCHEMA bob TO alice;
	GRANT USAGE ON SCHEMA alice TO bob;
});
as('alice', q{CREATE TABLE alice.private (secret text); INSERT INTO alice.private VALUES ('s3cr3t')});

# bob's traps: note who runs them; run as someone else, take their table
as('bob', q{
	CREATE TABLE bob.seen (what text, who text);
	GRANT INSERT ON bob.seen TO PUBLIC;
	CREATE FUNCTION bob.trap(what text) RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO bob.seen VALUES (what, current_user);
		IF current_user <> 'bob' THEN
			BEGIN
				EXECUTE 'GRANT SELECT ON alice.private TO bob';
			EXCEPTION WHEN OTHERS THEN
				INSERT INTO bob.seen VALUES ('grant failed: ' || SQLERRM, current_user);
			END;
		END IF;
	END $$;
	CREATE FUNCTION bob.f() RETURNS int LANGUAGE plpgsql AS $$
	BEGIN PERFORM bob.trap('default'); RETURN 42; END $$;
	CREATE FUNCTION bob.chk(v int) RETURNS boolean LANGUAGE plpgsql AS $$
	BEGIN PERFORM bob.trap('check'); RETURN v IS NULL OR v > 0; END $$;
	CREATE DOMAIN bob.evil AS int DEFAULT bob.f();
	CREATE DOMAIN bob.chkd AS int CHECK (bob.chk(VALUE));
	CREATE DOMAIN bob.chkd2 AS bob.chkd NOT NULL;
	CREATE TYPE bob.pair AS (x int, y bob.chkd);

	CREATE TABLE bob.t (id int PRIMARY KEY, v text);
	CREATE TABLE bob.feed (id int, v text, seq bob.chkd);
	CREATE TABLE bob.wt (id int PRIMARY KEY, v text);
	CREATE TABLE bob.wfeed (id int, v text, seq int);
	CREATE TABLE bob.withpair (id int PRIMARY KEY, p bob.pair);
	GRANT SELECT ON ALL TABLES IN SCHEMA bob TO alice;
	INSERT INTO bob.t VALUES (1, 'a'), (2, 'b');
	INSERT INTO bob.feed VALUES (1, 'a', 1), (2, 'b', 1);
});
as('alice', q{
	CREATE FUNCTION alice.pos(v int) RETURNS boolean LANGUAGE sql AS 'SELECT v > 0';
	CREATE DOMAIN alice.posint AS int CHECK (alice.pos(VALUE));
	CREATE TYPE alice.apair AS (x int, y alice.posint);
	CREATE TYPE alice.mixed AS (x int, y bob.chkd);
});

# nothing of bob's ran as anyone but bob, and bob got nothing of alice's
sub check_clean
{
	my ($what) = @_;
	is(sql(q{SELECT coalesce(string_agg(DISTINCT who || ':' || what, ','), '') FROM bob.seen WHERE who <> 'bob'}),
		'', "$what: bob's functions ran as bob only");
	is(sql(q{SELECT has_table_privilege('bob', 'alice.private', 'SELECT')}), 'f',
		"$what: bob cannot read alice's table");
}

# the types of a target's columns and of its hidden state's, "col:type,..."
sub types_of
{
	my ($target, @cols) = @_;
	my $list = join(',', map { "'$_'" } @cols);
	my $tid = sql(qq{SELECT id FROM autocdc.target WHERE relid = '$target'::regclass});
	my $q = qq{SELECT string_agg(attname || ':' || format_type(atttypid, atttypmod), ',' ORDER BY attname)
		FROM pg_attribute WHERE attrelid = %s AND attname IN ($list) AND NOT attisdropped};
	return (sql(sprintf($q, "'$target'::regclass")),
		sql(sprintf($q, "'autocdc_state.target_$tid'::regclass")));
}

# a run of changes() flow $flow fails for the rewrite of its source, as
# alice; the refresh that follows applies the table as it is
sub resync
{
	my ($flow, $what) = @_;
	like(alice_err(qq{SELECT * FROM autocdc.run_flow('$flow')}),
		qr/source "\w+" was rewritten by an ALTER TABLE/, "$what: a rewrite of the source, the flow needs a resync");
	as('alice', qq{SELECT * FROM autocdc.full_refresh('$flow')});
}

# --- run_flow: a changes() flow and a feed flow; bob adds domain columns ---------
as('alice', q{
	SELECT autocdc.create_flow('alice.c1', 'changes(bob.t)', '{id}', continuous => false);
	SELECT autocdc.create_flow('alice.f1', 'bob.feed', '{id}', 'seq', continuous => false);
	SELECT * FROM autocdc.run_flow('c1');
	SELECT * FROM autocdc.run_flow('f1');
});
is(sql('SELECT count(*) FROM alice.c1') . sql('SELECT count(*) FROM alice.f1'), '22', 'both flows applied');
my ($tt, $st) = types_of('alice.f1', '__autocdc_seq', 'seq');
is($tt, 'seq:integer', 'a domain-typed column is flattened at creation');
is($st, '__autocdc_seq:integer,seq:integer', 'so are the hidden state and a domain sequence');

as('bob', q{
	ALTER TABLE bob.t ADD COLUMN e bob.evil, ADD COLUMN c bob.chkd, ADD COLUMN a bob.chkd[];
	INSERT INTO bob.t (id, v, c, a) VALUES (3, 'c', 7, '{1,2}');
	UPDATE bob.t SET c = 9 WHERE id = 1;
	ALTER TABLE bob.feed ADD COLUMN e bob.evil, ADD COLUMN c bob.chkd, ADD COLUMN a bob.chkd[];
	INSERT INTO bob.feed (id, v, seq, c, a) VALUES (3, 'c', 2, 7, '{1,2}'), (1, 'z', 3, 9, NULL);
	TRUNCATE bob.seen;
});
as('alice', q{SELECT * FROM autocdc.run_flow('f1')});
# adding a column of a domain with a volatile DEFAULT or a CHECK rewrites
# bob.t (sql/source_ddl.sql): the changes() flow needs a resync, and its
# refresh reads the table
resync('c1', 'ADD COLUMN of domains with DEFAULT and CHECK');
check_clean('run_flow, ADD COLUMN of domains with DEFAULT and CHECK');
is(sql('SELECT id, v, e, c, a FROM alice.c1 ORDER BY id'),
	"1|a|42|9|\n2|b|42||\n3|c|42|7|{1,2}", 'the changes() flow applied the new columns');
is(sql('SELECT id, v, e, c, a FROM alice.f1 ORDER BY id'),
	"1|z|42|9|\n2|b|||\n3|c|42|7|{1,2}", 'the feed flow applied the new columns');
for my $t ('alice.c1', 'alice.f1')
{
	my ($tt, $st) = types_of($t, 'a', 'c', 'e');
	is($tt, 'a:integer[],c:integer,e:integer', "$t: the target has the base types");
	is($st, $tt, "$t: so has the hidden state");
}

# a NOT NULL domain over another (a rewrite too)
as('bob', q{ALTER TABLE bob.t ADD COLUMN n bob.chkd2 DEFAULT 5; UPDATE bob.t SET v = 'y' WHERE id = 3});
resync('c1', 'ADD COLUMN of a NOT NULL domain');
is((types_of('alice.c1', 'n'))[0], 'n:integer', 'a NOT NULL domain over a domain is flattened');
is(sql('SELECT id, v, n FROM alice.c1 ORDER BY id'), "1|a|5\n2|b|5\n3|y|5", '... and its values applied');
check_clean('run_flow, ADD COLUMN of a NOT NULL domain');

# --- a composite of bob's with a domain inside: refused, at sync and at creation --
as('bob', q{ALTER TABLE bob.t ADD COLUMN p bob.pair; INSERT INTO bob.t (id, p) VALUES (4, ROW(1, 1))});
my $err = alice_err(q{SELECT * FROM autocdc.run_flow('c1')});
like($err, qr/column "p" of source "t" has type bob\.pair, which carries a domain of role bob/,
	'schema sync refuses a column of a composite of bob\'s with a domain inside');
like($err, qr/HINT:  Leave the column out of the flow with except_column_list/, '... with a hint');
is(sql(q{SELECT count(*) FROM pg_attribute WHERE attrelid = 'alice.c1'::regclass AND attname = 'p'}), '0',
	'the target did not get the column');
as('bob', q{ALTER TABLE bob.t DROP COLUMN p; DELETE FROM bob.t WHERE id = 4; TRUNCATE bob.seen});
as('alice', q{SELECT * FROM autocdc.run_flow('c1')});
is(sql('SELECT count(*) FROM alice.c1'), '3', 'the column dropped, the flow goes on');

$err = alice_err(q{SELECT autocdc.create_flow('alice.wp', 'changes(bob.withpair)', '{id}')});
like($err, qr/ERROR:  column "p" of source "bob\.withpair" has type bob\.pair, which carries a domain of role bob/,
	'create_flow refuses a column of a composite of bob\'s with a domain inside');
like($err, qr/HINT:  Leave the column out of the flow with except_column_list/, '... with a hint');
is(sql(q{SELECT to_regclass('alice.wp') IS NULL}), 't', '... and creates no target');
as('bob', q{INSERT INTO bob.withpair VALUES (1, ROW(1, 1))});
as('alice', q{SELECT autocdc.create_flow('alice.wp', 'changes(bob.withpair)', '{id}',
	except_column_list => '{p}', continuous => false);
	SELECT * FROM autocdc.run_flow('wp')});
is(sql('SELECT * FROM alice.wp'), '1', 'left out, the column does not stop the flow');

# alice's own composite over her own domain is kept; hers over bob's domain is not
as('bob', q{ALTER TABLE bob.feed ADD COLUMN ap alice.apair;
	INSERT INTO bob.feed (id, v, seq, ap) VALUES (4, 'd', 4, ROW(1, 2))});
as('alice', q{SELECT * FROM autocdc.run_flow('f1')});
is((types_of('alice.f1', 'ap'))[0], 'ap:alice.apair', "alice's own composite is kept");
is(sql('SELECT ap FROM alice.f1 WHERE id = 4'), '(1,2)', '... and applied');
as('bob', q{CREATE TABLE bob.withmixed (id int PRIMARY KEY, m alice.mixed);
	GRANT SELECT ON bob.withmixed TO alice});
$err = alice_err(q{SELECT autocdc.create_flow('alice.wm', 'changes(bob.withmixed)', '{id}')});
like($err, qr/column "m" of source "bob\.withmixed" has type alice\.mixed, which carries a domain of role bob/,
	"alice's composite with bob's domain inside is refused too");

# --- a domain of bob's in an existing target --------------------------------------
as('alice', q{CREATE TABLE alice.adopted (id int, v text, seq int, e bob.evil)});
$err = alice_err(q{SELECT autocdc.create_flow('alice.adopted', 'bob.wfeed', '{id}', 'seq')});
like($err, qr/column "e" of target "alice\.adopted" has type bob\.evil, which carries a domain of role bob/,
	'an existing target with a column of bob\'s domain is refused');
like($err, qr/HINT:  Change the column to its base type: ALTER TABLE alice\.adopted ALTER COLUMN e TYPE integer\./,
	'... with the statement that flattens it');
check_clean('run_flow and create_flow');

# --- a snapshot flow over a table of bob's, keyed by a domain ----------------------
as('bob', q{
	CREATE TABLE bob.snap (k bob.chkd PRIMARY KEY, e bob.evil, a bob.chkd[]);
	GRANT SELECT ON bob.snap TO alice;
	INSERT INTO bob.snap (k, a) VALUES (1, '{1}'), (2, NULL);
	TRUNCATE bob.seen;
});
as('alice', q{
	SELECT autocdc.create_snapshot_flow('alice.s1', 'bob.snap', '{k}', stored_as_scd_type => '2',
										continuous => false);
	SELECT * FROM autocdc.run_flow('s1');
});
as('bob', q{UPDATE bob.snap SET a = '{5}' WHERE k = 2; DELETE FROM bob.snap WHERE k = 1;
	INSERT INTO bob.snap (k) VALUES (3); TRUNCATE bob.seen});
as('alice', q{SELECT * FROM autocdc.run_flow('s1')});
is(sql('SELECT k, e, a, __end_at IS NULL FROM alice.s1 ORDER BY k, __start_at'),
	"1|42|{1}|f\n2|42||f\n2|42|{5}|t\n3|42||t", 'the snapshot flow compared and applied');
my ($stt, $sst) = types_of('alice.s1', 'a', 'e', 'k');
is($stt, 'a:integer[],e:integer,k:integer', 'the snapshot target has the base types');
is($sst, $stt, '... and so has its hidden state');
check_clean('a snapshot flow');

# a version function whose version has bob's domain type (read from bob's table)
as('alice', q{
	CREATE TABLE alice.snapdata (k int PRIMARY KEY, v text);
	INSERT INTO alice.snapdata VALUES (1, 'a');
	CREATE FUNCTION alice.snaps(last bob.chkd) RETURNS TABLE (snapshot regclass, version bob.chkd)
		LANGUAGE sql AS $$ SELECT 'alice.snapdata'::regclass, seq FROM bob.feed
			WHERE last IS NULL OR seq > last ORDER BY seq DESC LIMIT 1 $$;
	SELECT autocdc.create_snapshot_flow('alice.s2', source_function => 'alice.snaps(bob.chkd)', keys => '{k}',
										stored_as_scd_type => '2', continuous => false);
	SELECT * FROM autocdc.run_flow('s2');
});
is(sql('SELECT k, v, __start_at FROM alice.s2'), '1|a|4', 'a version of a domain type is applied');
is((types_of('alice.s2', '__start_at', '__end_at'))[0], '__end_at:integer,__start_at:integer',
	'... and stored as its base type');
check_clean('a snapshot flow with a version of bob\'s domain');

# --- a target made with bob's domain before domains were flattened (0.2) -----------
sql(q{
	ALTER TABLE alice.c1 ALTER COLUMN e TYPE bob.evil;
	ALTER TABLE autocdc_state.target_} . sql(q{SELECT id FROM autocdc.target WHERE relid = 'alice.c1'::regclass})
	. q{ ALTER COLUMN e TYPE bob.evil;
	ALTER TABLE alice.c1 ALTER COLUMN c TYPE bob.chkd;
	REVOKE SELECT ON alice.private FROM bob;	-- the CHECK just ran as this superuser
});
as('bob', q{TRUNCATE bob.seen; UPDATE bob.t SET v = 'x' WHERE id = 1});
as('alice', q{SELECT * FROM autocdc.run_flow('c1')});
is((types_of('alice.c1', 'c', 'e'))[0], 'c:integer,e:integer', 'the next run flattens such columns');
is(sql('SELECT id, v, e, c FROM alice.c1 ORDER BY id'), "1|x|42|9\n2|b|42|\n3|y|42|7",
	'... keeping their values');
check_clean('a target with domains of bob\'s');

# --- the worker: alice only creates the flows -----------------------------------
as('alice', q{
	SELECT autocdc.create_flow('alice.c2', 'changes(bob.wt)', '{id}');
	SELECT autocdc.create_flow('alice.f2', 'bob.wfeed', '{id}', 'seq', stored_as_scd_type => '2');
});
as('bob', q{INSERT INTO bob.wt VALUES (1, 'a'); INSERT INTO bob.wfeed VALUES (1, 'a', 1)});
ok($node->poll_query_until('postgres', q{SELECT (SELECT count(*) FROM alice.c2) + (SELECT count(*) FROM alice.f2) = 2}),
	'the worker applies both flows');
as('bob', q{
	ALTER TABLE bob.wt ADD COLUMN e bob.evil, ADD COLUMN c bob.chkd, ADD COLUMN a bob.chkd[];
	ALTER TABLE bob.wfeed ADD COLUMN e bob.evil, ADD COLUMN c bob.chkd, ADD COLUMN a bob.chkd[];
	TRUNCATE bob.seen;
	INSERT INTO bob.wt (id, v, c, a) VALUES (2, 'b', 7, '{3}');
	INSERT INTO bob.wfeed (id, v, seq, c, a) VALUES (2, 'b', 2, 7, '{3}'), (1, 'z', 3, 9, '{4}');
});
ok($node->poll_query_until('postgres', q{SELECT state = 'needs_resync' FROM autocdc.flows WHERE name = 'c2'}),
	'the worker: the rewrite of bob.wt puts its changes() flow in needs_resync');
as('alice', q{SELECT * FROM autocdc.full_refresh('c2')});
ok($node->poll_query_until('postgres', q{
	SELECT (SELECT count(*) FROM alice.c2 WHERE e = 42) + (SELECT count(*) FROM alice.f2 WHERE e = 42) = 4}),
	'the worker added the columns and applied the rows');
check_clean('the worker, ADD COLUMN of domains with DEFAULT and CHECK');
for my $t ('alice.c2', 'alice.f2')
{
	my ($tt, $st) = types_of($t, 'a', 'c', 'e');
	is($tt, 'a:integer[],c:integer,e:integer', "$t: the worker gave the target the base types");
	is($st, $tt, "$t: and the hidden state");
}
is(sql('SELECT id, v, e, c, a, __end_at IS NULL FROM alice.f2 ORDER BY id, __start_at'),
	"1|a||||f\n1|z|42|9|{4}|t\n2|b|42|7|{3}|t", 'the SCD 2 target has the rows');
as('bob', q{ALTER TABLE bob.wt ADD COLUMN p bob.pair; INSERT INTO bob.wt (id, p) VALUES (3, ROW(1, 1))});
ok($node->poll_query_until('postgres', q{
	SELECT state = 'error' AND last_error LIKE '%column "p" of source "wt" has type bob.pair, which carries a domain of role bob%'
	  FROM autocdc.flows WHERE name = 'c2'}),
	'the worker shows the composite of bob\'s as an error of the flow');
check_clean('the worker');

$node->stop;
done_testing();
