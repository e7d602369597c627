
# 150_subscription.pl — history off the OLTP primary: PostgreSQL's own
# logical replication fills a table on a second server, where a changes()
# flow keeps its SCD 2 history (docs/reference.md, "Across servers").
#
# A publisher (no autocdc) holds the OLTP table and logs each transaction's
# xid; a subscriber with autocdc subscribes to the table and runs a
# continuous changes() flow into an SCD 2 target.  The history must hold
# exactly one version per committed transaction that changed a key, each
# starting at the *origin's* commit time (the publisher's
# pg_xact_commit_timestamp), also across a restart of the subscriber and
# of the publisher while transactions go on.  CREATE EXTENSION warns about
# a FOR ALL TABLES publication on the subscriber.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $pub = PostgreSQL::Test::Cluster->new('publisher');
$pub->init(allows_streaming => 'logical');
$pub->append_conf('postgresql.conf', 'track_commit_timestamp = on');
$pub->start;
my $sub = autocdc_node('subscriber', worker => 1, conf => [ 'autocdc.naptime = 100ms' ]);

$pub->safe_psql('postgres', q{
	CREATE TABLE orders (id int PRIMARY KEY, status text, amount int);
	CREATE TABLE txlog (n int, x xid8);
	CREATE PUBLICATION oltp FOR TABLE orders;
	INSERT INTO orders SELECT g, 'new', g FROM generate_series(1, 5) g;});
$sub->safe_psql('postgres', q{
	CREATE TABLE orders (id int PRIMARY KEY, status text, amount int);
	CREATE PUBLICATION everything FOR ALL TABLES;});
my ($rc, $out, $err) = $sub->psql('postgres', 'CREATE EXTENSION autocdc');
is($rc, 0, 'CREATE EXTENSION on the subscriber');
like($err, qr/WARNING:  publication "everything" publishes all tables, also autocdc's hidden state/,
	'CREATE EXTENSION warns about a FOR ALL TABLES publication');
$sub->safe_psql('postgres', q{
	DROP PUBLICATION everything;
	SELECT autocdc.create_flow(target => 'orders_history', source => 'changes(orders)',
		keys => '{id}', stored_as_scd_type => '2');});
my $connstr = $pub->connstr . ' dbname=postgres';
$sub->safe_psql('postgres', "CREATE SUBSCRIPTION oltp CONNECTION '$connstr' PUBLICATION oltp");
ok($sub->poll_query_until('postgres', q{SELECT count(*) = 5 FROM orders_history}),
	'the initial copy arrives in the history');

# transactions on the publisher, each logged with its xid
my $n = 0;
my %changed;    # transaction -> number of keys it changes
sub txn
{
	my ($sql, $keys) = @_;
	$n++;
	$pub->safe_psql('postgres', "BEGIN; $sql; INSERT INTO txlog VALUES ($n, pg_current_xact_id()); COMMIT;");
	$changed{$n} = $keys;
}
txn('UPDATE orders SET status = \'paid\' WHERE id = 1', 1);
txn('UPDATE orders SET status = \'paid\', amount = amount + 1 WHERE id IN (2, 3)', 2);
txn('DELETE FROM orders WHERE id = 4', 1);
txn('INSERT INTO orders VALUES (6, \'new\', 6)', 1);

# the subscriber goes down; the publisher goes on; the subscriber comes back
$sub->stop('fast');
txn('UPDATE orders SET status = \'shipped\' WHERE id = 1', 1);
txn('UPDATE orders SET id = 7 WHERE id = 6', 2);
$sub->start;
txn('UPDATE orders SET amount = 0 WHERE id = 5', 1);

# the publisher restarts
$pub->restart;
txn('UPDATE orders SET status = \'shipped\' WHERE id IN (2, 3)', 2);
txn('INSERT INTO orders VALUES (8, \'new\', 8)', 1);

# versions: 5 copied, plus one per key and transaction that opened one
# (the delete of 4 opens none; the key change 6 -> 7 opens one for 7)
my $opened = 5 + 1 + 2 + 0 + 1 + 1 + 1 + 1 + 2 + 1;
ok($sub->poll_query_until('postgres', qq{SELECT count(*) = $opened FROM orders_history}),
	"the history has exactly one version per key and transaction ($opened)")
  or diag($sub->safe_psql('postgres', 'SELECT * FROM orders_history ORDER BY id, __start_at'));
ok($sub->poll_query_until('postgres', q{
		SELECT NOT EXISTS (SELECT id, status, amount FROM orders_history WHERE __end_at IS NULL
		                   EXCEPT SELECT * FROM orders)
		   AND NOT EXISTS (SELECT * FROM orders EXCEPT SELECT id, status, amount FROM orders_history
		                   WHERE __end_at IS NULL)}),
	'the open versions are the subscribed table');

# every version a replicated transaction opened starts at the origin's commit time
my %origin = map { split /\|/ } split /\n/, $pub->safe_psql('postgres',
	q{SELECT (extract(epoch FROM pg_xact_commit_timestamp(x::text::xid)) * 1000000)::bigint, n FROM txlog});
my @starts = split /\n/, $sub->safe_psql('postgres', q{
	SELECT DISTINCT (extract(epoch FROM __start_at) * 1000000)::bigint FROM orders_history
	 ORDER BY 1 OFFSET 1});    # (the initial copy's is the subscriber's)
is(scalar(@starts), $n - 1, 'one distinct start per replicated transaction that opened a version');
is(scalar(grep { exists $origin{$_} } @starts), $n - 1,
	'each is the commit time of that transaction on the publisher');
is($origin{ $sub->safe_psql('postgres', q{
		SELECT (extract(epoch FROM __end_at) * 1000000)::bigint FROM orders_history WHERE id = 4}) } // 'none',
	3, 'the deleted key\'s version ends at the commit time of the delete on the publisher');
sleep(1);
is($sub->safe_psql('postgres', 'SELECT count(*) FROM orders_history'), $opened,
	'and no version arrives twice');
is($sub->safe_psql('postgres', q{SELECT count(*) FROM autocdc.flows WHERE state = 'error'}), '0',
	'the flow is not in error');

$sub->stop;
$pub->stop;
done_testing();
