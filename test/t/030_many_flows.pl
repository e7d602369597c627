
# Many flows in one database (semantics §2 "Capture mechanics"): the number of
# flows is not limited by max_replication_slots.  100 feeds and 100 flows
# with the default max_replication_slots, one autocdc slot, correct targets,
# and drop_flow(name, true) removes everything of theirs.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $n = 100;

# an engine crash must not hide the remaining assertions; it is reported
# below; shared_buffers for performance only (the test framework sets 1MB);
# slots are left alone
my $node = autocdc_node('many', conf => ['restart_after_crash = on', 'shared_buffers = 32MB']);

sub sql
{
	my ($sql) = @_;
	my $timed_out = 0;
	my ($rc, $out, $err) = $node->psql(
		'postgres', $sql,
		on_error_stop => 1,
		timeout => 300,
		timed_out => \$timed_out);
	if ($timed_out)
	{
		diag("TIMEOUT running: " . substr($sql, 0, 300));
		return "ERROR: timeout";
	}
	if ($rc != 0)
	{
		diag("failed: " . substr($sql, 0, 300) . "\n$err");
		return "ERROR: $err";
	}
	return $out;
}

cmp_ok(sql('SHOW max_replication_slots'), '<', $n,
	'max_replication_slots is below the number of flows');

$node->safe_psql('postgres', 'CREATE EXTENSION autocdc');

sub scd2 { return $_[0] % 2 == 1; }
# every fourth flow is continuous (also applied by the worker); the target
# contents and totals do not depend on who applies
sub continuous { return $_[0] % 4 == 0 ? 'true' : 'false'; }

# 1. 100 feeds and 100 flows in one transaction
my $create = "BEGIN;\n";
for my $i (1 .. $n)
{
	$create .= "CREATE TABLE feed_$i (k int, v text, seq int, op text);\n";
	$create .=
		"SELECT autocdc.create_flow('tgt_$i', 'feed_$i', ARRAY['k'], 'seq', "
	  . "apply_as_deletes => 'op = ''D''', except_column_list => ARRAY['op'], "
	  . "stored_as_scd_type => '" . (scd2($i) ? '2' : '1') . "', "
	  . "name => 'flow_$i', continuous => " . continuous($i) . ");\n";
}
$create .= "COMMIT;\n";
my $out = sql($create);
is($out, join("\n", map { "flow_$_" } 1 .. $n), "create $n feeds and flows in one transaction");
is(sql('SELECT count(*) FROM autocdc.flows'), $n, "$n flows listed");

# 2. first rows (read by each flow's first run), then run every flow
my $ins1 = '';
for my $i (1 .. $n)
{
	$ins1 .= "INSERT INTO feed_$i VALUES (1, 'a$i', 1, 'U'), (2, 'b$i', 1, 'U'), (3, 'c$i', 1, 'U');\n";
}
sql($ins1);

# run every flow, each in its own transaction; a failing run does not stop
# the others.  Returns { flow_i => num_events } for the runs that succeeded.
sub run_all
{
	my ($what) = @_;
	my $runs = '';
	$runs .= "SELECT 'flow_$_=' || num_events FROM autocdc.run_flow('flow_$_');\n"
	  for 1 .. $n;
	my ($rc, $o, $err) = $node->psql('postgres', $runs, on_error_stop => 0, timeout => 300);
	my %res = map { split /=/, $_, 2 } grep { /^flow_\d+=/ } split /\n/, $o;
	my @failed = grep { !exists $res{"flow_$_"} } 1 .. $n;
	is("@failed", '', "$what: every run succeeded");
	diag($err) if @failed;
	return \%res;
}

my $t0 = time;
my $r = run_all("first run of all $n flows");
note('first round of runs took ' . (time - $t0) . 's');

# 3. more rows, read from the WAL by the second runs
my $ins2 = '';
for my $i (1 .. $n)
{
	$ins2 .= "INSERT INTO feed_$i VALUES (1, 'a2_$i', 2, 'U'), (2, NULL, 2, 'D');\n";
	$ins2 .= "INSERT INTO feed_$i VALUES (4, 'd$i', 1, 'U');\n";
}
sql($ins2);

$t0 = time;
$r = run_all("second run of all $n flows");
note('second round of runs took ' . (time - $t0) . 's');
# non-continuous flows: the second run read exactly the 3 new events
my @bad = grep { continuous($_) eq 'false' && ($r->{"flow_$_"} // '') ne '3' } 1 .. $n;
is("@bad", '', 'second run of each non-continuous flow read 3 events');

# 4. check all targets
my @q;
for my $i (1 .. $n)
{
	if (scd2($i))
	{
		push @q,
		  "SELECT $i, coalesce(string_agg(format('%s:%s:%s:%s:%s', k, coalesce(v, '-'), seq, __start_at, coalesce(__end_at::text, '-')), ' ' ORDER BY k, __start_at), '') FROM tgt_$i";
	}
	else
	{
		push @q,
		  "SELECT $i, coalesce(string_agg(format('%s:%s:%s', k, coalesce(v, '-'), seq), ' ' ORDER BY k), '') FROM tgt_$i";
	}
}
$out = sql(join("\nUNION ALL\n", @q) . "\nORDER BY 1");
my (%got, %want);
for my $line (split /\n/, $out)
{
	my ($i, $s) = split /\|/, $line, 2;
	$got{$i} = $s;
}
for my $i (1 .. $n)
{
	$want{$i} =
	  scd2($i)
	  ? "1:a$i:1:1:2 1:a2_$i:2:2:- 2:b$i:1:1:2 3:c$i:1:1:- 4:d$i:1:1:-"
	  : "1:a2_$i:2 3:c$i:1 4:d$i:1";
}
is_deeply(\%got, \%want, "all $n targets are right");

is( sql(q{SELECT count(*) FROM autocdc.flows WHERE num_events = 6}),
	$n, 'every flow counted 6 events in total');
is( sql(q{SELECT count(*) FROM autocdc.flows f
		   WHERE f.num_events = (SELECT sum(num_events) FROM autocdc.flow_runs r
								  WHERE r.flow = f.name AND r.status = 'ok')}),
	$n, 'flow_runs add up to the totals of every flow');
is( sql(q{SELECT string_agg(name || '=' || state, ' ') FROM autocdc.flows WHERE state <> 'idle'}),
	'', 'every flow idle');

is( sql(q{SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'autocdc%'}),
	'1', 'exactly one autocdc replication slot');
is( sql(q{SELECT count(*) FROM pg_replication_slots}),
	'1', 'no other replication slots');

# another round with nothing new: nothing applied twice
$r = run_all("third run of all $n flows");
@bad = grep { ($r->{"flow_$_"} // '') ne '0' } 1 .. $n;
is("@bad", '', 'a third run applies nothing for any flow');

# 5. drop all flows with their targets
my $drop = '';
$drop .= "SELECT autocdc.drop_flow('flow_$_', true);\n" for 1 .. $n;
$out = sql($drop);
unlike($out, qr/^ERROR/, "drop_flow of all $n flows");

is(sql(q{SELECT count(*) FROM autocdc.flows}), '0', 'no flows listed');
is(sql(q{SELECT count(*) FROM autocdc.flow}), '0', 'autocdc.flow empty');
is(sql(q{SELECT count(*) FROM autocdc.flow_state}), '0', 'autocdc.flow_state empty');
is(sql(q{SELECT count(*) FROM autocdc.target}), '0', 'autocdc.target empty');
is(sql(q{SELECT count(*) FROM pg_class WHERE relname ~ '^tgt_[0-9]+$'}), '0', 'all targets dropped');
is( sql(q{SELECT count(*) FROM pg_class WHERE relnamespace = 'autocdc_state'::regnamespace}),
	'0', 'no autocdc_state relations left');
is( sql(q{SELECT count(*) FROM pg_type WHERE typnamespace = 'autocdc_state'::regnamespace}),
	'0', 'no autocdc_state types left');
is( sql(q{SELECT count(*) FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid
		   WHERE p.pubname LIKE 'autocdc%'}),
	'0', 'pg_publication_rel has nothing for autocdc publications');
is( sql(q{SELECT count(*) FROM pg_publication_namespace pn JOIN pg_publication p ON p.oid = pn.pnpubid
		   WHERE p.pubname LIKE 'autocdc%'}),
	'0', 'pg_publication_namespace has nothing for autocdc publications');
is(sql(q{SELECT count(*) FROM pg_class WHERE relname ~ '^feed_[0-9]+$'}), $n, 'feeds are kept');

# feeds no longer in use can be purged and dropped
my $dropfeeds = '';
$dropfeeds .= "DELETE FROM feed_$_; DROP TABLE feed_$_;\n" for 1 .. $n;
is(sql($dropfeeds), '', 'feeds can be purged and dropped after their flows are gone');

# no flow needs the slot any more; until the background worker exists (its
# own issue) it is dropped by hand, with the command docs/operations.md gives
is( sql(q{SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'autocdc%' AND NOT active}),
	'1', 'the idle slot is left for the worker (or the documented command) to drop');
sql(q{SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
	   WHERE slot_name LIKE 'autocdc\_%' AND database = current_database()});
is(sql(q{SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'autocdc%'}),
	'0', 'the documented command drops the slot');

my @crashes = (slurp_file($node->logfile) =~ /^.*terminated by signal.*\n.*$/mg);
is(join("\n", @crashes), '', 'no server process crashed');
ok($node->stop('fast', fail_ok => 1), 'server still running at the end');
done_testing();
