# Helpers shared by autocdc's TAP tests (test/t/*.pl; `make installcheck`
# puts this directory on prove's include path).

package AutocdcTest;

use strict;
use warnings;

use Exporter 'import';
use File::Path qw(make_path remove_tree);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(autocdc_node citus_built citus_nodes property_node start_blocked_run wait_for_restart pg_config
  old_autocdc_installation install_current_autocdc autocdc_objects_sql
  stop_autocdc_worker new_library_before_update upgrade_snapshot_flows upgrade_snapshot_step
  same_objects_as_fresh);

# A node with autocdc preloaded and wal_level = logical, started unless
# no_start => 1.  The background worker is off unless worker => 1; conf =>
# [lines] adds postgresql.conf lines; install_path => dir runs the
# PostgreSQL installation in dir (its bin/, lib/ and share) instead of the
# one on PATH.
sub autocdc_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name,
		$opt{install_path} ? (install_path => $opt{install_path}) : ());
	$node->init(allows_streaming => 'logical');
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'autocdc'");
	$node->append_conf('postgresql.conf', 'autocdc.enabled = off') unless $opt{worker};
	$node->append_conf('postgresql.conf', $_) for @{ $opt{conf} // [] };
	$node->start unless $opt{no_start};
	return $node;
}

# Is Citus installed beside PostgreSQL (test/citus.sh builds such an installation)?
sub citus_built
{
	my $pkglibdir = `pg_config --pkglibdir`;
	chomp $pkglibdir;
	return -f "$pkglibdir/citus.so";
}

# A Citus cluster on localhost: a coordinator and two workers, each with
# Citus and autocdc preloaded (conf => [lines] adds postgresql.conf lines),
# the workers added to the coordinator, and autocdc created on all of them
# (Citus propagates CREATE EXTENSION).  Returns ($coordinator, @workers).
sub citus_nodes
{
	my (%opt) = @_;
	# Citus must be loaded first; its nodes talk over TCP on localhost
	my @conf = (
		"shared_preload_libraries = 'citus,autocdc'", "listen_addresses = '127.0.0.1'",
		'max_connections = 100', 'max_prepared_transactions = 20',
		"citus.node_conninfo = 'sslmode=disable'", 'citus.enable_statistics_collection = off',
		@{ $opt{conf} // [] });
	my $coord = autocdc_node('coordinator', conf => \@conf);
	my @workers = map { autocdc_node("worker$_", conf => \@conf) } 1 .. 2;
	$_->safe_psql('postgres', 'CREATE EXTENSION citus') for ($coord, @workers);
	$coord->safe_psql('postgres',
		"SELECT citus_set_coordinator_host('127.0.0.1', " . $coord->port . ')');
	$coord->safe_psql('postgres', "SELECT citus_add_node('127.0.0.1', " . $_->port . ')')
	  for @workers;
	$coord->safe_psql('postgres', 'CREATE EXTENSION autocdc');
	return ($coord, @workers);
}

# The node of a property test, with autocdc created: with
# AUTOCDC_PROPERTY_CITUS=1 (on an installation with Citus) the coordinator
# of citus_nodes, whose workers live as long as the test; else a node of
# its own.
sub property_node
{
	my ($name) = @_;
	if ($ENV{AUTOCDC_PROPERTY_CITUS})
	{
		BAIL_OUT('AUTOCDC_PROPERTY_CITUS=1, but Citus is not installed') unless citus_built();
		my ($coord) = citus_nodes(conf => ["autocdc.naptime = '100ms'"]);
		return $coord;
	}
	my $node = autocdc_node($name);
	$node->safe_psql('postgres', 'CREATE EXTENSION autocdc');
	return $node;
}

# Start "SELECT <label> || num_events FROM autocdc.run_flow('<flow>')" in a
# background session, and pass once pg_stat_activity shows it waiting
# ($wait_col = $wait_value).
sub start_blocked_run
{
	my ($node, $session, $db, $flow, $label, $wait_col, $wait_value, $test_name) = @_;
	$session->query_until(qr/started/, qq{
		\\echo started
		SELECT '$label' || num_events FROM autocdc.run_flow('$flow');
	});
	ok( $node->poll_query_until($db, qq{
			SELECT count(*) > 0 FROM pg_stat_activity
			 WHERE $wait_col = '$wait_value' AND query LIKE '%run_flow(''$flow'')%'}),
		$test_name);
}

# Wait (up to 3 minutes) until the node answers again after a crash
# restart.  poll_query_until cannot be used for this: it writes its query
# to psql's standard input, and a psql that gives up at once while the
# server is still in recovery closes that pipe first, which kills the test
# with EPIPE.
sub wait_for_restart
{
	my ($node) = @_;
	for (1 .. 1800)
	{
		my $up = eval { $node->safe_psql('postgres', 'SELECT 1') eq '1' };
		return 1 if $up;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

# pg_config --<opt> of the PostgreSQL on PATH.
sub pg_config
{
	my ($opt) = @_;
	my $v = `pg_config --$opt`;
	chomp $v;
	die "pg_config --$opt failed" if $? != 0 || $v eq '';
	return $v;
}

# Run a shell command, its output appended to $log; bail out with the log
# when it fails.
sub run_or_bail
{
	my ($cmd, $log) = @_;
	if (system("$cmd >>'$log' 2>&1") != 0)
	{
		diag(slurp_file($log));
		BAIL_OUT("failed: $cmd");
	}
}

# For the upgrade tests: a private copy of the PostgreSQL installation on
# PATH under $tmp/inst (the binaries find their lib and share directories
# relative to themselves, so the system's installation is never touched),
# with the autocdc of commit $commit of the repository at $src built from
# that commit's tree (git archive) and installed into it.  Returns the
# installation's root (install_path for autocdc_node) and the DESTDIR
# install_current_autocdc installs into.
sub old_autocdc_installation
{
	my ($src, $commit, $tmp) = @_;
	my $inst = "$tmp/inst";
	my ($bindir, $pkglibdir, $sharedir) = map { pg_config($_) } qw(bindir pkglibdir sharedir);
	for my $d ($bindir, $pkglibdir, $sharedir)
	{
		make_path("$inst$d");
		run_or_bail("cp -a '$d/.' '$inst$d/'", "$tmp/copy.log");
	}
	remove_tree("$inst$pkglibdir/bitcode");    # no JIT here
	unlink glob("'$inst$pkglibdir/autocdc.so' '$inst$sharedir/extension/autocdc*'");

	my $old = "$tmp/autocdc-$commit";
	make_path($old);
	run_or_bail("git -C '$src' archive '$commit' | tar -x -C '$old'", "$tmp/build.log");
	run_or_bail("make -s -j2 -C '$old' PG_CONFIG=pg_config", "$tmp/build.log");
	run_or_bail("make -s -C '$old' PG_CONFIG=pg_config install DESTDIR='$inst'", "$tmp/build.log");
	ok(-f "$inst$pkglibdir/autocdc.so", "autocdc of $commit built and installed into a private installation");
	(my $install_path = "$inst$bindir") =~ s{/bin/?$}{};
	return ($install_path, $inst);
}

# Install the autocdc of the working tree $src over the old one.
sub install_current_autocdc
{
	my ($src, $inst, $tmp) = @_;
	run_or_bail("make -s -C '$src' PG_CONFIG=pg_config install DESTDIR='$inst'", "$tmp/build.log");
}

# Turn the background worker off and wait until no worker runs.
sub stop_autocdc_worker
{
	my ($node) = @_;
	$node->append_conf('postgresql.conf', 'autocdc.enabled = off');
	$node->reload;
	$node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'autocdc worker'});
}

# For the upgrade tests: install the current library over autocdc
# $old_version into the stopped $node's installation, start it with the
# worker on, call $meanwhile->() (to write events), and check that nothing
# runs before ALTER EXTENSION autocdc UPDATE: the worker says so once, and
# run_flow($flow) refuses with the hint.
sub new_library_before_update
{
	my ($node, $src, $inst, $tmp, $old_version, $flow, $meanwhile) = @_;
	(my $old = $old_version) =~ s/\./\\./g;
	install_current_autocdc($src, $inst, $tmp);
	$node->append_conf('postgresql.conf', 'autocdc.enabled = on');
	my $log_offset = -s $node->logfile;
	$node->start;
	ok( $node->poll_query_until('postgres', q{
			SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'autocdc worker'}),
		'the worker starts with the new library');
	$meanwhile->();
	ok( $node->wait_for_log(qr/autocdc $old is installed in database "postgres", but the library is 0\.3/,
			$log_offset),
		'the worker says that the catalog is older than the library');
	sleep(2);    # many passes of 100 ms
	my $said = () = slurp_file($node->logfile, $log_offset) =~ /autocdc $old is installed in database/g;
	is($said, 1, '... once');
	my ($ret, $out, $err) = $node->psql('postgres', qq{SELECT * FROM autocdc.run_flow('$flow')});
	like($err, qr/autocdc $old is installed in this database, but the server runs the autocdc 0\.3 library/,
		'run_flow refuses before the update');
	like($err, qr/HINT:  Run ALTER EXTENSION autocdc UPDATE/, '... with the hint');
}

# For the upgrade tests: two snapshot flows as every release had them - s1
# (SCD 2) of the table snapsrc, run by the worker, and s2 of the version
# function next_snap(bigint) over the tables snap_<v> listed in loads, run
# by run_flow.
sub upgrade_snapshot_flows
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{
		CREATE TABLE snapsrc (k int PRIMARY KEY, v text);
		INSERT INTO snapsrc VALUES (1, 'a'), (2, 'b');
		SELECT autocdc.create_snapshot_flow('s1', 'snapsrc', '{k}', stored_as_scd_type => '2');
		CREATE TABLE loads (v bigint PRIMARY KEY);
		CREATE FUNCTION next_snap(last bigint) RETURNS TABLE (snapshot regclass, version bigint)
		LANGUAGE sql SET search_path = public AS $$
		  SELECT format('snap_%s', v)::regclass, v FROM loads
		   WHERE v > coalesce(last, 0) ORDER BY v LIMIT 1
		$$;
		SELECT autocdc.create_snapshot_flow('s2', NULL, '{k}', source_function => 'next_snap(bigint)',
											continuous => false);
	});
}

# Step 1 (before the upgrade) or 2 (after it) of upgrade_snapshot_flows'
# flows: a new snapshot for s2, a changed table for s1; both targets as due.
sub upgrade_snapshot_step
{
	my ($node, $step, $when) = @_;
	if ($step == 1)
	{
		$node->safe_psql('postgres', q{
			CREATE TABLE snap_1 (k int, v text);
			INSERT INTO snap_1 VALUES (1, 'p'), (2, 'q');
			INSERT INTO loads VALUES (1);
			SELECT * FROM autocdc.run_flow('s2');
		});
		is($node->safe_psql('postgres', 'SELECT k, v FROM s2 ORDER BY k'), "1|p\n2|q",
			"s2 (version function) applied snapshot 1 $when");
		ok( $node->poll_query_until('postgres',
				q{SELECT string_agg(k || v, ',' ORDER BY k) FROM s1 WHERE __end_at IS NULL}, '1a,2b'),
			"s1 (table snapshot, worker) applied $when");
		return;
	}
	$node->safe_psql('postgres', q{
		CREATE TABLE snap_2 (k int, v text);
		INSERT INTO snap_2 VALUES (2, 'q2'), (3, 'r');
		INSERT INTO loads VALUES (2);
		SELECT * FROM autocdc.run_flow('s2');
		UPDATE snapsrc SET v = 'b2' WHERE k = 2;
		INSERT INTO snapsrc VALUES (3, 'c');
	});
	is($node->safe_psql('postgres', 'SELECT k, v FROM s2 ORDER BY k'), "2|q2\n3|r",
		"s2 (version function) continues at snapshot 2 $when");
	ok( $node->poll_query_until('postgres',
			q{SELECT string_agg(k || v || (__end_at IS NULL), ',' ORDER BY k, __start_at) FROM s1},
			'1atrue,2bfalse,2b2true,3ctrue'),
		"s1 (table snapshot, worker) continues its history $when");
}

# The autocdc objects of database postgres equal those of a database
# created fresh at the current version.
sub same_objects_as_fresh
{
	my ($node, $what) = @_;
	$node->safe_psql('postgres', 'CREATE DATABASE fresh');
	$node->safe_psql('fresh', 'CREATE EXTENSION autocdc');
	is($node->safe_psql('postgres', autocdc_objects_sql()), $node->safe_psql('fresh', autocdc_objects_sql()),
		"$what and a fresh one hold the same autocdc objects");
}

# A listing of the autocdc extension's objects in the current database
# (members, functions with their properties, relations' columns, indexes,
# constraints, views, schemas, what pg_dump dumps), one line each, sorted:
# an upgraded database and a fresh one must give the same.
sub autocdc_objects_sql
{
	return q{
	WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'autocdc'),
	m AS (SELECT d.classid, d.objid, d.objsubid FROM pg_depend d, ext
		   WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e')
	SELECT 'member ' || pg_describe_object(classid, objid, objsubid) FROM m
	UNION ALL
	SELECT format('function %s returns %s strict=%s volatile=%s secdef=%s config=%s src=%s acl=%s support=%s',
				  p.oid::regprocedure, pg_get_function_result(p.oid), p.proisstrict, p.provolatile,
				  p.prosecdef, p.proconfig, p.prosrc, p.proacl, p.prosupport)
	  FROM pg_proc p JOIN m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
	UNION ALL
	SELECT format('relation %s kind=%s acl=%s column %s %s notnull=%s default=%s',
				  c.oid::regclass, c.relkind, c.relacl, a.attname, format_type(a.atttypid, a.atttypmod),
				  a.attnotnull, pg_get_expr(ad.adbin, ad.adrelid))
	  FROM pg_class c JOIN m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
	  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	  LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
	UNION ALL
	SELECT format('index %s', regexp_replace(pg_get_indexdef(i.indexrelid), 'INDEX \S+ ON', 'INDEX ON'))
	  FROM pg_index i JOIN m ON m.classid = 'pg_class'::regclass AND m.objid = i.indrelid
	UNION ALL
	SELECT format('constraint on %s: %s', co.conrelid::regclass, pg_get_constraintdef(co.oid))
	  FROM pg_constraint co JOIN m ON m.classid = 'pg_class'::regclass AND m.objid = co.conrelid
	UNION ALL
	SELECT format('view %s: %s', c.oid::regclass, pg_get_viewdef(c.oid))
	  FROM pg_class c JOIN m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid WHERE c.relkind = 'v'
	UNION ALL
	SELECT format('schema %s acl=%s', n.nspname, n.nspacl)
	  FROM pg_namespace n JOIN m ON m.classid = 'pg_namespace'::regclass AND m.objid = n.oid
	UNION ALL
	SELECT format('dumped %s %s', x.c::regclass, coalesce(x.w, ''))
	  FROM ext, pg_extension e, unnest(e.extconfig, e.extcondition) AS x(c, w) WHERE e.oid = ext.oid
	ORDER BY 1
};
}

1;
