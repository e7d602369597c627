
# Snapshot flows across sessions and databases: two runs of one flow never
# apply it at once (the second, having waited for the flow lock, sees the
# version the first committed: a table source's older transaction applies
# nothing, and a version function's target is created once), and flows
# survive pg_dump and restore (the version function's signature and the
# last version are text; no slot, so no needs_resync) and carry on there.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $node = autocdc_node('snapshot_lifecycle');

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', q{
	CREATE EXTENSION autocdc;
	CREATE SCHEMA app;
	CREATE TABLE app.users (id int PRIMARY KEY, city text);
	INSERT INTO app.users VALUES (1, 'Oaxaca'), (2, 'Monterrey');
	SELECT autocdc.create_snapshot_flow('app.users_hist', 'app.users', '{id}',
		stored_as_scd_type => '2');
	CREATE TABLE app.v1 (id int, city text);
	CREATE TABLE app.v2 (id int, city text);
	CREATE TABLE app.v3 (id int, city text);
	INSERT INTO app.v1 VALUES (1, 'Oaxaca'), (2, 'Monterrey');
	INSERT INTO app.v2 VALUES (2, 'Carmel'), (3, 'Tijuana');
	INSERT INTO app.v3 VALUES (2, 'Carmel'), (3, 'Los Angeles');
	CREATE TABLE app.loads (snapshot regclass, version bigint, loaded boolean);
	INSERT INTO app.loads VALUES ('app.v1', 1, true), ('app.v2', 2, false), ('app.v3', 3, false);
	CREATE FUNCTION app.next_load(last bigint) RETURNS TABLE (snapshot regclass, version bigint)
		LANGUAGE sql AS $$ SELECT l.snapshot, l.version FROM app.loads l
			WHERE l.loaded AND l.version > coalesce(last, 0) ORDER BY 2 LIMIT 1 $$;
	SELECT autocdc.create_snapshot_flow('app.loads_hist', NULL, '{id}', stored_as_scd_type => '2',
		source_function => 'app.next_load(bigint)');
});

# --- two runs of one flow --------------------------------------------------
my $s1 = $node->background_psql('src', on_error_stop => 0);
my $s2 = $node->background_psql('src', on_error_stop => 0);

# A version function's first snapshot creates the target once.
$s1->query_safe('BEGIN');
is($s1->query_safe("SELECT num_events FROM autocdc.run_flow('loads_hist')"), '2',
	'first run of the version-function flow applies v1');
start_blocked_run($node, $s2, 'src', 'loads_hist', 'second:', 'wait_event_type', 'Lock',
	'a second run waits for the first');
$s1->query_safe('COMMIT');
$s2->query('SELECT 1');
unlike($s2->{stderr}, qr/ERROR/, 'the waiting run does not fail (the target exists now)');
is($node->safe_psql('src',
		"SELECT num_events FROM autocdc.flow_runs WHERE flow = 'loads_hist' ORDER BY id DESC LIMIT 1"),
	'0', 'and applies nothing the first one applied');
is($node->safe_psql('src', 'SELECT count(*) FROM app.loads_hist'), '2', 'one version per key');

# A table source: the run of an older transaction, after waiting for a
# newer one that applied its snapshot, applies nothing.
$node->safe_psql('src', "SELECT * FROM autocdc.run_flow('users_hist')");
$node->safe_psql('src', "UPDATE app.users SET city = 'Carmel' WHERE id = 2");
$s1->query_safe('BEGIN');
$s1->query_safe('SELECT now()');    # the older transaction's version
$s2->query_safe('BEGIN');
is($s2->query_safe("SELECT num_events || ',' || num_upserted_rows FROM autocdc.run_flow('users_hist')"),
	'2,2', 'a newer transaction applies the change');
start_blocked_run($node, $s1, 'src', 'users_hist', 'older:', 'wait_event_type', 'Lock',
	'the older transaction waits for the flow');
$s2->query_safe('COMMIT');
$s1->query_safe('COMMIT');
is($node->safe_psql('src',
		"SELECT num_events FROM autocdc.flow_runs WHERE flow = 'users_hist' ORDER BY id DESC LIMIT 1"),
	'0', 'the older transaction (a version not greater than the last) applies nothing');
is($node->safe_psql('src',
		'SELECT count(*), count(*) FILTER (WHERE __end_at IS NULL), count(DISTINCT __start_at) FROM app.users_hist'),
	'3|2|2', 'the history has the two runs of the committed transactions only');
$s1->quit;
$s2->quit;

# --- pg_dump and restore ---------------------------------------------------
$node->safe_psql('src', "UPDATE app.loads SET loaded = true WHERE version = 2");
is($node->safe_psql('src', "SELECT num_events FROM autocdc.run_flow('loads_hist')"), '2',
	'v2 applied before the dump');
my $hist = $node->safe_psql('src', 'SELECT * FROM app.loads_hist ORDER BY id, __start_at');
my $users = $node->safe_psql('src', 'SELECT id, city, __end_at IS NULL FROM app.users_hist ORDER BY id, __start_at');

my $dump = $node->basedir . '/src.sql';
$node->command_ok([ 'pg_dump', '-d', $node->connstr('src'), '-f', $dump ],
	'pg_dump of a database with snapshot flows');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
my ($rc, $out, $err) = $node->psql('dst', undef, extra_params => [ '-f', $dump ],
	on_error_stop => 1);
is($rc, 0, 'the dump restores without errors') or diag($err);
is($node->safe_psql('dst',
		'SELECT name, kind, source, target, state FROM autocdc.flows ORDER BY name'),
	"loads_hist|snapshot|app.next_load(bigint)|app.loads_hist|idle\n"
	  . "users_hist|snapshot|app.users|app.users_hist|idle",
	'restored snapshot flows are idle (they have no slot to resync)');
is($node->safe_psql('dst', 'SELECT * FROM app.loads_hist ORDER BY id, __start_at'), $hist,
	'version-function target restored');
is($node->safe_psql('dst', "SELECT snapshot_version FROM autocdc.flow WHERE name = 'loads_hist'"),
	'2', 'and its last version');

# both carry on in the restored database
$node->safe_psql('dst', "UPDATE app.loads SET loaded = true WHERE version = 3");
is($node->safe_psql('dst',
		"SELECT num_events || ',' || num_upserted_rows || ',' || num_deleted_rows FROM autocdc.run_flow('loads_hist')"),
	'2,2,0', 'the restored version-function flow applies the next version');
is($node->safe_psql('dst', "SELECT city, __start_at, __end_at FROM app.loads_hist WHERE id = 3 ORDER BY __start_at"),
	"Tijuana|2|3\nLos Angeles|3|", 'from where it stopped');
is($node->safe_psql('dst',
		"SELECT num_events || ',' || num_upserted_rows || ',' || num_deleted_rows FROM autocdc.run_flow('users_hist')"),
	'2,0,0', 'the restored table-source flow finds nothing changed');
is($node->safe_psql('dst', 'SELECT id, city, __end_at IS NULL FROM app.users_hist ORDER BY id, __start_at'),
	$users, 'and keeps its history');

$node->stop;
done_testing();
