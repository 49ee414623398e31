#!/usr/bin/perl
# A get_maintainer.pl that tries to leave its box: write beside itself,
# read the file the patch names, reach the network. It prints what it
# managed, each as an address, so that a leak would show as a recipient.
use Socket;
open(my $p, '<', './patch') or die;
my ($secret) = map { /^SECRET-PATH (\S+)/ ? $1 : () } <$p>;
if (open(my $w, '>', './written')) { print "wrote\@example.org\n"; }
if (defined $secret && open(my $s, '<', $secret)) { my $l = <$s>; print "read-$l\@example.org\n"; }
if (socket(my $sock, PF_INET, SOCK_STREAM, 0)) {
	my $addr = sockaddr_in(53, inet_aton("1.1.1.1"));
	print "network\@example.org\n" if connect($sock, $addr);
}
print "Boxed <boxed\@example.org> (maintainer:BOX)\n";
exit 0;
