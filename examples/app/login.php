<?php
/*
 * login.php - a legacy login and one-time-code form that cannot be
 * changed, for suspect-fcgi to count only the attempts that failed
 * (examples/suspect-login.xml).
 *
 *   POST ?op=login  user, password  200 "Welcome <user>" on success,
 *                                   401 "Invalid password" on failure
 *   POST ?op=otp    user, code      302 to /account on success,
 *                                   200 with "Invalid code" on failure
 *   POST ?op=signin user, password, 303 to /account on success; on failure
 *        return, error_url          302 back to the form with what the
 *                                   client sent in the query, unchecked
 *                                   ("/login.php?failed=1&return=..."),
 *                                   or to error_url when the client gave
 *                                   one (an open redirect, as many have)
 *   ?op=legacy      u, p from       200 "Welcome" on success, 401 on
 *                   $_REQUEST       failure; $_REQUEST as PHP builds it
 *                                   without a php.ini (request_order
 *                                   unset, variables_order "EGPCS"):
 *                                   GET, POST, then cookies, the last
 *                                   winning, whatever this php.ini says
 *   anything else                   the two forms (HTML)
 *
 * The accounts are fixed: alice's password is "correct horse", her code
 * 424242; bob's "battery staple", 171717.  It knows nothing about rate limits.  Every attempt it checks
 * is appended to attempts.log beside it ("login fail alice"), so a test
 * can compare what the application performed with what was counted.
 */

$ACCOUNTS = ['alice' => ['password' => 'correct horse', 'code' => '424242'],
             'bob' => ['password' => 'battery staple', 'code' => '171717']];

function attempt_log($op, $ok, $user)
{
    file_put_contents(__DIR__ . '/attempts.log',
                      sprintf("%s %s %s\n", $op, $ok ? 'ok' : 'fail',
                              preg_replace('/[^A-Za-z0-9_.-]/', '?', $user)),
                      FILE_APPEND | LOCK_EX);
}

$op = $_GET['op'] ?? '';
$user = (string)($_POST['user'] ?? '');

if ($_SERVER['REQUEST_METHOD'] === 'POST' && $op === 'login') {
    $ok = isset($ACCOUNTS[$user]) &&
          hash_equals($ACCOUNTS[$user]['password'],
                      (string)($_POST['password'] ?? ''));
    attempt_log('login', $ok, $user);
    usleep(100000); /* a password hash takes its time */
    header('Cache-Control: no-store');
    header('Content-Type: text/plain; charset=utf-8');
    if (!$ok) {
        header('Status: 401 Unauthorized');
        echo "Invalid password\n";
        exit(0);
    }
    echo "Welcome ", htmlspecialchars($user), "\n";
    exit(0);
}

if ($op === 'legacy') {
    $request = array_merge($_GET, $_POST, $_COOKIE);
    $name = (string)($request['u'] ?? '');
    $ok = isset($ACCOUNTS[$name]) &&
          hash_equals($ACCOUNTS[$name]['password'],
                      (string)($request['p'] ?? ''));
    attempt_log('legacy', $ok, $name);
    header('Cache-Control: no-store');
    header('Content-Type: text/plain; charset=utf-8');
    if (!$ok) {
        header('Status: 401 Unauthorized');
    }
    echo $ok ? "Welcome\n" : "Invalid password\n";
    exit(0);
}

if ($_SERVER['REQUEST_METHOD'] === 'POST' && $op === 'signin') {
    $ok = isset($ACCOUNTS[$user]) &&
          hash_equals($ACCOUNTS[$user]['password'],
                      (string)($_POST['password'] ?? ''));
    attempt_log('signin', $ok, $user);
    header('Cache-Control: no-store');
    if ($ok) {
        header('Location: /account', true, 303);
    } elseif (isset($_POST['error_url'])) {
        header('Location: ' . $_POST['error_url']);
    } else {
        header('Location: /login.php?failed=1&return=' .
               ($_POST['return'] ?? '/'));
    }
    exit(0);
}

if ($_SERVER['REQUEST_METHOD'] === 'POST' && $op === 'otp') {
    $ok = isset($ACCOUNTS[$user]) &&
          hash_equals($ACCOUNTS[$user]['code'], (string)($_POST['code'] ?? ''));
    attempt_log('otp', $ok, $user);
    header('Cache-Control: no-store');
    if ($ok) {
        header('Location: /account');
        exit(0);
    }
    /* The old form is shown again with an error, as a 200. */
    header('Content-Type: text/html; charset=utf-8');
    echo "<!DOCTYPE html>\n<html><body><p class=\"error\">Invalid code</p>\n",
        "<form method=\"post\" action=\"?op=otp\"><input name=\"user\">",
        "<input name=\"code\"><button>Verify</button></form></body></html>\n";
    exit(0);
}

header('Content-Type: text/html; charset=utf-8');
echo "<!DOCTYPE html>\n<html><body><h1>Sign in</h1>\n",
    "<form method=\"post\" action=\"?op=login\"><input name=\"user\">",
    "<input name=\"password\" type=\"password\"><button>Sign in</button>",
    "</form>\n<h1>One-time code</h1>\n",
    "<form method=\"post\" action=\"?op=otp\"><input name=\"user\">",
    "<input name=\"code\"><button>Verify</button></form></body></html>\n";
