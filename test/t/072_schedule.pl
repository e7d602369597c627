
# When the worker runs flows (src/schedule.h): due flows run in the order of
# their names within a pass, a paused flow is not due, and a failing flow is
# retried after 1 s, 2 s, 4 s ... (retry_at = its failure's time plus 2^n
# seconds, n its failed runs before), the worker waking for the retry
# rather than sleeping its naptime; a once snapshot flow runs once.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

# a long naptime: a retry within seconds comes from retry_at
my $node = autocdc_node('schedule', worker => 1,
	conf => ["autocdc.naptime = '60s'", "autocdc.snapshot_interval = 1"]);

sub wait_for
{
	my ($sql, $what) = @_;
	ok($node->poll_query_until('postgres', $sql), $what);
}

# flows created out of name order (their ids are not in name order)
$node->safe_psql('postgres', q{
	CREATE EXTENSION autocdc;
	CREATE TABLE feed (k int, v text, seq int);
	SELECT autocdc.create_flow('so_3', 'feed', '{k}', 'seq');
	SELECT autocdc.create_flow('so_1', 'feed', '{k}', 'seq');
	SELECT autocdc.create_flow('so_4', 'feed', '{k}', 'seq');
	SELECT autocdc.create_flow('so_2', 'feed', '{k}', 'seq');
});
wait_for(q{SELECT bool_and(s.progress IS NOT NULL) FROM autocdc.flow_state s WHERE s.name LIKE 'so\_%'},
	'the worker took up every flow');

# --- due flows run in name order; a paused flow is not due -------------------
$node->safe_psql('postgres', q{SELECT autocdc.pause_flow('so_4')});
$node->safe_psql('postgres', q{INSERT INTO feed VALUES (1, 'a', 1), (2, 'b', 1)});
wait_for(q{SELECT bool_and(num_events = 2) FROM autocdc.flows WHERE name IN ('so_1', 'so_2', 'so_3')},
	'one commit is applied to every flow that is due');
is($node->safe_psql('postgres', q{
		SELECT string_agg(flow, ',' ORDER BY id) FROM autocdc.flow_runs
		 WHERE flow LIKE 'so\_%' AND status = 'ok' AND num_events > 0}),
	'so_1,so_2,so_3', 'a pass runs its due flows in the order of their names');
is($node->safe_psql('postgres', q{SELECT num_events FROM autocdc.flows WHERE name = 'so_4'}),
	'0', 'a paused flow is not due');
$node->safe_psql('postgres', q{SELECT autocdc.resume_flow('so_4')});
wait_for(q{SELECT num_events = 2 FROM autocdc.flows WHERE name = 'so_4'}, 'once resumed it is due');

# --- a failing flow backs off 1 s, 2 s, 4 s --------------------------------------
$node->safe_psql('postgres', q{
	CREATE TABLE bad_feed (k int, v text, seq int);
	SELECT autocdc.create_flow('so_bad', 'bad_feed', '{k}', 'seq');
});
wait_for(q{SELECT progress IS NOT NULL FROM autocdc.flow_state WHERE name = 'so_bad'}, 'so_bad runs');
$node->safe_psql('postgres', q{INSERT INTO bad_feed VALUES (1, 'x', NULL)});
wait_for(q{SELECT retries >= 3 FROM autocdc.flow_state WHERE name = 'so_bad'},
	'the failing flow is retried by the worker');
# each failed run's back-off, from the run log: the next failure comes
# after it (not before retry_at), and long before the naptime
my $gaps = $node->safe_psql('postgres', q{
	SELECT string_agg(CASE WHEN gap >= 2 ^ (n - 1) AND gap < 2 ^ (n - 1) + 20 THEN 'ok' ELSE gap::text END, ','
					  ORDER BY n)
	  FROM (SELECT row_number() OVER w AS n,
				   extract(epoch FROM lead(started_at) OVER w - started_at) AS gap
			  FROM autocdc.flow_runs WHERE flow = 'so_bad' AND status = 'error'
			WINDOW w AS (ORDER BY id)) r
	 WHERE n <= 2});
is($gaps, 'ok,ok', 'the second failure comes 1 s after the first, the third 2 s after the second');
# retry_at: the last failure's time plus 2^(retries - 1) s
is($node->safe_psql('postgres', q{
		SELECT retry_at - last_error_at = make_interval(secs => 2 ^ least(retries - 1, 8))
		  FROM autocdc.flow_state WHERE name = 'so_bad'}),
	't', 'retry_at is the failure plus 2^(retries - 1) seconds');

# --- a once snapshot flow runs once, then never until full_refresh ----------
$node->safe_psql('postgres', q{
	CREATE TABLE snap_src (k int, v text);
	INSERT INTO snap_src VALUES (1, 'a');
	SELECT autocdc.create_snapshot_flow('so_once', 'snap_src', '{k}', once => true);
	SELECT autocdc.create_snapshot_flow('so_every', 'snap_src', '{k}');
});
wait_for(q{SELECT count(DISTINCT flow) = 2 FROM autocdc.flow_runs
			WHERE flow IN ('so_once', 'so_every') AND status = 'ok'},
	'the worker runs both snapshot flows');
$node->safe_psql('postgres', q{UPDATE snap_src SET v = 'b'});
wait_for(q{SELECT v = 'b' FROM so_every}, 'the continuous snapshot flow applies the change');
wait_for(q{SELECT count(*) >= 4 FROM autocdc.flow_runs WHERE flow = 'so_every' AND status = 'ok'},
	'and runs every snapshot_interval');
is($node->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM autocdc.flow_runs WHERE flow = 'so_once') || ' ' ||
			   (SELECT v FROM so_once) || ' ' ||
			   (SELECT state FROM autocdc.flows WHERE name = 'so_once')}),
	'1 a idle', 'the once flow ran once, kept its snapshot and is idle');
$node->safe_psql('postgres', q{SELECT * FROM autocdc.full_refresh('so_once')});
is($node->safe_psql('postgres', q{SELECT v FROM so_once}), 'b', 'full_refresh applies it again');

$node->stop;
done_testing();
