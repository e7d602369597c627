
# The layout of src/ (docs/internals.md "The layers"): every module belongs to a layer and
# includes only headers of its own layer or the layers below, with no
# include cycles; only the catalog module names autocdc's catalog tables in
# string literals.  A new file must be given a layer here.  Every file
# starts with a header comment saying what it is for, and no function is
# longer than 100 lines.

use strict;
use warnings;

use Test::More;

my $src = ($ENV{TESTDIR} // '.') . '/src';

# layer of each module (file name without .c/.h), lowest first
my @layers = (
	[ base => qw(compat layout settings util tablekind srckind) ],
	[ store => qw(catalog lag registry) ],
	[ schedule => qw(schedule failures) ],
	[ engine => qw(fold kind scd1 scd2 bitemporal storage rowstore expr batch slots
		  source source_internal firstread walfilter decode capture snapsource apply compare) ],
	[ usecase => qw(define run snaprun pass lanes) ],
	[ entry => qw(api timetravel statement parse worker guard autocdc) ],
);
my %layer_of;
for my $i (0 .. $#layers)
{
	my ($name, @modules) = @{ $layers[$i] };
	$layer_of{$_} = $i for @modules;
}
# a source kind's file (srcfeed.c, srcchanges.c...) belongs to the capture
$layer_of{$_} //= $layer_of{capture}
  for map { /^(src(?!kind)[a-z]+)\.[ch]$/ ? $1 : () } do { opendir(my $d, ($ENV{TESTDIR} // '.') . '/src') or die; readdir($d) };

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

	# a flow's source kind is asked, not named: no `changes` flag, no
	# comparison with a kind's name, and each kind's SourceKind named only
	# in its own file and in the table of kinds (srckind.c)
	my @flag = $text =~ /((?:->|\.)changes\b)/g;
	ok(!@flag, "$file tests no changes flag (a flow's srckind says what its source is)");
	my @named = $text =~ /(strn?(?:case)?cmp\([^;]*kind->name|kind->name\s*==)/g;
	ok(!@named, "$file does not dispatch on a source kind's name");
	for my $kind ($text =~ /\b(src[a-z]+_kind)\b/g)
	{
		(my $own = $kind) =~ s/_kind$//;
		ok($module eq $own || $module eq 'srckind',
			"$file names $kind only through the table of kinds")
		  or last;
	}

	# autocdc's catalog tables appear in SQL text only in catalog.c
	(my $code = $text) =~ s{/\*.*?\*/}{}gs;
	my @tables = $code =~ /"[^"\n]*\bautocdc\.(flow|flow_state|target|flow_run_log|expectation)\b[^"\n]*"/g;
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

# every file starts with a header comment (a /* ... */ block) that says
# more than the file's name
for my $file (@files)
{
	my $text = do { local $/; open(my $fh, '<', "$src/$file") or die "cannot read $src/$file: $!"; <$fh> };
	my ($head) = $text =~ m{\A/\*(.*?)\*/}s;
	my $says = $head // '';
	$says =~ s/\Q$file\E//g;
	ok(defined $head && $says =~ /[[:alpha:]]{2,}/,
		"$file starts with a header comment saying what it is for");
}

# no function is longer than 100 lines, counted from the line holding only
# the opening brace (after a line ending in ")") to the line holding only
# the closing one
my $max_function_lines = 100;
for my $file (grep { /\.c$/ } @files)
{
	open(my $fh, '<', "$src/$file") or die "cannot read $src/$file: $!";
	my @lines = <$fh>;
	close($fh);
	chomp @lines;
	my ($start, $name, @long);
	for my $i (0 .. $#lines)
	{
		if (!defined $start && $lines[$i] eq '{' && $i > 0 && $lines[ $i - 1 ] =~ /\)\s*$/)
		{
			$start = $i;
			$name = '?';
			for (my $j = $i - 1; $j >= 0 && $j >= $i - 20; $j--)
			{
				if ($lines[$j] =~ /^(\w+)\(/)
				{
					$name = $1;
					last;
				}
			}
		}
		elsif (defined $start && $lines[$i] eq '}')
		{
			push @long, "$file: $name() is " . ($i - $start) . " lines long"
			  if $i - $start > $max_function_lines;
			undef $start;
		}
	}
	is(join('; ', @long), '', "$file has no function longer than $max_function_lines lines");
}

# an alternative expected output differs from its file only where a newer
# PostgreSQL prints differently (psql 19's \d says "Included in
# publications:"), so that the two never drift apart
for my $alt (glob(($ENV{TESTDIR} // '.') . '/expected/*_1.out'))
{
	(my $main = $alt) =~ s/_1\.out$/.out/;
	my $want = do { local $/; open(my $fh, '<', $main) or die "cannot read $main: $!"; <$fh> };
	my $have = do { local $/; open(my $fh, '<', $alt) or die "cannot read $alt: $!"; <$fh> };
	$want =~ s/^Publications:$/Included in publications:/mg;
	ok($have eq $want, "$alt is $main with PostgreSQL 19's psql output");
}

# the PGXN metadata describes this release
use JSON::PP;
my $top = ($ENV{TESTDIR} // '.');
sub slurp { my ($f) = @_; open(my $fh, '<', $f) or die "cannot read $f: $!"; local $/; return <$fh>; }
my $meta = decode_json(slurp("$top/META.json"));
my ($default_version) = slurp("$top/autocdc.control") =~ /^default_version = '([^']+)'/m;
(my $semver = $default_version) =~ s/^(\d+\.\d+)$/$1.0/;
is($meta->{version}, $semver, 'META.json: the distribution version is the control file\'s default version');
is($meta->{provides}{autocdc}{version}, $semver, 'META.json: so is the extension\'s');
is($meta->{provides}{autocdc}{file}, "autocdc--$default_version.sql",
	'META.json: the extension\'s file is the install script of the default version');
ok(-f "$top/$meta->{provides}{autocdc}{file}", 'META.json: the extension\'s file exists');
ok(-f "$top/LICENSE" && $meta->{license} eq 'postgresql', 'META.json: the license is the one in LICENSE');
is($meta->{'meta-spec'}{version}, '1.0.0', 'META.json: PGXN meta spec 1.0.0');
is(join(' ', pgxn_meta_errors($meta)), '', 'META.json: valid by PGXN\'s meta spec 1.0.0');

# the PGXN meta spec 1.0.0 (what PGXN checks on upload): required keys,
# each key's form, and no unknown key but x_/X_ ones
sub pgxn_meta_errors
{
	my ($m) = @_;
	my @err;
	my $semver = qr/^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$/;
	my $range = qr/^((([=!]=|[<>]=?)\s*)?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?|0)$/;
	my $term = qr/^[^\/\\\s[:cntrl:]]{2,}$/;
	my %licenses = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1 artistic_2 bsd freebsd
	  gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1 lgpl_3_0 mit mozilla_1_0 mozilla_1_1 openssl
	  perl_5 postgresql qpl_1_0 ssleay sun zlib open_source restricted unrestricted unknown);
	my %known = map { $_ => 1 } qw(name version abstract maintainer license provides meta-spec
	  description generated_by tags no_index prereqs release_status resources);
	for my $k (qw(name version abstract maintainer license provides meta-spec))
	{
		push @err, "missing $k" unless defined $m->{$k};
	}
	for my $k (sort keys %$m)
	{
		push @err, "unknown key $k" unless $known{$k} || $k =~ /^[xX]_./;
	}
	push @err, 'name is no term' unless ($m->{name} // '') =~ $term;
	push @err, 'version is no semantic version' unless ($m->{version} // '') =~ $semver;
	push @err, 'abstract is empty' unless length($m->{abstract} // '');
	my @maint = ref $m->{maintainer} eq 'ARRAY' ? @{ $m->{maintainer} } : ($m->{maintainer});
	push @err, 'a maintainer is empty' if !@maint || grep { !defined || ref || !length } @maint;
	my @lic = ref $m->{license} eq 'ARRAY' ? @{ $m->{license} } : ($m->{license});
	push @err, "unknown license" if ref $m->{license} ne 'HASH' && grep { !defined || !$licenses{$_} } @lic;
	push @err, 'provides is empty' unless ref $m->{provides} eq 'HASH' && %{ $m->{provides} };
	for my $ext (sort keys %{ ref $m->{provides} eq 'HASH' ? $m->{provides} : {} })
	{
		my $e = $m->{provides}{$ext};
		push @err, "provides: $ext is no term" unless $ext =~ $term;
		push @err, "provides: $ext has no file" unless length($e->{file} // '');
		push @err, "provides: $ext has no semantic version" unless ($e->{version} // '') =~ $semver;
		push @err, "provides: $ext: unknown key $_"
		  for grep { !/^(file|version|abstract|docfile)$/ && !/^[xX]_./ } sort keys %$e;
	}
	push @err, 'meta-spec version is not 1.0.0' unless ($m->{'meta-spec'}{version} // '') eq '1.0.0';
	if (defined $m->{tags})
	{
		push @err, 'tags is no list' unless ref $m->{tags} eq 'ARRAY';
		push @err, "tag '$_' is invalid"
		  for grep { !/^[^\/\\[:cntrl:]]{1,255}$/ } @{ ref $m->{tags} eq 'ARRAY' ? $m->{tags} : [] };
	}
	for my $phase (sort keys %{ $m->{prereqs} // {} })
	{
		push @err, "prereqs: unknown phase $phase" unless $phase =~ /^(configure|build|test|runtime|develop)$/;
		for my $rel (sort keys %{ $m->{prereqs}{$phase} })
		{
			push @err, "prereqs: unknown relation $rel" unless $rel =~ /^(requires|recommends|suggests|conflicts)$/;
			my $reqs = $m->{prereqs}{$phase}{$rel};
			push @err, "prereqs: $phase $rel $_ is no version range"
			  for grep { !(join(',', map { s/^\s+//r } split /,/, $reqs->{$_}) =~ /^(?:$range)(?:,$range)*$/) } sort keys %$reqs;
		}
	}
	push @err, 'release_status is not stable, testing or unstable'
	  if defined $m->{release_status} && $m->{release_status} !~ /^(stable|testing|unstable)$/;
	for my $k (sort keys %{ $m->{no_index} // {} })
	{
		push @err, "no_index: unknown key $k" unless $k =~ /^(file|directory)$/;
	}
	return @err;
}

done_testing();
