#!/usr/bin/perl
# A get_maintainer.pl that never answers: zeroday must stop it.
$SIG{TERM} = 'IGNORE';
sleep 1 while 1;
