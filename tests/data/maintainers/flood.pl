#!/usr/bin/perl
# A get_maintainer.pl that prints 10 MB of addresses: zeroday must cap it.
my $line = "Flood <flood\@example.org> (maintainer:FLOOD)\n";
print $line x (10 * 1024 * 1024 / length($line));
exit 0;
