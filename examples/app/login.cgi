#!/usr/bin/perl
# login.cgi - a legacy CGI login form that cannot be changed, for
# suspect-fcgi to count only the attempts that failed (the route of
# /login.cgi in examples/suspect.xml).
#
#   POST user, password   303 to /welcome on success,
#                         401 "Invalid password" on failure
#   anything else         the form (HTML)
#
# The account is fixed: alice, password "correct horse".  It knows
# nothing about rate limits.  Every attempt it checks is appended to
# attempts.log beside it ("login fail alice"), so a test can compare what
# the application performed with what was counted.  Only perl-base.
use strict;
use warnings;
use Fcntl qw(:flock);

my %PASSWORDS = (alice => 'correct horse');

sub url_decode {
    my ($s) = @_;
    $s =~ tr/+/ /;
    $s =~ s/%([0-9A-Fa-f]{2})/chr(hex($1))/ge;
    return $s;
}

sub form {
    my ($body) = @_;
    my %f;
    for my $pair (split /&/, $body) {
        my ($k, $v) = split /=/, $pair, 2;
        $f{url_decode($k)} = url_decode($v // '');
    }
    return %f;
}

my $method = $ENV{REQUEST_METHOD} // 'GET';
if ($method ne 'POST') {
    print "Content-Type: text/html; charset=utf-8\r\n\r\n",
        "<!DOCTYPE html>\n<html><body><form method=\"post\">",
        "<input name=\"user\"><input name=\"password\" type=\"password\">",
        "<button>Sign in</button></form></body></html>\n";
    exit 0;
}
my $len = $ENV{CONTENT_LENGTH} // 0;
my $body = '';
read(STDIN, $body, $len) if $len =~ /^\d+$/ && $len > 0 && $len < 65536;
my %f = form($body);
my $user = $f{user} // '';
my $ok = exists $PASSWORDS{$user} && $PASSWORDS{$user} eq ($f{password} // '');

(my $dir = $ENV{SCRIPT_FILENAME} // $0) =~ s{/[^/]*$}{};
if (open(my $log, '>>', "$dir/attempts.log")) {
    flock($log, LOCK_EX);
    (my $shown = $user) =~ s/[^A-Za-z0-9_.-]/?/g;
    print $log "login ", ($ok ? "ok" : "fail"), " $shown\n";
    close($log);
}
select(undef, undef, undef, 0.1); # a password hash takes its time
if ($ok) {
    print "Status: 303 See Other\r\nLocation: /welcome\r\n",
        "Cache-Control: no-store\r\n\r\n";
} else {
    print "Status: 401 Unauthorized\r\nContent-Type: text/plain\r\n",
        "Cache-Control: no-store\r\n\r\nInvalid password\n";
}
