
# autocdc's library loaded without shared_preload_libraries (the setting
# was removed after CREATE EXTENSION): its shared memory, guards and worker
# are missing.  Reading autocdc.flows works (nothing the worker noted is
# shown); run_flow, full_refresh and create_flow refuse with an error
# naming the setting; the session goes on (nothing crashes).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $node = autocdc_node('not_preloaded');
$node->safe_psql('postgres', q{
	CREATE EXTENSION autocdc;
	CREATE TABLE feed (id int, seq int, v text);
	SELECT autocdc.create_flow('tgt', 'feed', '{id}', 'seq', continuous => false);
	INSERT INTO feed VALUES (1, 1, 'x');
	SELECT num_events FROM autocdc.run_flow('tgt');
});
$node->stop;
$node->append_conf('postgresql.conf', "shared_preload_libraries = ''");
$node->start;

my $s = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $s->query_safe('SELECT pg_backend_pid()');
is($s->query(q{SELECT name || ':' || state FROM autocdc.flows}), 'tgt:idle',
	'autocdc.flows can be read');
is($s->query(q{SELECT count(*) FROM autocdc_internal._slot_error()}), '0',
	'no slot error is known');
for my $call ("autocdc.run_flow('tgt')", "autocdc.full_refresh('tgt')",
	"autocdc.create_flow('tgt2', 'feed', '{id}', 'seq')")
{
	$s->query("SELECT * FROM $call");
	like($s->{stderr}, qr/autocdc must be loaded via shared_preload_libraries/,
		"$call refuses");
}
is($s->query('SELECT pg_backend_pid()'), $pid, 'the session goes on');
is($node->safe_psql('postgres', 'SELECT count(*) FROM tgt'), '1', 'the target is intact');
$s->quit;
$node->stop;
done_testing();
