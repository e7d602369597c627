
# The layout of src/ (README "Layout"): every module belongs to a layer and
# includes only headers of its own layer or the layers below, with no
# include cycles; only the catalog module names autocdc's catalog tables in
# string literals.  A new file must be given a layer here.

use strict;
use warnings;

use Test::More;

my $src = ($ENV{TESTDIR} // '.') . '/src';

# layer of each module (file name without .c/.h), lowest first
my @layers = (
	[ base => qw(compat layout settings util tablekind) ],
	[ store => qw(catalog failures lag registry) ],
	[ engine => qw(fold kind scd1 scd2 bitemporal storage rowstore expr batch slots source snapsource apply compare) ],
	[ usecase => qw(define run snaprun pass lanes) ],
	[ entry => qw(api timetravel statement parse worker guard autocdc) ],
);
my %layer_of;
for my $i (0 .. $#layers)
{
	my ($name, @modules) = @{ $layers[$i] };
	$layer_of{$_} = $i for @modules;
}

opendir(my $dh, $src) or die "cannot read $src: $!";
my @files = sort grep { /\.[ch]$/ } readdir($dh);
closedir($dh);
ok(@files > 10, 'the sources are found');

my %includes;	# module -> {module => 1}
for my $file (@files)
{
	(my $module = $file) =~ s/\.[ch]$//;
	ok(defined $layer_of{$module}, "$file belongs to a layer");
	next unless defined $layer_of{$module};
	open(my $fh, '<', "$src/$file") or die "cannot read $src/$file: $!";
	my $text = do { local $/; <$fh> };
	close($fh);

	for my $inc ($text =~ /^#include "([a-z0-9_]+)\.h"/mg)
	{
		next if $inc eq $module || !-f "$src/$inc.h";	# PostgreSQL's own
		if (!defined $layer_of{$inc})
		{
			fail("$file includes $inc.h, which belongs to no layer");
			next;
		}
		$includes{$module}{$inc} = 1;
		ok($layer_of{$inc} <= $layer_of{$module},
			"$file ($layers[$layer_of{$module}][0]) may include $inc.h ($layers[$layer_of{$inc}][0])")
		  if $layer_of{$inc} > $layer_of{$module};
	}

	# autocdc's catalog tables appear in SQL text only in catalog.c
	(my $code = $text) =~ s{/\*.*?\*/}{}gs;
	my @tables = $code =~ /"[^"\n]*\bautocdc\.(flow|flow_state|target|flow_run_log)\b[^"\n]*"/g;
	ok(!@tables || $module eq 'catalog',
		"$file names no catalog table in a string" . (@tables ? " (it names autocdc.$tables[0])" : ''));
}

# no include cycles between modules
my %state;		# 1 visiting, 2 done
my @cycle;
sub visit
{
	my ($m, @path) = @_;
	return if ($state{$m} // 0) == 2;
	if (($state{$m} // 0) == 1)
	{
		@cycle = (@path, $m) unless @cycle;
		return;
	}
	$state{$m} = 1;
	visit($_, @path, $m) for sort keys %{ $includes{$m} // {} };
	$state{$m} = 2;
}
visit($_) for sort keys %includes;
is(join(' -> ', @cycle), '', 'no module includes itself through others');

# the PGXN metadata describes this release
use JSON::PP;
my $top = ($ENV{TESTDIR} // '.');
sub slurp { my ($f) = @_; open(my $fh, '<', $f) or die "cannot read $f: $!"; local $/; return <$fh>; }
my $meta = decode_json(slurp("$top/META.json"));
my ($default_version) = slurp("$top/autocdc.control") =~ /^default_version = '([^']+)'/m;
(my $semver = $default_version) =~ s/^(\d+\.\d+)$/$1.0/;
is($meta->{version}, $semver, 'META.json: the distribution version is the control file\'s default version');
is($meta->{provides}{autocdc}{version}, $semver, 'META.json: so is the extension\'s');
ok(-f "$top/$meta->{provides}{autocdc}{file}", 'META.json: the extension\'s file exists');
ok(-f "$top/LICENSE" && $meta->{license} eq 'postgresql', 'META.json: the license is the one in LICENSE');
is($meta->{'meta-spec'}{version}, '1.0.0', 'META.json: PGXN meta spec 1.0.0');
for my $key (qw(name abstract version maintainer license provides meta-spec))
{
	ok(defined $meta->{$key}, "META.json: required key $key");
}

done_testing();
