<?php
/*
 * wp-login.php - WordPress's reading of a login, for the tests of
 * examples/wordpress/suspect.xml: the name as wp_authenticate() reads it
 * (WordPress's own sanitize_user(), from Debian's wordpress package,
 * twice: wp_authenticate() and WP_User::get_data_by()), looked up in a
 * real MariaDB wp_users table under its collation, then, as
 * wp_authenticate_email_password() does, by e-mail address.
 *
 *   POST log, pwd   302 to /wp-admin/ on success; 200 with the form and
 *                   "incorrect" on failure (as WordPress answers)
 *
 * The database is on 127.0.0.1, port $WP_DB_PORT, database wordpress,
 * user root without a password (the tests' throwaway server).  Every
 * attempt is appended to attempts.log beside it: "login fail 1", the
 * account's ID, or "login fail -" when no account matched, so a test can
 * compare what the application checked with what was counted.
 */

/* formatting.php wants these of WordPress's other files. */
function apply_filters($tag, $value) { return $value; }
function get_locale() { return 'en_US'; }
function mbstring_binary_safe_encoding($reset = false) {}
function reset_mbstring_encoding() {}
require '/usr/share/wordpress/wp-includes/formatting.php';

function attempt_log($ok, $id)
{
    file_put_contents(__DIR__ . '/attempts.log',
                      sprintf("login %s %s\n", $ok ? 'ok' : 'fail', $id),
                      FILE_APPEND | LOCK_EX);
}

function find_user($db, $column, $value)
{
    $st = $db->prepare("SELECT ID, user_pass FROM wp_users WHERE $column = ?");
    $st->bind_param('s', $value);
    $st->execute();
    $row = $st->get_result()->fetch_assoc();
    return $row ?: null;
}

if ($_SERVER['REQUEST_METHOD'] === 'POST') {
    $name = sanitize_user((string)($_POST['log'] ?? ''));
    $db = new mysqli('127.0.0.1', 'root', '', 'wordpress',
                     (int)getenv('WP_DB_PORT'));
    $db->set_charset('utf8mb4');
    $user = find_user($db, 'user_login', sanitize_user($name));
    if ($user === null && strpos($name, '@') !== false) {
        $user = find_user($db, 'user_email', $name);
    }
    $ok = $user !== null &&
          hash_equals($user['user_pass'], (string)($_POST['pwd'] ?? ''));
    attempt_log($ok, $user !== null ? $user['ID'] : '-');
    if ($ok) {
        header('Location: /wp-admin/', true, 302);
        exit(0);
    }
}
header('Content-Type: text/html; charset=utf-8');
echo "<form method=post><p>The username or password you entered is ",
     "incorrect.</p><input name=log><input name=pwd type=password></form>\n";
