<?php
/*
 * wp-login.php - one script, two actions, told apart as WordPress's
 * wp-login.php tells them: $_REQUEST['action'].
 *
 *   action=lostpassword  user_login   200 "Reset mail sent" (always)
 *   anything else        log, pwd     200 "Welcome <log>" on success,
 *                                     401 "Invalid password" on failure
 *
 * $_REQUEST is built as PHP builds it without a php.ini (request_order
 * unset, variables_order "EGPCS"): GET, POST, then cookies, the last
 * winning, whatever this php.ini says.  alice's password is "correct
 * horse".  Every password check and reset is appended to attempts.log
 * beside it ("wplogin fail alice", "reset ok alice"), so a test can
 * compare what the application performed with what was counted.
 */

$request = array_merge($_GET, $_POST, $_COOKIE);
$action = (string)($request['action'] ?? 'login');

function performed($what, $ok, $user)
{
    file_put_contents(__DIR__ . '/attempts.log',
                      sprintf("%s %s %s\n", $what, $ok ? 'ok' : 'fail',
                              preg_replace('/[^A-Za-z0-9_.-]/', '?', $user)),
                      FILE_APPEND | LOCK_EX);
}

header('Cache-Control: no-store');
header('Content-Type: text/plain; charset=utf-8');
if ($action === 'lostpassword') {
    performed('reset', true, (string)($request['user_login'] ?? ''));
    echo "Reset mail sent\n";
    exit(0);
}
$log = (string)($request['log'] ?? '');
$ok = $log === 'alice' &&
      hash_equals('correct horse', (string)($request['pwd'] ?? ''));
performed('wplogin', $ok, $log);
if (!$ok) {
    header('Status: 401 Unauthorized');
    echo "Invalid password\n";
    exit(0);
}
echo "Welcome ", htmlspecialchars($log), "\n";
