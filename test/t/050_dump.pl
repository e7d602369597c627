
# Flows survive pg_dump and restore (semantics §3): the catalog is kept by the
# extension's config tables (names, not OIDs), the capture publication is an
# extension member (not dumped), the targets and hidden state are ordinary
# tables, or a partitioned target with its partitions.  In the restored database the slot the progress belonged to does
# not exist, so flows show needs_resync until full_refresh, which finds
# nothing to change.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $node = autocdc_node('dump');

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', q{
	CREATE EXTENSION autocdc;
	CREATE SCHEMA app;
	CREATE TABLE app.feed (id int, v text, op text, seq int, batch int);
	SELECT autocdc.create_flow('app.cur', 'app.feed', '{id}', 'seq',
		apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq,batch}',
		continuous => false);
	SELECT autocdc.create_flow('app.hist', 'app.feed', '{id}', 'ROW(batch, seq)',
		apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq,batch}',
		stored_as_scd_type => '2', continuous => false);
	CREATE TABLE app.part (id int PRIMARY KEY, v text) PARTITION BY HASH (id);
	CREATE TABLE app.part_0 PARTITION OF app.part FOR VALUES WITH (MODULUS 2, REMAINDER 0);
	CREATE TABLE app.part_1 PARTITION OF app.part FOR VALUES WITH (MODULUS 2, REMAINDER 1);
	SELECT autocdc.create_flow('app.part', 'app.feed', '{id}', 'seq',
		apply_as_deletes => $$op = 'D'$$, except_column_list => '{op,seq,batch}',
		continuous => false);
});
$node->safe_psql('src', "SELECT * FROM autocdc.run_flow('cur')");
$node->safe_psql('src', "SELECT * FROM autocdc.run_flow('hist')");
$node->safe_psql('src', q{
	INSERT INTO app.feed VALUES (1, 'a', 'U', 1, 1), (2, 'b', 'U', 1, 1), (2, NULL, 'D', 2, 1),
		(1, 'a2', 'U', 3, 1);
});
$node->safe_psql('src', "SELECT * FROM autocdc.run_flow('cur')");
$node->safe_psql('src', "SELECT * FROM autocdc.run_flow('hist')");
$node->safe_psql('src', "SELECT * FROM autocdc.run_flow('part')");
$node->safe_psql('src', q{SELECT autocdc.set_expectation('app.cur', 'not_x', $$v <> 'x'$$, 'drop')});
$node->safe_psql('src', "SELECT * FROM autocdc.run_flow('cur')");
my $expectations = $node->safe_psql('src', 'SELECT * FROM autocdc.expectations');
my $cur = $node->safe_psql('src', 'SELECT * FROM app.cur ORDER BY id');
my $hist = $node->safe_psql('src', 'SELECT * FROM app.hist ORDER BY id, __start_at');
my $part = $node->safe_psql('src', 'SELECT tableoid::regclass, * FROM app.part ORDER BY id');

my $dump = $node->basedir . '/src.sql';
$node->command_ok(
	[ 'pg_dump', '-d', $node->connstr('src'), '-f', $dump ],
	'pg_dump of a database with flows');
my $text = slurp_file($dump);
unlike($text, qr/CREATE PUBLICATION/, 'the capture publication is not dumped');
like($text, qr/COPY autocdc\.flow /, 'the flow catalog is dumped');
like($text, qr/COPY autocdc\.expectation /, 'the expectations are dumped');

$node->safe_psql('postgres', 'CREATE DATABASE dst');
my ($rc, $out, $err) = $node->psql('dst', undef, extra_params => [ '-f', $dump ],
	on_error_stop => 1);
is($rc, 0, 'the dump restores without errors') or diag($err);

is($node->safe_psql('dst', 'SELECT name, state FROM autocdc.flows ORDER BY name'),
	"cur|needs_resync\nhist|needs_resync\npart|needs_resync",
	'restored flows need a resync (their slot is not in this database)');
is($node->safe_psql('dst', 'SELECT * FROM app.cur ORDER BY id'), $cur, 'SCD 1 target restored');
is($node->safe_psql('dst', 'SELECT * FROM autocdc.expectations'), $expectations,
	'expectations restored');
is($node->safe_psql('dst', 'SELECT * FROM app.hist ORDER BY id, __start_at'), $hist,
	'SCD 2 target restored, with its composite sequence type');
is($node->safe_psql('dst', 'SELECT tableoid::regclass, * FROM app.part ORDER BY id'), $part,
	'partitioned target restored, each row in its partition');

is($node->safe_psql('dst',
		'SELECT num_upserted_rows, num_deleted_rows FROM autocdc.full_refresh(\'cur\')'),
	'0|0', 'full_refresh of the restored SCD 1 flow changes nothing');
is($node->safe_psql('dst',
		'SELECT num_upserted_rows, num_deleted_rows FROM autocdc.full_refresh(\'hist\')'),
	'0|0', 'full_refresh of the restored SCD 2 flow changes nothing');
is($node->safe_psql('dst',
		'SELECT num_upserted_rows, num_deleted_rows FROM autocdc.full_refresh(\'part\')'),
	'0|0', 'full_refresh of the restored flow into a partitioned target changes nothing');
is($node->safe_psql('dst', 'SELECT name, state FROM autocdc.flows ORDER BY name'),
	"cur|idle\nhist|idle\npart|idle", 'flows idle after the resync');

$node->safe_psql('dst', q{INSERT INTO app.feed VALUES (3, 'c', 'U', 4, 1), (1, NULL, 'D', 5, 1)});
$node->safe_psql('dst', "SELECT * FROM autocdc.run_flow('cur')");
$node->safe_psql('dst', "SELECT * FROM autocdc.run_flow('hist')");
$node->safe_psql('dst', "SELECT * FROM autocdc.run_flow('part')");
is($node->safe_psql('dst', 'SELECT tableoid::regclass, id, v FROM app.part ORDER BY id'),
	"app.part_1|3|c", 'the restored flow into a partitioned target goes on applying new events');
is($node->safe_psql('dst', 'SELECT id, v FROM app.cur ORDER BY id'), "3|c",
	'the restored flow goes on applying new events');
is($node->safe_psql('dst', 'SELECT count(*) FROM app.hist WHERE __end_at IS NULL'), '1',
	'the restored SCD 2 flow closes and opens versions');
$node->safe_psql('dst', q{INSERT INTO app.feed VALUES (4, 'x', 'U', 6, 1)});
$node->safe_psql('dst', "SELECT * FROM autocdc.run_flow('cur')");
is($node->safe_psql('dst', 'SELECT id, v FROM app.cur ORDER BY id'), "3|c",
	'the restored expectation drops its events');
is($node->safe_psql('dst', q{SELECT num_failed FROM autocdc.expectations WHERE name = 'not_x'}), '1',
	'and counts them');

$node->stop;
done_testing();
