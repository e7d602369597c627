
# 160_pgbench.pl — the worker applies continuous changes() flows while
# pgbench's tpcb-like transactions update pgbench_accounts; afterwards the
# SCD 1 copy and the current rows of the SCD 2 history equal the table, and
# every account's whole history equals a model built without autocdc.
#
# Why: 140_changes.pl checks changes() against a model on a few keys and one
# session at a time.  Here four clients commit thousands of small
# transactions concurrently while the worker decodes and applies them, the
# case a real OLTP table is in.
#
# The independent model: each tpcb-like transaction updates one account
# (abalance + delta) and inserts one pgbench_history row (aid, delta) in the
# same transaction, so the history row's xmin is that update's transaction and
# track_commit_timestamp gives its commit time.  The SCD 2 versions of an
# account, ordered by __start_at, must be: the initial version (abalance 0,
# starting at the first read, which every account shares), then one version
# per history row with delta <> 0 in commit-time order, holding the running
# sum of the deltas and starting at exactly (to the microsecond) that
# transaction's commit time; each version ends where the next one starts and
# the last is open.  A history row with delta = 0 makes no version: the update
# leaves every tracked column (bid, abalance, filler: by default all non-key
# columns) equal to the open version's, and docs/semantics.md §4 says such an
# upsert keeps the open version's start and takes its (identical) values.
#
# The commit time is compared exactly, not "up to autocdc's raising": at scale
# 1 there is one branch row, which every transaction updates, so transactions
# commit one after another (each waits for the previous commit to release the
# row lock before it takes its own commit time) and commit times strictly
# increase along commit order — _commit_timestamp is never raised.
#
# Beside the builtin tpcb-like script, a fifth of the transactions run the
# same script on accounts 1-100 with delta in {-1, 0, 1}: many versions per
# account, contention on the account rows, and updates that change nothing
# (the builtin's delta = 0 has a chance of 1 in 10,001).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

use AutocdcTest;

my $t_start = time();
my $node = autocdc_node('pgbench', worker => 1,
	conf => [ 'track_commit_timestamp = on', 'autocdc.naptime = 100ms' ]);
sub sql { return $node->safe_psql('postgres', $_[0]); }

$node->command_ok([ 'pgbench', '-i', '-s', '1', '-q', 'postgres' ], 'pgbench -i -s 1');
is(sql('SELECT count(*) FROM pgbench_accounts'), '100000', '100,000 accounts');

sql('CREATE EXTENSION autocdc');
my $before_flows = sql('SELECT clock_timestamp()');
sql(q{
	SELECT autocdc.create_flow(target => 'accounts_copy', source => 'changes(pgbench_accounts)',
		keys => '{aid}');
	SELECT autocdc.create_flow(target => 'accounts_hist', source => 'changes(pgbench_accounts)',
		keys => '{aid}', stored_as_scd_type => '2');});

# caught up: the last decoding left both flows with nothing pending and the
# source unchanged since (lag_time NULL, exact)
sub caught_up
{
	my ($what) = @_;
	ok($node->poll_query_until('postgres', q{
			SELECT count(*) = 2 FROM autocdc.flows
			 WHERE last_run_at IS NOT NULL AND lag_time IS NULL AND lag_time_exact
			   AND last_error IS NULL}),
		"both flows caught up $what");
}
caught_up('after the first read');
is(sql('SELECT count(*) FROM accounts_hist'), '100000', 'first read: one version per account');

# the run: the builtin tpcb-like script, and a fifth of the transactions on
# 100 hot accounts with small deltas
my $hot = <<'EOS';
\set aid random(1, 100)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-1, 1)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
EOS
my $t0 = time();
$node->pgbench('-c 4 -j 2 -T 15 -b tpcb-like@4', 0,
	[ qr{number of transactions actually processed: [1-9]}, qr{number of failed transactions: 0 } ],
	[ qr{^(?!.*(?:error|ERROR|FATAL))}s ],
	'pgbench: tpcb-like and hot accounts, 4 clients, 15 s',
	{ 'hot_accounts@1' => $hot }, 'postgres');
my $t1 = time();
caught_up('after pgbench');
my $t2 = time();
note sprintf('pgbench %.1f s; caught up %.1f s after it', $t1 - $t0, $t2 - $t1);
my ($ntx, $nzero) = split /\|/, sql(q{
	SELECT count(*), count(*) FILTER (WHERE delta = 0) FROM pgbench_history});
note "$ntx transactions, $nzero with delta = 0";
cmp_ok($ntx, '>', 1000, 'pgbench committed over a thousand transactions');
cmp_ok($nzero, '>', 0, 'some updates change nothing (delta = 0)');

# (1) the SCD 1 copy is the table
is(sql(q{
	SELECT count(*) FROM ((TABLE pgbench_accounts EXCEPT TABLE accounts_copy)
	                      UNION ALL (TABLE accounts_copy EXCEPT TABLE pgbench_accounts)) d}),
	'0', 'SCD 1: the copy equals pgbench_accounts (all columns)');
is(sql('SELECT count(*) FROM accounts_copy'), '100000', 'SCD 1: 100,000 rows');

# (2) the current versions are the table
is(sql(q{
	SELECT count(*) FROM ((TABLE pgbench_accounts
	                       EXCEPT SELECT aid, bid, abalance, filler FROM accounts_hist WHERE __end_at IS NULL)
	                      UNION ALL
	                      (SELECT aid, bid, abalance, filler FROM accounts_hist WHERE __end_at IS NULL
	                       EXCEPT TABLE pgbench_accounts)) d}),
	'0', 'SCD 2: the current versions equal pgbench_accounts (all columns)');
is(sql('SELECT count(*) FROM accounts_hist WHERE __end_at IS NULL'), '100000',
	'SCD 2: one current version per account');

# the model's preconditions: one commit time per transaction, no two alike
is(sql(q{
	SELECT count(DISTINCT pg_xact_commit_timestamp(xmin)) = count(DISTINCT xmin::text)
	   AND count(DISTINCT xmin::text) = count(*) AND count(pg_xact_commit_timestamp(xmin)) = count(*)
	  FROM pgbench_history}), 't',
	'model: every history row has its own transaction and a distinct commit time');

# the first read's time: the start every account's first version shares,
# after create_flow and before the first pgbench commit
my $first_read = sql('SELECT min(__start_at) FROM accounts_hist');
is(sql(qq{
	SELECT '$first_read'::timestamptz >= '$before_flows'::timestamptz
	   AND '$first_read'::timestamptz < (SELECT min(pg_xact_commit_timestamp(xmin)) FROM pgbench_history)}),
	't', "first read at $first_read: after create_flow, before pgbench's first commit");

# (3) every account's history against the model
my $compare = qq{
	CREATE TEMP VIEW want AS
	WITH ev AS (
		SELECT aid, delta, pg_xact_commit_timestamp(xmin) AS ts
		  FROM pgbench_history WHERE delta <> 0),
	v AS (
		SELECT aid, 0::bigint AS n, 0::bigint AS abalance, '$first_read'::timestamptz AS start_at
		  FROM pgbench_accounts
		UNION ALL
		SELECT aid, row_number() OVER w, sum(delta) OVER w, ts
		  FROM ev WINDOW w AS (PARTITION BY aid ORDER BY ts))
	SELECT v.aid, v.n, a.bid, v.abalance, a.filler, v.start_at,
	       lead(v.start_at) OVER (PARTITION BY v.aid ORDER BY v.n) AS end_at
	  FROM v JOIN pgbench_accounts a USING (aid);
	CREATE TEMP VIEW got AS
	SELECT aid, row_number() OVER (PARTITION BY aid ORDER BY __start_at) - 1 AS n,
	       bid, abalance::bigint, filler, __start_at AS start_at, __end_at AS end_at
	  FROM accounts_hist;
	CREATE TEMP VIEW bad AS
	SELECT DISTINCT coalesce(w.aid, g.aid) AS aid
	  FROM want w FULL JOIN got g ON g.aid = w.aid AND g.n = w.n
	 WHERE w.aid IS NULL OR g.aid IS NULL
	    OR (w.bid, w.abalance, w.filler, w.start_at, w.end_at)
	       IS DISTINCT FROM (g.bid, g.abalance, g.filler, g.start_at, g.end_at);
};
my $bad = sql($compare . 'SELECT count(*) FROM bad');
is($bad, '0', 'SCD 2: every account\'s versions are the model\'s (initial, one per delta <> 0, '
	  . 'running sums, commit times to the microsecond)');
if ($bad ne '0')
{
	# a few of them: how many versions each side has, and the first that differs
	diag sql($compare . q{
		SELECT format('aid %s: %s versions wanted, %s got; first difference at version %s: want %s, got %s',
		              b.aid, (SELECT count(*) FROM want WHERE aid = b.aid), (SELECT count(*) FROM got WHERE aid = b.aid),
		              d.n, coalesce(d.w, 'none'), coalesce(d.g, 'none'))
		  FROM (SELECT aid FROM bad ORDER BY aid LIMIT 5) b,
		  LATERAL (SELECT coalesce(w.n, g.n) AS n,
		                  CASE WHEN w.aid IS NOT NULL THEN
		                    format('(bid %s, abalance %s, %s .. %s)', w.bid, w.abalance, w.start_at,
		                           coalesce(w.end_at::text, 'open')) || CASE WHEN w.filler IS DISTINCT FROM g.filler
		                           THEN ' filler ' || coalesce(quote_literal(w.filler), 'NULL') ELSE '' END END AS w,
		                  CASE WHEN g.aid IS NOT NULL THEN
		                    format('(bid %s, abalance %s, %s .. %s)', g.bid, g.abalance, g.start_at,
		                           coalesce(g.end_at::text, 'open')) || CASE WHEN w.filler IS DISTINCT FROM g.filler
		                           THEN ' filler ' || coalesce(quote_literal(g.filler), 'NULL') ELSE '' END END AS g
		             FROM (SELECT * FROM want WHERE aid = b.aid) w
		             FULL JOIN (SELECT * FROM got WHERE aid = b.aid) g USING (n)
		            WHERE w.aid IS NULL OR g.aid IS NULL
		               OR (w.bid, w.abalance, w.filler, w.start_at, w.end_at)
		                  IS DISTINCT FROM (g.bid, g.abalance, g.filler, g.start_at, g.end_at)
		            ORDER BY 1 LIMIT 1) d});
}

# the history is not trivial: many accounts have several versions, the hot ones many
my ($multi, $most) = split /\|/, sql(q{
	SELECT count(*) FILTER (WHERE c > 1), max(c)
	  FROM (SELECT count(*) AS c FROM accounts_hist GROUP BY aid) x});
note "$multi accounts with several versions, at most $most";
cmp_ok($multi, '>=', 100, 'at least 100 accounts have several versions');
cmp_ok($most, '>=', 10, 'some account has at least 10 versions');

# exactly once: each flow read the 100,000 rows of its first read and one
# update per transaction
is(sql(q{SELECT string_agg(name || ' ' || num_events, ', ' ORDER BY name) FROM autocdc.flows}),
	sprintf('accounts_copy %d, accounts_hist %d', 100000 + $ntx, 100000 + $ntx),
	'each flow read every event once');
is(sql(q{SELECT count(*) FROM autocdc.flows WHERE last_error IS NOT NULL OR state IN ('error', 'needs_resync')}),
	'0', 'no flow in error');
is(sql(q{SELECT count(*) FROM autocdc.flow_runs WHERE status <> 'ok' OR error IS NOT NULL}),
	'0', 'no failed run');
note sprintf('total %.1f s', time() - $t_start);

done_testing();
