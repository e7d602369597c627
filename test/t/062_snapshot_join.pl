
# How a snapshot is compared with its target: a table snapshot with a
# unique index on the keys and larger on disk than a query's share of
# autocdc.work_mem is compared by a merge join (a hash of it would be split
# into batches on disk); otherwise the planner may hash.  Both ways give
# the same result: after every run the target's current rows must equal
# the snapshot and its versions must count every change.  The plan is read
# from the server log (auto_explain of the run's nested statements).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $node = autocdc_node('snapshot_join');

# 3,000 rows of about 540 bytes: 200 pages (1.6 MB)
$node->safe_psql('postgres', q{
	CREATE EXTENSION autocdc;
	CREATE TABLE src (id int PRIMARY KEY, v text, pad text);
	INSERT INTO src SELECT g, 'v' || g, repeat('x', 500) FROM generate_series(1, 3000) g;
	CREATE VIEW src_view AS SELECT * FROM src;
	SELECT autocdc.create_snapshot_flow('hist', 'src', '{id}', stored_as_scd_type => '2');
	SELECT autocdc.create_snapshot_flow('hist_view', 'src_view', '{id}', stored_as_scd_type => '2');
	SELECT * FROM autocdc.run_flow('hist');
	SELECT * FROM autocdc.run_flow('hist_view');
	-- what each flow saw last, for the expected number of ended versions
	CREATE TABLE seen_hist AS SELECT * FROM src;
	CREATE TABLE seen_hist_view AS SELECT * FROM src;
});
my %ended = (hist => 0, hist_view => 0);

# change 100 rows, remove 50 and add 50, then run one flow with the given
# autocdc.work_mem; returns the plan node of the comparison's full join.
# Each row changed or removed since the flow's last run ends a version.
my $round = 0;
sub change_and_run
{
	my ($flow, $work_mem) = @_;
	$round++;
	$node->safe_psql('postgres', qq{
		UPDATE src SET v = v || ' r$round' WHERE id % 30 = $round;
		DELETE FROM src WHERE id IN (SELECT id FROM src ORDER BY id LIMIT 50);
		INSERT INTO src SELECT g, 'new', 'y' FROM generate_series(10000 * $round, 10000 * $round + 49) g;
	});
	$ended{$flow} += $node->safe_psql('postgres', qq{
		SELECT (SELECT count(*) FROM seen_$flow p JOIN src s USING (id)
				 WHERE (p.v, p.pad) IS DISTINCT FROM (s.v, s.pad))
			 + (SELECT count(*) FROM seen_$flow p WHERE NOT EXISTS (SELECT FROM src s WHERE s.id = p.id))});
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', qq{
		LOAD 'auto_explain';
		SET auto_explain.log_min_duration = 0;
		SET auto_explain.log_nested_statements = on;
		SET autocdc.work_mem = '$work_mem';
		SELECT * FROM autocdc.run_flow('$flow');
	});
	$node->safe_psql('postgres', "TRUNCATE seen_$flow; INSERT INTO seen_$flow SELECT * FROM src");
	my $log = slurp_file($node->logfile, $offset);
	my @joins = $log =~ /(Hash Full Join|Merge Full Join)/g;
	return join(',', @joins);
}

# the target's current rows equal the snapshot; with the versions it ended
sub same_as_snapshot
{
	my ($target) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT (SELECT count(*) FROM (SELECT id, v, pad FROM $target WHERE __end_at IS NULL
									  EXCEPT SELECT id, v, pad FROM src) d)
			 + (SELECT count(*) FROM (SELECT id, v, pad FROM src
									  EXCEPT SELECT id, v, pad FROM $target WHERE __end_at IS NULL) d)
			|| ' rows differ; ' || (SELECT count(*) FROM $target WHERE __end_at IS NOT NULL)
			|| ' versions ended'});
}

# 1MB: a query's share is 128 kB, below the snapshot's 1.6 MB
is(change_and_run('hist', '1MB'), 'Merge Full Join', 'a large indexed snapshot is merge-joined');
is(same_as_snapshot('hist'), "0 rows differ; $ended{hist} versions ended", 'the merge join finds every change');
# 64MB: a share of 8 MB holds the snapshot, and the planner hashes it
is(change_and_run('hist', '64MB'), 'Hash Full Join', 'a snapshot that fits may be hashed');
is(same_as_snapshot('hist'), "0 rows differ; $ended{hist} versions ended", 'the hash join finds every change');
# a view has no index to read it in key order by
is(change_and_run('hist_view', '1MB'), 'Hash Full Join', 'a view is not forced into a merge join');
is(same_as_snapshot('hist_view'), "0 rows differ; $ended{hist_view} versions ended",
	'the view flow sees the changes of all three rounds');

$node->stop;
done_testing();
