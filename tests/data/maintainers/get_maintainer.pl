#!/usr/bin/perl
# A small stand-in for the kernel's scripts/get_maintainer.pl, for the
# tests: the same command line as zeroday gives the real one, a
# MAINTAINERS file of the same format (sections with M:, R:, L: and F:
# entries; an F: ending in '/' is a directory, '*' a glob), a patch read
# for its "+++ b/FILE" lines, and the same output with --roles
# --norolestats: "Name <addr> (maintainer:SECTION)", "list (open
# list:SECTION)". It refuses options that would read git history.
use strict;
use warnings;

my ($mpath, $patch);
my %want = map { $_ => 0 } qw(--no-tree --nogit --nogit-fallback --nofixes --m --r --l --roles
			      --norolestats);
while (@ARGV) {
	my $a = shift @ARGV;
	if ($a eq '--mpath') { $mpath = shift @ARGV; next; }
	if ($a eq '--git' || $a eq '--git-fallback' || $a eq '--git-blame') {
		die "get_maintainer.pl: $a reads git history\n";
	}
	$want{$a} = 1 if exists $want{$a};
	$patch = $a if $a !~ /^-/;
}
for (sort keys %want) { die "get_maintainer.pl: missing $_\n" unless $want{$_}; }
die "get_maintainer.pl: no --mpath\n" unless defined $mpath;
die "get_maintainer.pl: no patch\n" unless defined $patch;

my @files;
open(my $p, '<', $patch) or die "get_maintainer.pl: $patch: $!\n";
while (<$p>) { push @files, $1 if m{^\+\+\+ b/(\S+)}; }
close($p);

my (@sections, $cur);
open(my $m, '<', $mpath) or die "get_maintainer.pl: $mpath: $!\n";
while (<$m>) {
	chomp;
	if (/^([A-Z]):\s*(.*)$/ && $cur) { push @{$cur->{$1}}, $2; next; }
	if (/^\S/) { $cur = { name => $_ }; push @sections, $cur; }
}
close($m);

sub matches {
	my ($pat, $file) = @_;
	return index($file, $pat) == 0 if $pat =~ m{/$};
	(my $re = quotemeta($pat)) =~ s/\\\*/[^\/]*/g;
	return $file =~ /^$re$/;
}

my (%seen, @out);
for my $s (@sections) {
	my $hit = 0;
	for my $f (@files) { $hit ||= grep { matches($_, $f) } @{$s->{F} || []}; }
	next unless $hit;
	for (@{$s->{M} || []}) { push @out, "$_ (maintainer:$s->{name})" unless $seen{$_}++; }
	for (@{$s->{R} || []}) { push @out, "$_ (reviewer:$s->{name})" unless $seen{$_}++; }
	for (@{$s->{L} || []}) { push @out, "$_ (open list:$s->{name})" unless $seen{$_}++; }
}
print "$_\n" for @out;
exit 0;
