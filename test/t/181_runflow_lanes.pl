
# Lanes without the worker (docs/operations.md "Lanes and slots"): with autocdc.enabled
# = off, flows applied by run_flow alone (e.g. from pg_cron), a flow that
# was not run while 64 MB of WAL was written is moved to the laggard slot by
# the next run_flow of another owner's flow, so that the main slot's restart
# point — where every run of the main slot decodes from — moves past it:
# a one-row run of the up-to-date flow does not read the laggard's WAL again.
# The laggard's own run_flow decodes from the laggard slot and applies all
# of its events; it then returns to the main slot and the laggard slot is
# dropped.  The one-row run times before and after are noted (not asserted:
# the assertion is on where decoding starts).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

use AutocdcTest;

my $node = autocdc_node('runflow_lanes', conf => [ 'autocdc.max_lag = 8MB', 'max_wal_size = 1GB' ]);

sub sql
{
	return $node->safe_psql('postgres', $_[0]);
}

sql(q{
	CREATE EXTENSION autocdc;
	CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN;
	GRANT CREATE ON SCHEMA public TO alice, bob;
	SET ROLE alice;
	CREATE TABLE afeed (id int, seq int, v text);
	SELECT autocdc.create_flow('atgt', 'afeed', '{id}', 'seq', continuous => false);
	RESET ROLE; SET ROLE bob;
	CREATE TABLE bfeed (id int, seq int, v text);
	SELECT autocdc.create_flow('btgt', 'bfeed', '{id}', 'seq', continuous => false);
});
sql(q{SET ROLE alice; SELECT num_events FROM autocdc.run_flow('atgt')});
sql(q{SET ROLE bob; SELECT num_events FROM autocdc.run_flow('btgt')});

my $next = 1;
# a one-row run of alice's flow (ms), and the main slot's restart point
# before it, as WAL bytes behind the end
sub one_row_run
{
	my $id = $next++;
	my $behind = sql(q{SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), s.restart_lsn)
		FROM pg_replication_slots s JOIN autocdc_internal._slots() l USING (slot_name) WHERE NOT l.laggard});
	my $ms = sql(qq{
		SET ROLE alice;
		INSERT INTO afeed VALUES ($id, 1, 'r');
		SELECT round(extract(epoch FROM clock_timestamp()) * 1000) AS t0 \\gset
		SELECT num_events >= 0 FROM autocdc.run_flow('atgt') \\g /dev/null
		SELECT round(extract(epoch FROM clock_timestamp()) * 1000) - :t0;});
	return ($ms, $behind);
}
sub median_run
{
	my @t = sort { $a <=> $b } map { (one_row_run())[0] } 1 .. 7;
	return $t[3];
}
one_row_run() for 1 .. 3;
my $baseline = median_run();

# bob's flow is not run while 64 MB of WAL is written, 1000 events of it
sql(q{SET ROLE bob; INSERT INTO bfeed SELECT g, 1, 'b' FROM generate_series(1, 1000) g});
sql(q{CREATE TABLE ballast AS SELECT g, repeat('z', 1000) AS z FROM generate_series(1, 60000) g});
my $bprogress = sql(q{SELECT progress FROM autocdc.flow_state WHERE name = 'btgt'});
cmp_ok(sql(qq{SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$bprogress')}), '>', 60 * 1024 * 1024,
	'more than 60 MB of WAL since bob\'s progress');

# alice's runs: the second moves bob's flow off the main slot (the first
# brings alice's progress past the 64 MB); the restart point then moves at
# the running-transactions records the runs log, within a few runs
my @behind;
for (1 .. 8)
{
	my ($ms, $behind) = one_row_run();
	push @behind, $behind;
	last if $behind < 8 * 1024 * 1024;
}
note 'main slot restart point behind the end before each run (bytes): ' . join(' ', @behind);
is(sql(q{SELECT string_agg(name || ':' || lane || ':' || holds_wal_back, ',' ORDER BY name) FROM autocdc.flows}),
	'atgt:main:false,btgt:laggard:true', 'bob\'s flow is on the laggard slot, and holds its WAL');
cmp_ok($behind[-1], '<', 8 * 1024 * 1024,
	'a run of alice\'s flow decodes from less than 8 MB behind the end, not from bob\'s progress');
my $after = median_run();
note "one-row runs of alice's flow: median $baseline ms before, $after ms with bob's flow 60 MB behind";

# bob's run: from the laggard slot, every event once
is(sql(q{SET ROLE bob; SELECT num_events FROM autocdc.run_flow('btgt')}), '1000',
	'bob\'s run applies his 1000 events');
is(sql(q{SELECT count(*) FROM btgt}), '1000', 'all of them');
one_row_run();
is(sql(q{SELECT string_agg(name || ':' || lane, ',' ORDER BY name) FROM autocdc.flows}),
	'atgt:main,btgt:main', 'caught up, bob\'s flow returns to the main slot');
one_row_run();
is(sql(q{SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'autocdc\_%'}), '1',
	'and the laggard slot is dropped');
is(sql(q{SELECT count(*) FROM atgt}), $next - 1, 'alice\'s flow applied every run\'s row');

$node->stop;
done_testing();
