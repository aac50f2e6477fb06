#!/usr/bin/perl
# app.cgi - a small legacy CGI application to put Suspect in front of.
#
# One program that dispatches on ?op=..., the way many CGI applications of
# its age do.  Each operation is one of the scenarios Suspect protects:
#
#   op       method     fields (from)              action (limits.xml)
#   (none)   any                                   the index: a form each
#   login    POST       member, password (body)    SecureLoginForceForgotAccount
#   forgot   POST       account (body)             SecureForgotAccount
#   bank     POST       account (body; member:     BankAccountUpdate
#                       cookie)
#   promo    GET, POST  member, code (query)       PromoQuery
#   compose  POST       to, message (body;         ComposeMessage
#                       SESSIONID cookie)
#   resend   POST       (X-Account-Id header)      LoginVerificationResend
#
# The application knows nothing about rate limits: suspect-fcgi decides
# before it runs, and a denied request never reaches it.  Browsers
# (Accept: text/html) get HTML pages, anything else (curl) one line of
# text beginning with "ok <op>" or "error <op>".
#
# It reads exactly what the routes of examples/suspect*.xml look at, and
# nothing else, so a request cannot be one operation to the app and
# another (or none) to Suspect: op only from the query string (the routes
# say paramIn="query"), each operation only with the methods its route
# lists (405 otherwise), each field only from where its identity is read
# (the body for form: sources, the query for query: ones).
#
# It reads the body from stdin, exactly CONTENT_LENGTH bytes, when its
# media type is application/x-www-form-urlencoded as PHP and Suspect read
# it (CONTENT_TYPE up to the first ';', ',' or space, any case), and
# parses it the way Suspect does (split on '&' only, '+' is a space, %XX
# once), so both see the same member.  It never writes back a password,
# an account number or a message: only counts, and names the client chose
# for itself (its member code).  Only perl-base is needed (no CPAN
# modules).
#
# What it did: when a file performed.log exists next to the program, each
# operation it performed (a password checked, an account updated...)
# appends a line "op identity", the identity as the app read it (bytes
# outside printable ASCII as \xHH).  The tests compare it with what
# Suspect counted; without the file nothing is written.
use strict;
use warnings;

my $BODY_MAX = 16 * 1024 * 1024;

# Decodes one urlencoded component.
sub url_decode {
    my ($s) = @_;
    $s =~ tr/+/ /;
    $s =~ s/%([0-9A-Fa-f]{2})/chr(hex($1))/ge;
    return $s;
}

# Parses "a=1&b=2" into a hash; the first occurrence of a name wins.
sub parse_params {
    my ($text) = @_;
    my %p;
    for my $pair (split /&/, $text // '') {
        next if $pair eq '';
        my ($name, $value) = split /=/, $pair, 2;
        $name = url_decode($name);
        next if $name eq '' || exists $p{$name};
        $p{$name} = url_decode($value // '');
    }
    return \%p;
}

# The request cookies (first occurrence wins, values as sent).
sub parse_cookies {
    my %c;
    for my $pair (split /;/, $ENV{HTTP_COOKIE} // '') {
        my ($name, $value) = split /=/, $pair, 2;
        next unless defined $value;
        $name  =~ s/^\s+|\s+$//g;
        $value =~ s/^\s+|\s+$//g;
        $c{$name} = $value unless exists $c{$name};
    }
    return \%c;
}

# Reads the body: CONTENT_LENGTH bytes of stdin, or nothing.
sub read_body {
    my $len = $ENV{CONTENT_LENGTH} // '';
    return '' unless $len =~ /^\d+$/ && $len > 0;
    return undef if $len > $BODY_MAX;
    binmode STDIN;
    my ($body, $got) = ('', 0);
    while ($got < $len) {
        my $n = read(STDIN, $body, $len - $got, $got);
        last unless $n;
        $got += $n;
    }
    return $body;
}

sub html_escape {
    my ($s) = @_;
    $s =~ s/&/&amp;/g;
    $s =~ s/</&lt;/g;
    $s =~ s/>/&gt;/g;
    $s =~ s/"/&quot;/g;
    $s =~ s/'/&#39;/g;
    return $s;
}

sub wants_html {
    return ($ENV{HTTP_ACCEPT} // '') =~ m{text/html};
}

my $STYLE = 'body{font-family:sans-serif;max-width:40em;margin:2em auto}'
    . 'form{border:1px solid #ccc;padding:.5em 1em;margin:1em 0}'
    . 'label{display:block;margin:.3em 0}';

# Writes a whole response: status, extra header lines, one line of text
# (the curl answer) and, for browsers, an HTML fragment.
sub respond {
    my ($status, $headers, $text, $html) = @_;
    binmode STDOUT;
    print "Status: $status\r\n";
    print "$_\r\n" for @$headers;
    print "Cache-Control: no-store\r\n";
    if (wants_html()) {
        $html //= '<p>' . html_escape($text) . '</p>';
        print "Content-Type: text/html; charset=utf-8\r\n\r\n";
        print "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            . "<title>Legacy app</title><style>$STYLE</style></head><body>\n"
            . "<h1>Legacy app</h1>\n$html\n"
            . "<p><a href=\"?\">Back to the index</a></p></body></html>\n";
    } else {
        print "Content-Type: text/plain; charset=utf-8\r\n\r\n$text\n";
    }
    exit 0;
}

sub form_html {
    my ($op, $title, $method, @fields) = @_;
    my $f = "<form method=\"$method\" action=\"?op=$op\"><h2>$title</h2>\n";
    $f .= "<input type=\"hidden\" name=\"op\" value=\"$op\">\n"
        if $method eq 'get';
    for my $field (@fields) {
        my ($name, $label, $type) = @$field;
        $f .= "<label>$label <input name=\"$name\" type=\"$type\"></label>\n";
    }
    return $f . "<button>Send</button></form>\n";
}

sub index_page {
    my $html = '<p>Each form is one protected action; send it a few times'
        . ' to meet its limit.</p>'
        . form_html('login', 'Sign in (SecureLoginForceForgotAccount)', 'post',
        ['member', 'Member code', 'text'],
        ['password', 'Password (demo)', 'password'])
        . form_html('forgot', 'Forgot password (SecureForgotAccount)',
        'post', ['account', 'Login id', 'text'])
        . form_html('bank', 'Update bank account (BankAccountUpdate)',
        'post', ['account', 'New account number', 'text'])
        . form_html('promo', 'Promotion lookup (PromoQuery)', 'get',
        ['member', 'Member code', 'text'], ['code', 'Promo code', 'text'])
        . form_html('compose', 'Compose a message (ComposeMessage)', 'post',
        ['to', 'To', 'text'], ['message', 'Message', 'text']);
    respond('200 OK', [], 'ok index: ops are login forgot bank promo'
            . ' compose resend', $html);
}

# Appends "op who" to performed.log next to the program, if it exists.
sub performed {
    my ($op, $who) = @_;
    my ($dir) = ($0 =~ m{^(.*)/[^/]*$});
    my $log = ($dir // '.') . '/performed.log';
    return unless -e $log;
    $who =~ s/([^\x21-\x7e])/sprintf('\\x%02x', ord($1))/ge;
    open(my $f, '>>', $log) or return;
    print $f "$op $who\n";
    close($f);
}

sub need {
    my ($op, $p, @names) = @_;
    for my $n (@names) {
        next if defined $p->{$n} && $p->{$n} ne '';
        respond('400 Bad Request', [], "error $op: $n is missing");
    }
}

sub op_login {
    my ($q) = @_;
    need('login', $q, 'member', 'password');
    performed('login', $q->{member});
    if ($q->{password} ne 'demo') {
        respond('401 Unauthorized', [], 'error login: wrong password');
    }
    my $member = $q->{member};
    if ($member !~ /^[A-Za-z0-9_.-]{1,64}$/) {
        respond('400 Bad Request', [], 'error login: bad member code');
    }
    my $session = sprintf('%08x%08x', int(rand(2**32)), int(rand(2**32)));
    respond('200 OK',
        ["Set-Cookie: member=$member; Path=/; HttpOnly; SameSite=Lax",
            "Set-Cookie: SESSIONID=$session; Path=/; HttpOnly; SameSite=Lax"],
        'ok login: signed in as ' . $member);
}

sub op_forgot {
    my ($q) = @_;
    need('forgot', $q, 'account');
    performed('forgot', $q->{account});
    respond('200 OK', [],
        'ok forgot: if the account exists, a reset code was sent');
}

sub op_bank {
    my ($q, $c) = @_;
    need('bank', $q, 'account');
    my $member = $c->{member} // '';
    respond('403 Forbidden', [], 'error bank: sign in first')
        if $member eq '';
    performed('bank', $member);
    respond('200 OK', [], 'ok bank: account updated');
}

sub op_promo {
    my ($q) = @_;
    need('promo', $q, 'member', 'code');
    performed('promo', "$q->{member}_$q->{code}");
    my $code = $q->{code};
    my $valid = $code =~ /^[A-Z0-9]{4,16}$/ ? 'valid' : 'not valid';
    respond('200 OK', [], "ok promo: the code is $valid");
}

sub op_compose {
    my ($q, $c) = @_;
    need('compose', $q, 'to', 'message');
    performed('compose', $c->{SESSIONID} // '');
    my $n = length($q->{message});
    respond('200 OK', [], "ok compose: message sent ($n bytes)");
}

sub op_resend {
    my $account = $ENV{HTTP_X_ACCOUNT_ID} // '';
    respond('400 Bad Request', [], 'error resend: no account')
        if $account eq '';
    performed('resend', $account);
    respond('200 OK', [], 'ok resend: a new verification code was sent');
}

# True when CONTENT_TYPE's media type is an urlencoded form, read as PHP
# reads it: up to the first ';', ',' or space, in any case.
sub is_urlencoded {
    my ($type) = split /[;, ]/, $ENV{CONTENT_TYPE} // '', 2;
    return lc($type // '') eq 'application/x-www-form-urlencoded';
}

sub method_allowed {
    my ($op, @methods) = @_;
    my $method = $ENV{REQUEST_METHOD} // '';
    return if grep { $_ eq $method } @methods;
    my $allow = join(', ', @methods);
    respond('405 Method Not Allowed', ["Allow: $allow"],
        "error $op: use $allow");
}

my $query = parse_params($ENV{QUERY_STRING});
my $body = read_body();
respond('413 Content Too Large', [], 'error: body too large')
    unless defined $body;
my $form = is_urlencoded() ? parse_params($body) : {};
# The operation comes from the query string only, as the routes read it.
my $op = $query->{op} // '';
my $cookies = parse_cookies();

my %posts = (login => \&op_login, forgot => \&op_forgot, bank => \&op_bank,
    compose => \&op_compose, resend => \&op_resend);
if ($op eq '') {
    index_page();
} elsif ($op eq 'promo') {
    # A GET form, so its fields are in the query string, where the
    # route's query: identity reads them, whatever the method.
    method_allowed($op, 'GET', 'POST');
    op_promo($query);
} elsif (exists $posts{$op}) {
    # POST forms: their fields come from the body, like form: sources.
    method_allowed($op, 'POST');
    $posts{$op}->($form, $cookies);
}
respond('404 Not Found', [], 'error: unknown op');
