# The documentation's SQL blocks run as written: every ```sql block of
# README.md, then of docs/reference.md (which builds on the README's tables)
# and of docs/troubleshooting.md, in order, in one database of a server with
# the background worker, with psql stopping at the first error; then what the
# examples say they produce is checked.  (README's block that needs Citus
# is fenced as ```postgresql: test/t/175_citus.pl runs it.)
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my @blocks;	# [file, number in the file, SQL]
for my $file ('README.md', 'docs/reference.md', 'docs/troubleshooting.md')
{
	my $text = slurp_file(($ENV{TESTDIR} // '.') . "/$file");
	my @sql = $text =~ /^```sql\n(.*?)^```$/msg;
	ok(@sql >= 1, "$file has SQL blocks (" . scalar(@sql) . ')');
	push @blocks, map { [ $file, $_ + 1, $sql[$_] ] } 0 .. $#sql;
}
ok(@blocks >= 8, 'the documentation has its SQL blocks (' . scalar(@blocks) . ')');

my $node = autocdc_node('readme', worker => 1);
$node->safe_psql('postgres', 'CREATE DATABASE readme');
for my $block (@blocks)
{
	my ($file, $i, $sql) = @$block;
	my ($ret, $out, $err) = $node->psql('readme', $sql, on_error_stop => 1);
	is($ret, 0, "$file SQL block $i runs as written");
	unlike($err, qr/ERROR/, "$file SQL block $i raises no error") or diag($err);
}

# what the examples say
is($node->safe_psql('readme', q{SELECT string_agg(userid || ' ' || name || ' ' || city, ', ' ORDER BY userid)
								  FROM users_current}),
	'1 Ann Kyiv, 9 Zoe Oslo', 'users_current: sequence 3 wins, key 2 deleted, the backfill added');
ok($node->poll_query_until('readme', q{SELECT count(*) = 4 FROM users_history}),
	'the worker applied the continuous SCD 2 flow (Ann, Anne, Ann again, Bob until deleted)');
ok($node->poll_query_until('readme', q{
		SELECT string_agg(userid || ' ' || name, ', ' ORDER BY userid) = '1 Ann' FROM users_current_st}),
	'the statement form\'s SCD 1 flow has the same result (the backfill is the function form\'s)')
  or diag($node->safe_psql('readme', 'TABLE users_current_st'));
ok($node->poll_query_until('readme', q{SELECT count(*) = 2 FROM orders_history_st}),
	'APPLY CHANGES through autocdc.execute made a working flow');
is($node->safe_psql('readme', q{SELECT string_agg(userid || ' ' || city || ' ' || (__end_at IS NULL), ', '
									ORDER BY userid, __start_at) FROM users_scd2}),
	'1 Lima false, 1 Kyiv true, 2 Rome false', 'the version function\'s snapshots make the documented history');
is($node->safe_psql('readme', q{SELECT string_agg(id || ' ' || name || ' ' || tier, ', ' ORDER BY id)
								  FROM customers_copy}),
	'3 Ann platinum', 'changes(customers): the SCD 1 copy is the table');
is($node->safe_psql('readme', q{SELECT string_agg(id || ' ' || tier || ' ' || (__end_at IS NULL), ', '
									ORDER BY id, __start_at) FROM customers_history}),
	'1 gold false, 1 platinum false, 2 silver false, 3 platinum true',
	'changes(customers): the SCD 2 history has every committed version');
ok($node->poll_query_until('readme', q{
		SELECT string_agg(id || ' ' || tier || ' ' || (__end_at IS NULL), ', ' ORDER BY id, __start_at)
		       = '3 platinum true'
		  FROM customers_history_st}),
	'changes(customers) in the statement form: the worker read the table as it is now')
  or diag($node->safe_psql('readme', 'TABLE customers_history_st'));
is($node->safe_psql('readme', q{SELECT string_agg(concat_ws(' ', data_point, __start_at, coalesce(__end_at::text, '-'),
		__system_start_at, coalesce(__system_end_at::text, '-')), ', ' ORDER BY __start_at, __system_start_at)
		FROM quotes_bt}),
	'XFv1 10:01:00 - 10:05:00 12:20:00, XFv1 10:01:00 12:15:43 12:20:00 12:25:00, XFv1 10:01:00 12:05:00 12:25:00 -, '
	  . 'XFv3 12:05:00 12:15:43 12:25:00 -, XFv2 12:15:43 - 12:20:00 12:30:00, XFv2 12:15:43 12:30:00 12:30:00 -',
	'bitemporal: the rows docs/reference.md shows (example 8)');
is($node->safe_psql('readme', q{SELECT data_point FROM quotes_bt
		WHERE __start_at <= '12:10' AND (__end_at IS NULL OR '12:10' < __end_at)
		AND __system_start_at <= '12:22' AND (__system_end_at IS NULL OR '12:22' < __system_end_at)}),
	'XFv1', 'bitemporal: what docs/reference.md says was believed at 12:22 about 12:10');
is($node->safe_psql('readme', q{SELECT data_point FROM autocdc.as_of(NULL::quotes_bt, '12:10', '12:22')}),
	'XFv1', 'as_of: the same belief, as docs/reference.md asks it');
is($node->safe_psql('readme', q{SELECT data_point FROM autocdc.as_of(NULL::quotes_bt, '12:10')}),
	'XFv3', 'as_of: what docs/reference.md says is believed now about 12:10');
is($node->safe_psql('readme', q{SELECT string_agg(name || ' ' || num_passed || ' ' || num_failed, ', ' ORDER BY name)
								  FROM autocdc.expectations WHERE target = 'readings'::regclass}),
	'measured 2 1, plausible 2 1', 'readings: the expectations counted as the example says');
is($node->safe_psql('readme', q{SELECT string_agg(sensor::text, ',' ORDER BY sensor) FROM readings}), '1,3',
	'readings: the implausible reading was dropped, the NULL one applied');
ok($node->poll_query_until('readme', q{SELECT string_agg(sensor::text, ',' ORDER BY sensor) = '1,3' FROM readings_st}),
	'readings_st: the worker checks the statement-made expectation too (sensor 2 dropped)');
is($node->safe_psql('readme', q{SELECT string_agg(concat_ws(' ', tableoid::regclass, sku, price, __start_at,
		coalesce(__end_at::text, '-')), ', ' ORDER BY sku, __start_at) FROM prices_history}),
	'prices_history_old 1 9.99 10 50, prices_history_old 1 9.49 50 120, prices_history_new 1 10.49 120 -, '
	  . 'prices_history_old 2 5.00 20 -',
	'prices_history: the partitioned target holds the versions README shows, each in its partition');
is($node->safe_psql('readme', q{SELECT count(*) FROM autocdc.flows WHERE state = 'error'}), '0',
	'no flow of the examples is in error');

$node->stop;
done_testing();
