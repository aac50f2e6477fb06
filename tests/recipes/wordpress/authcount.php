<?php
/*
 * authcount.php - a must-use plugin of the recipe test
 * (tests/recipes/wordpress.sh): WordPress says what it performed, one
 * line each in the file SUSPECT_AUTHCOUNT_LOG names (wp-config.php):
 *   check LOGIN   a password of LOGIN checked (wp_authenticate_user:
 *                 the login form and XML-RPC, by name or by e-mail; and
 *                 the application passwords of a REST request's Basic
 *                 auth of an API request (REST or XML-RPC), compared:
 *                 their success, or the failure "incorrect_password"
 *                 that follows the comparisons.  Within XML-RPC's login
 *                 WordPress compares them too after the password
 *                 failed: one attempt, logged once)
 *   login LOGIN   a login that succeeded (wp_login)
 *   failed NAME   a login that failed, as typed (wp_login_failed)
 *   reset LOGIN   a reset mail WordPress sends (retrieve_password)
 * The mails themselves go nowhere (pre_wp_mail): the test has no MTA.
 */
function authcount_log($what, $who)
{
    file_put_contents(SUSPECT_AUTHCOUNT_LOG, $what . ' ' . $who . "\n",
                      FILE_APPEND | LOCK_EX);
}

add_filter('wp_authenticate_user', function ($user, $password) {
    if ($user instanceof WP_User) {
        authcount_log('check', $user->user_login);
    }
    return $user;
}, 0, 2);
add_action('wp_login', function ($login) {
    authcount_log('login', $login);
});
add_action('wp_login_failed', function ($name) {
    authcount_log('failed', rawurlencode($name));
});
add_action('retrieve_password', function ($login) {
    authcount_log('reset', $login);
});
// Inside wp_authenticate() (the form, XML-RPC's username and password),
// the application passwords are compared after the password failed: one
// attempt, already logged by wp_authenticate_user.  Outside it they are
// the Basic auth of an API request (REST, and XML-RPC too).
$GLOBALS['authcount_in_authenticate'] = false;
add_filter('authenticate', function ($user) {
    $GLOBALS['authcount_in_authenticate'] = true;
    return $user;
}, -1000);
add_filter('authenticate', function ($user) {
    $GLOBALS['authcount_in_authenticate'] = false;
    return $user;
}, PHP_INT_MAX);
add_action('application_password_did_authenticate', function ($user) {
    if (!$GLOBALS['authcount_in_authenticate']) {
        authcount_log('check', $user->user_login);
    }
});
add_action('application_password_failed_authentication', function ($error) {
    if ($GLOBALS['authcount_in_authenticate']
        || !in_array('incorrect_password', $error->get_error_codes(), true)
        || !isset($_SERVER['PHP_AUTH_USER'])) {
        return;
    }
    // The account WordPress compared: as wp_authenticate_application_password()
    // finds it.
    $name = $_SERVER['PHP_AUTH_USER'];
    $user = get_user_by('login', $name);
    if (!$user && is_email($name)) {
        $user = get_user_by('email', $name);
    }
    if ($user) {
        authcount_log('check', $user->user_login);
    }
});
add_filter('pre_wp_mail', function () {
    return true;
});
