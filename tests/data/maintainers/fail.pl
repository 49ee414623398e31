#!/usr/bin/perl
# A get_maintainer.pl that prints an address and then fails.
$| = 1;
print "Half Way <half\@example.org> (maintainer:X)\n";
print STDERR "get_maintainer.pl: MAINTAINERS is broken\n";
exit 3;
