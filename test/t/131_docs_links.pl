
# The documentation holds together: every relative link and #anchor of
# README.md and docs/*.md resolves; every backticked repository path
# (src/..., test/..., sql/..., docs/...) names a file or directory that
# exists; every SQLSTATE that src/ raises has a row in
# docs/troubleshooting.md; docs/internals.md names every file of test/t/.
# Plain text only: nothing is built or started.

use strict;
use warnings;

use Test::More;

my $top = $ENV{TESTDIR} // '.';

sub slurp
{
	my ($path) = @_;
	open(my $fh, '<', $path) or die "cannot read $path: $!";
	local $/;
	my $text = <$fh>;
	close($fh);
	return $text;
}

# Markdown outside fenced code blocks (links and paths in code are examples)
sub prose
{
	my ($text) = @_;
	$text =~ s/^```.*?^```[^\n]*$//msg;
	return $text;
}

# GitHub's anchor of a heading: lower case, markup and punctuation dropped,
# spaces to hyphens, a repeated anchor numbered
sub anchors
{
	my ($text) = @_;
	my (%seen, %anchors);
	for my $heading (prose($text) =~ /^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/mg)
	{
		my $a = lc $heading;
		$a =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;		# a link: its text
		$a =~ s/<[^>]*>//g;
		$a =~ s/[^\w\- ]//g;					# \w keeps letters, digits, _
		$a =~ s/ /-/g;
		my $n = $seen{$a}++;
		$anchors{ $n ? "$a-$n" : $a } = 1;
	}
	return \%anchors;
}

opendir(my $dh, "$top/docs") or die "cannot read $top/docs: $!";
my @docs = ('README.md', map { "docs/$_" } sort grep { /\.md$/ } readdir($dh));
closedir($dh);
ok(@docs >= 8, 'README.md and docs/*.md are found (' . scalar(@docs) . ')');

my %text = map { $_ => slurp("$top/$_") } @docs;
my %anchors = map { $_ => anchors($text{$_}) } @docs;

# 1. relative links and anchors
for my $doc (@docs)
{
	(my $dir = $doc) =~ s{[^/]*$}{};
	my $prose = prose($text{$doc});
	$prose =~ s/`[^`\n]*`//g;					# inline code is no link
	for my $link ($prose =~ /\]\(([^)\s]+)\)/g)
	{
		next if $link =~ m{^[a-z][a-z0-9+.-]*:}i;	# http:, mailto:
		my ($path, $anchor) = $link =~ /^([^#]*)(?:#(.*))?$/;
		my $target = $doc;
		if ($path ne '')
		{
			$target = $dir . $path;
			1 while $target =~ s{(^|/)(?!\.\./)[^/]+/\.\./}{$1};
			$target =~ s{/$}{};
			ok(-e "$top/$target", "$doc: link $link: $target exists") or next;
		}
		next unless defined $anchor;
		if (!exists $anchors{$target})
		{
			fail("$doc: link $link: anchor in $target, which is no checked page");
			next;
		}
		ok($anchors{$target}{$anchor}, "$doc: link $link: $target has #$anchor");
	}
}

# 2. backticked repository paths
my %named;
for my $doc (@docs)
{
	for my $path (prose($text{$doc}) =~ /`((?:src|test|sql|docs)\/[\w.\/-]+)`/g)
	{
		$path =~ s{/$}{};
		next if $named{"$doc $path"}++;
		ok(-e "$top/$path", "$doc: `$path` exists");
	}
}

# 3. every SQLSTATE raised in src/ has a row in docs/troubleshooting.md
my %sqlstate;	# ERRCODE_X -> 5 characters, from PostgreSQL's errcodes.h
my $incdir = `pg_config --includedir-server 2>/dev/null`;
chomp $incdir;
if ($incdir ne '' && -r "$incdir/utils/errcodes.h")
{
	my $h = slurp("$incdir/utils/errcodes.h");
	while ($h =~ /#define\s+(ERRCODE_\w+)\s+MAKE_SQLSTATE\('(.)',\s*'(.)',\s*'(.)',\s*'(.)',\s*'(.)'\)/g)
	{
		$sqlstate{$1} = "$2$3$4$5$6";
	}
}
ok(keys %sqlstate > 100, "PostgreSQL's errcodes.h is read (" . scalar(keys %sqlstate) . ' codes)');

opendir($dh, "$top/src") or die "cannot read $top/src: $!";
my @src = sort grep { /\.[ch]$/ } readdir($dh);
closedir($dh);
my %raised;		# ERRCODE_X -> first file
for my $file (@src)
{
	my $code = slurp("$top/src/$file");
	$code =~ s{/\*.*?\*/}{}gs;
	$code =~ s{(?:==|!=)\s*ERRCODE_\w+}{}g;	# tests of an error's code
	$raised{$_} //= $file for $code =~ /\b(ERRCODE_[A-Z0-9_]+)/g;
}
$raised{ERRCODE_INTERNAL_ERROR} //= 'elog(ERROR)';
ok(keys %raised >= 20, 'the SQLSTATEs src/ raises are found (' . scalar(keys %raised) . ')');

my %rows;		# SQLSTATE -> its row in the table of part 3
for my $line (split /\n/, $text{'docs/troubleshooting.md'})
{
	$rows{$1} = $line if $line =~ /^\|\s*`([0-9A-Z]{5})`\s*\|/;
}
for my $errcode (sort keys %raised)
{
	(my $condition = lc $errcode) =~ s/^errcode_//;
	my $state = $sqlstate{$errcode};
	ok(defined $state, "$errcode ($raised{$errcode}) is a PostgreSQL error code") or next;
	ok(defined $rows{$state}, "docs/troubleshooting.md has a row for $state ($condition, raised in $raised{$errcode})")
	  or next;
	like($rows{$state}, qr/`\Q$condition\E`/, "the row of $state names its condition $condition");
}

# 4. docs/internals.md names every file of test/t/
opendir($dh, "$top/test/t") or die "cannot read $top/test/t: $!";
my @tests = sort grep { /\.(pl|pm)$/ } readdir($dh);
closedir($dh);
ok(@tests >= 20, 'the files of test/t/ are found (' . scalar(@tests) . ')');
ok(index($text{'docs/internals.md'}, "`test/t/$_`") >= 0, "docs/internals.md names test/t/$_ in its test map")
  for @tests;

done_testing();
