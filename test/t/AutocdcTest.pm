# Helpers shared by autocdc's TAP tests (test/t/*.pl; `make installcheck`
# puts this directory on prove's include path).

package AutocdcTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use Test::More;

our @EXPORT = qw(autocdc_node start_blocked_run wait_for_restart);

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

1;
