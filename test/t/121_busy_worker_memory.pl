
# A busy worker keeps the memory its passes reuse (docs/operations.md
# "Memory", src/worker.c): it gives its free pages back before a sleep at
# most once an autocdc.naptime, not before each sleep.  In a stream of
# small commits, each of which wakes it, giving them back after every pass
# (malloc_trim walking the heap, then a page fault for each page taken
# again) cut the inserting side's speed by more than half and raised the
# median latency by a third (test/bench/worker_bench.sh); 120_memory.pl checks
# that an idle worker still gives it all back.
#
# The flow is paused while pgbench commits single-row transactions a
# millisecond apart, so that every commit is a short pass of its own; the
# workers log each give-back at DEBUG2 and each sleep at DEBUG3.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);

use AutocdcTest;

my $naptime_s = 0.2;
my $ncommits = 1000;
my $node = autocdc_node('busy', worker => 1,
	conf => [ "autocdc.naptime = '${naptime_s}s'", 'log_min_messages = debug3' ]);
$node->safe_psql('postgres', q{CREATE EXTENSION autocdc;
	CREATE TABLE feed (id int, name text, seq bigint);
	INSERT INTO feed SELECT g, 'n', g FROM generate_series(1, 100) g;
	SELECT autocdc.create_flow('tgt', 'feed', '{id}', sequence_by => 'seq', name => 'f')});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 100 FROM tgt}), 'the first read applied');
$node->safe_psql('postgres', q{SELECT autocdc.pause_flow('f')});
sleep(2 * $naptime_s);

my $log_from = -s $node->logfile;
my $t0 = Time::HiRes::time();
$node->pgbench("-n -c 1 -t $ncommits", 0,
	[ qr{number of transactions actually processed: $ncommits/$ncommits} ],
	[ qr{^(?!.*(?:error|ERROR|FATAL))}s ],
	"pgbench committed $ncommits single-row transactions",
	{ 'single_row' => "INSERT INTO feed SELECT max(id) + 1, 'n', max(id) + 1 FROM feed;\n\\sleep 1 ms\n" },
	'postgres');
my $secs = Time::HiRes::time() - $t0;
my $log = slurp_file($node->logfile, $log_from);
my $given = () = $log =~ /autocdc worker: free memory given back/g;
my $nworkers = $node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autocdc worker'});

# each worker at most once a naptime (and once more at each end)
my $most = $nworkers * (int($secs / $naptime_s) + 2);
cmp_ok($given, '<=', $most,
	sprintf('the workers gave memory back %d times in %.1f s of %d commits: at most %d (%d workers)',
		$given, $secs, $ncommits, $most, $nworkers));
# the commits woke the workers far more often than that (else the bound
# would hold whatever they did)
my $sleeps = () = $log =~ /autocdc worker: sleeping for at most/g;
cmp_ok($sleeps, '>', 2 * $most, "the workers slept $sleeps times meanwhile");
diag(sprintf('%d give-backs, %d sleeps, %.1f s', $given, $sleeps, $secs));

$node->safe_psql('postgres', q{SELECT autocdc.resume_flow('f')});
ok($node->poll_query_until('postgres', qq{SELECT count(*) = 100 + $ncommits FROM tgt}),
	'the commits applied once the flow is resumed');

$node->stop;
done_testing();
