<?php
/*
 * index.php - the legacy application of app.cgi, in PHP, for the upstream
 * shape: nginx -> suspect-fcgi -> php-cgi (or php-fpm) -> this script.
 *
 * Same operations and answers as app.cgi (see there): one script that
 * dispatches on ?op=login|forgot|bank|promo|compose|resend, HTML for
 * browsers, one line of text ("ok <op>: ...") for anything else.  PHP
 * parses the query string and the urlencoded body itself ($_GET,
 * $_POST); Suspect parses them the same way ('&' only, names as PHP
 * files them), so both see the same member.  Like app.cgi it reads only
 * what its routes look at: op from the query string ($_GET, never
 * $_REQUEST), each operation only with the methods its route lists (405
 * otherwise), the fields of POST forms from $_POST and those of the
 * promotion lookup (a GET form) from $_GET.  It knows nothing about rate
 * limits and never writes back a password, an account number or a
 * message.
 *
 * What it did: when a file performed.log exists next to the script, each
 * operation it performed (a password checked, an account updated...)
 * appends a line "op identity", the identity as the app read it (bytes
 * outside printable ASCII as \xHH), as app.cgi does.  The tests compare
 * it with what Suspect counted; without the file nothing is written.
 */

/* Appends "$op $who" to performed.log next to the script, if it exists. */
function performed($op, $who)
{
    $log = __DIR__ . '/performed.log';
    if (!file_exists($log)) {
        return;
    }
    $who = preg_replace_callback('/[^\x21-\x7e]/',
        fn($m) => sprintf('\\x%02x', ord($m[0])), $who);
    file_put_contents($log, "$op $who\n", FILE_APPEND | LOCK_EX);
}

function wants_html()
{
    return strpos($_SERVER['HTTP_ACCEPT'] ?? '', 'text/html') !== false;
}

/* Writes a whole response and ends the script. */
function respond($status, $text, $html = null, $headers = [])
{
    header('Status: ' . $status);
    header('Cache-Control: no-store');
    foreach ($headers as $h) {
        header($h, false);
    }
    if (!wants_html()) {
        header('Content-Type: text/plain; charset=utf-8');
        echo $text, "\n";
        exit(0);
    }
    header('Content-Type: text/html; charset=utf-8');
    if ($html === null) {
        $html = '<p>' . htmlspecialchars($text) . '</p>';
    }
    echo "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">",
        "<title>Legacy app</title><style>body{font-family:sans-serif;",
        "max-width:40em;margin:2em auto}form{border:1px solid #ccc;",
        "padding:.5em 1em;margin:1em 0}label{display:block;margin:.3em 0}",
        "</style></head><body>\n<h1>Legacy app (PHP)</h1>\n", $html,
        "\n<p><a href=\"?\">Back to the index</a></p></body></html>\n";
    exit(0);
}

function form_html($op, $title, $method, $fields)
{
    $f = "<form method=\"$method\" action=\"?op=$op\"><h2>$title</h2>\n";
    if ($method === 'get') {
        $f .= "<input type=\"hidden\" name=\"op\" value=\"$op\">\n";
    }
    foreach ($fields as [$name, $label, $type]) {
        $f .= "<label>$label <input name=\"$name\" type=\"$type\"></label>\n";
    }
    return $f . "<button>Send</button></form>\n";
}

function index_page()
{
    $html = '<p>Each form is one protected action; send it a few times'
        . ' to meet its limit.</p>'
        . form_html('login', 'Sign in (SecureLoginForceForgotAccount)', 'post',
            [['member', 'Member code', 'text'],
                ['password', 'Password (demo)', 'password']])
        . form_html('forgot', 'Forgot password (SecureForgotAccount)',
            'post', [['account', 'Login id', 'text']])
        . form_html('bank', 'Update bank account (BankAccountUpdate)',
            'post', [['account', 'New account number', 'text']])
        . form_html('promo', 'Promotion lookup (PromoQuery)', 'get',
            [['member', 'Member code', 'text'],
                ['code', 'Promo code', 'text']])
        . form_html('compose', 'Compose a message (ComposeMessage)', 'post',
            [['to', 'To', 'text'], ['message', 'Message', 'text']]);
    respond('200 OK', 'ok index: ops are login forgot bank promo compose'
        . ' resend', $html);
}

/* The string $from[$name] ($_GET or $_POST), or '' (absent, an array). */
function field_of($from, $name)
{
    $v = $from[$name] ?? '';
    return is_string($v) ? $v : '';
}

/* A field of a POST form: from the body only. */
function field($name)
{
    return field_of($_POST, $name);
}

function need($op, ...$names)
{
    foreach ($names as $n) {
        if (field($n) === '') {
            respond('400 Bad Request', "error $op: $n is missing");
        }
    }
}

/* Ends the request with a 405 unless its method is one of $methods. */
function method_allowed($op, ...$methods)
{
    if (!in_array($_SERVER['REQUEST_METHOD'] ?? '', $methods, true)) {
        $allow = implode(', ', $methods);
        respond('405 Method Not Allowed', "error $op: use $allow", null,
            ["Allow: $allow"]);
    }
}

function op_login()
{
    need('login', 'member', 'password');
    performed('login', field('member'));
    if (field('password') !== 'demo') {
        respond('401 Unauthorized', 'error login: wrong password');
    }
    $member = field('member');
    if (!preg_match('/^[A-Za-z0-9_.-]{1,64}$/', $member)) {
        respond('400 Bad Request', 'error login: bad member code');
    }
    $session = bin2hex(random_bytes(8));
    respond('200 OK', 'ok login: signed in as ' . $member, null, [
        "Set-Cookie: member=$member; Path=/; HttpOnly; SameSite=Lax",
        "Set-Cookie: SESSIONID=$session; Path=/; HttpOnly; SameSite=Lax",
    ]);
}

function op_forgot()
{
    need('forgot', 'account');
    performed('forgot', field('account'));
    respond('200 OK', 'ok forgot: if the account exists, a reset code was sent');
}

function op_bank()
{
    need('bank', 'account');
    if (($_COOKIE['member'] ?? '') === '') {
        respond('403 Forbidden', 'error bank: sign in first');
    }
    performed('bank', $_COOKIE['member']);
    respond('200 OK', 'ok bank: account updated');
}

/* A GET form: member and code come from the query string, where the
 * route's query: identity reads them, whatever the method. */
function op_promo()
{
    foreach (['member', 'code'] as $n) {
        if (field_of($_GET, $n) === '') {
            respond('400 Bad Request', "error promo: $n is missing");
        }
    }
    performed('promo', field_of($_GET, 'member') . '_'
        . field_of($_GET, 'code'));
    $valid = preg_match('/^[A-Z0-9]{4,16}$/', field_of($_GET, 'code'))
        ? 'valid' : 'not valid';
    respond('200 OK', "ok promo: the code is $valid");
}

function op_compose()
{
    need('compose', 'to', 'message');
    performed('compose', (string)($_COOKIE['SESSIONID'] ?? ''));
    $n = strlen(field('message'));
    respond('200 OK', "ok compose: message sent ($n bytes)");
}

function op_resend()
{
    if (($_SERVER['HTTP_X_ACCOUNT_ID'] ?? '') === '') {
        respond('400 Bad Request', 'error resend: no account');
    }
    performed('resend', $_SERVER['HTTP_X_ACCOUNT_ID']);
    respond('200 OK', 'ok resend: a new verification code was sent');
}

/* The operation comes from the query string only, as the routes read it. */
$op = field_of($_GET, 'op');
$posts = ['login' => 'op_login', 'forgot' => 'op_forgot',
    'bank' => 'op_bank', 'compose' => 'op_compose', 'resend' => 'op_resend'];
if ($op === '') {
    index_page();
} elseif ($op === 'promo') {
    method_allowed($op, 'GET', 'POST');
    op_promo();
} elseif (isset($posts[$op])) {
    method_allowed($op, 'POST');
    $posts[$op]();
}
respond('404 Not Found', 'error: unknown op');
