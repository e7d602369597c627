
# Memory bounds (docs/operations.md "Memory"): a run's peak private memory stays within
# autocdc.work_mem + autocdc.decoding_work_mem + 64 MB whatever the size of
# the transactions it applies, in run_flow and in the workers, for SCD 1 and
# SCD 2, first reads included, and for changes() sources (a table's first
# read, one UPDATE of every row, one DELETE of every row); and an idle worker
# has given back the memory of its passes.
#
# A sampler process reads RssAnon from /proc/<pid>/status every 10 ms (VmHWM
# would count the shared buffers the process touched) of the backend that
# calls run_flow, or of every autocdc worker of the node.  Each flow first
# reads a feed that already holds the largest transaction's rows, then
# applies single transactions of growing size (new keys: every event is a
# new version and a new hidden-state row).
#
# The suite runs with both settings at 16 MB and transactions of 125k, 250k
# and 500k rows (the bound is then 96 MB; before the budget of settings.c a
# 500k-row transaction took over 300 MB).  AUTOCDC_MEMORY_FULL=1 runs the
# figures docs/operations.md gives: 64 MB settings and 1M, 2M and 4M rows (about twenty
# minutes).

use strict;
use warnings;

use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);

use AutocdcTest;

my $full = $ENV{AUTOCDC_MEMORY_FULL};
my $mem_mb = $full ? 64 : 16;
my @sizes = $full ? (1_000_000, 2_000_000, 4_000_000) : (125_000, 250_000, 500_000);
my $bound_kb = ($mem_mb + $mem_mb + 64) * 1024;
# an idle worker's RssAnon: its caches, not its last pass's memory
my $idle_bound_mb = 12;

my $node = autocdc_node('memory', worker => 1,
	conf => [ "autocdc.work_mem = ${mem_mb}MB", "autocdc.decoding_work_mem = ${mem_mb}MB",
		'autocdc.naptime = 200ms', 'max_wal_size = 4GB', 'checkpoint_timeout = 30min' ]);

sub sql
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql, on_error_stop => 1, timeout => 1800);
	return $rc == 0 ? $out : "ERROR: $err";
}

# The RssAnon (kB) of a process, or undef once it is gone.
sub rss_anon
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/status") or return undef;
	while (<$fh>)
	{
		return $1 if /^RssAnon:\s+(\d+)/;
	}
	return undef;
}

# The pids of the node's autocdc workers (main and laggard).
sub worker_pids
{
	my @pids;
	opendir(my $d, '/proc') or return ();
	for my $p (grep { /^\d+$/ } readdir($d))
	{
		open(my $fh, '<', "/proc/$p/cmdline") or next;
		my $cmd = <$fh> // '';
		push @pids, $p if $cmd =~ /autocdc (laggard )?worker for database/;
	}
	return @pids;
}

# Fork a sampler of the peak RssAnon of $pid (or, with 'workers', of every
# autocdc worker, looked up every 100 ms); stop_sampler returns the peak.
my $sampler_n = 0;
my @samplers;
sub start_sampler
{
	my ($what) = @_;
	my $file = $PostgreSQL::Test::Utils::tmp_check . '/peak.' . ++$sampler_n;
	my $child = fork();
	die "fork: $!" unless defined $child;
	if ($child == 0)
	{
		my ($peak, $n, @pids) = (0, 0);
		while (!-e "$file.stop")
		{
			@pids = $what eq 'workers' ? worker_pids() : ($what) if $n++ % 10 == 0;
			for my $p (@pids)
			{
				my $r = rss_anon($p);
				$peak = $r if defined $r && $r > $peak;
			}
			sleep(0.01);
		}
		open(my $out, '>', $file) or POSIX::_exit(1);
		print $out $peak;
		close($out);
		POSIX::_exit(0);		# not Test::More's or the nodes' END blocks
	}
	push @samplers, $child;
	return { pid => $child, file => $file };
}

END { kill('KILL', $_) for @samplers }

sub stop_sampler
{
	my ($s) = @_;
	open(my $fh, '>', "$s->{file}.stop") or die;
	close($fh);
	waitpid($s->{pid}, 0);
	@samplers = grep { $_ != $s->{pid} } @samplers;
	return slurp_file($s->{file});
}

sql(q{CREATE EXTENSION autocdc});

# rows $from + 1 .. $from + $n, a few columns wide like a customer feed
sub insert_rows
{
	my ($feed, $from, $n) = @_;
	sql(qq{INSERT INTO $feed (id, name, city, seq)
		   SELECT g, md5(g::text), 'city ' || g % 1000, g
			 FROM generate_series($from + 1, $from + $n) g});
}

###########################################################################
# run_flow: the calling backend
###########################################################################

my $session = $node->background_psql('postgres', timeout => 1800);
$session->set_query_timer_restart;
my $backend = $session->query_safe('SELECT pg_backend_pid()');
chomp $backend;

for my $scd (1, 2)
{
	my $feed = "rf_feed$scd";
	sql(qq{CREATE TABLE $feed (id int, name text, city text, seq bigint)});
	insert_rows($feed, 0, $sizes[-1]);
	sql(qq{SELECT autocdc.create_flow('rf_tgt$scd', '$feed', '{id}', sequence_by => 'seq',
			stored_as_scd_type => '$scd', continuous => false, name => 'rf$scd')});
	my $from = $sizes[-1];
	for my $n ('first', @sizes)
	{
		insert_rows($feed, $from, $n) if $n ne 'first';
		my $s = start_sampler($backend);
		my $events = $session->query_safe("SELECT num_events FROM autocdc.run_flow('rf$scd')");
		my $peak = stop_sampler($s);
		my $rows = $n eq 'first' ? $sizes[-1] : $n;
		my $what = $n eq 'first' ? "first read of $sizes[-1] rows" : "$n-row transaction";
		is($events, $rows, "run_flow, SCD $scd, $what: every event applied");
		cmp_ok($peak, '<=', $bound_kb, "run_flow, SCD $scd, $what: peak RssAnon $peak kB within $bound_kb kB");
		diag("run_flow SCD $scd $what: peak RssAnon $peak kB");
		$from += $n if $n ne 'first';
	}
	is(sql(qq{SELECT count(*) FROM rf_tgt$scd}), $from, "run_flow, SCD $scd: the target holds every key");
}

# changes(): the first read of a table, then one transaction that updates
# every row, then one that deletes them all
for my $scd (1, 2)
{
	my $t = "ch_tab$scd";
	my $n = $sizes[1];    # (larger than both settings together)
	sql(qq{CREATE TABLE $t (id int PRIMARY KEY, name text, city text, seq bigint)});
	insert_rows($t, 0, $n);
	sql(qq{SELECT autocdc.create_flow('ch_tgt$scd', 'changes($t)', '{id}',
			stored_as_scd_type => '$scd', continuous => false, name => 'ch$scd')});
	for my $step ('first read', 'update', 'delete')
	{
		sql(qq{UPDATE $t SET city = city || ' x'}) if $step eq 'update';
		sql(qq{DELETE FROM $t}) if $step eq 'delete';
		my $s = start_sampler($backend);
		my $events = $session->query_safe("SELECT num_events FROM autocdc.run_flow('ch$scd')");
		my $peak = stop_sampler($s);
		is($events, $n, "run_flow, changes(), SCD $scd, $step of $n rows: every event applied");
		cmp_ok($peak, '<=', $bound_kb,
			"run_flow, changes(), SCD $scd, $step of $n rows: peak RssAnon $peak kB within $bound_kb kB");
		diag("run_flow changes() SCD $scd $step of $n rows: peak RssAnon $peak kB");
	}
	is(sql(qq{SELECT count(*) FILTER (WHERE true) FROM ch_tgt$scd}), $scd == 1 ? 0 : 2 * $n,
		"run_flow, changes(), SCD $scd: the target as the table's history says");
	sql(qq{SELECT autocdc.drop_flow('ch$scd', drop_target => true)});
}

$session->quit;
# (left behind by the workers' flows, they would pin the laggard slot's WAL)
sql(q{SELECT autocdc.drop_flow('rf1'); SELECT autocdc.drop_flow('rf2')});

###########################################################################
# the workers (main and laggard) applying continuous flows
###########################################################################

for my $scd (1, 2)
{
	my $feed = "w_feed$scd";
	sql(qq{CREATE TABLE $feed (id int, name text, city text, seq bigint)});
	insert_rows($feed, 0, $sizes[-1]);
	my $s = start_sampler('workers');
	sql(qq{SELECT autocdc.create_flow('w_tgt$scd', '$feed', '{id}', sequence_by => 'seq',
			stored_as_scd_type => '$scd', name => 'w$scd')});
	my $from = $sizes[-1];
	ok($node->poll_query_until('postgres', qq{SELECT count(*) = $from FROM w_tgt$scd}),
		"worker, SCD $scd: first read of $from rows applied");
	my $peak = stop_sampler($s);
	cmp_ok($peak, '<=', $bound_kb, "worker, SCD $scd, first read: peak RssAnon $peak kB within $bound_kb kB");
	diag("worker SCD $scd first read: peak RssAnon $peak kB");
	for my $n (@sizes)
	{
		$s = start_sampler('workers');
		insert_rows($feed, $from, $n);
		$from += $n;
		ok($node->poll_query_until('postgres', qq{SELECT count(*) = $from FROM w_tgt$scd}),
			"worker, SCD $scd: $n-row transaction applied");
		$peak = stop_sampler($s);
		cmp_ok($peak, '<=', $bound_kb, "worker, SCD $scd, $n-row transaction: peak RssAnon $peak kB within $bound_kb kB");
		diag("worker SCD $scd $n-row transaction: peak RssAnon $peak kB");
	}
	is(sql(qq{SELECT coalesce(last_error, 'none') FROM autocdc.flows WHERE name = 'w$scd'}), 'none',
		"worker, SCD $scd: without an error");

	# an idle worker gives back what its passes freed (util.c,
	# memory_release_freed): its RssAnon falls well below the peak
	my $idle_kb = $idle_bound_mb * 1024;
	my $idle;
	for (1 .. 100)
	{
		$idle = 0;
		for my $p (worker_pids())
		{
			my $r = rss_anon($p) // 0;
			$idle = $r if $r > $idle;
		}
		last if $idle <= $idle_kb;
		sleep(0.1);
	}
	cmp_ok($idle, '<=', $idle_kb, "worker, SCD $scd: idle, RssAnon $idle kB within $idle_kb kB");
	diag("worker SCD $scd idle: RssAnon $idle kB");
	sql(qq{SELECT autocdc.drop_flow('w$scd')});
}

$node->stop;
done_testing();
