<?php
/*
 * install.php - installs the recipe test's WordPress (tests/recipes/
 * wordpress.sh) without a browser: the site, its admin, alice (author,
 * alice@example.org) and bob (bob@example.org, the same password), then pretty permalinks (for /wp-json/)
 * and an application password for each of alice and bob, printed on
 * stdout, one a line.
 *
 *   php install.php ROOT ADMIN-PASSWORD ALICE-PASSWORD
 */
define('WP_INSTALLING', true);
$_SERVER['HTTP_HOST'] = '127.0.0.1';
$_SERVER['REQUEST_URI'] = '/';
require $argv[1] . '/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/upgrade.php';

$r = wp_install('Recipe test', 'admin', 'admin@example.org', false, '',
                $argv[2]);
if (is_wp_error($r)) {
    fwrite(STDERR, "install.php: wp_install failed\n");
    exit(1);
}
$id = wp_insert_user(array('user_login' => 'alice', 'user_pass' => $argv[3],
                           'user_email' => 'alice@example.org',
                           'role' => 'author'));
if (is_wp_error($id)) {
    fwrite(STDERR, 'install.php: ' . $id->get_error_message() . "\n");
    exit(1);
}
$bob = wp_insert_user(array('user_login' => 'bob', 'user_pass' => $argv[3],
                            'user_email' => 'bob@example.org'));
if (is_wp_error($bob)) {
    fwrite(STDERR, 'install.php: ' . $bob->get_error_message() . "\n");
    exit(1);
}
update_option('permalink_structure', '/%postname%/');
foreach (array($id, $bob) as $user) {
    $app = WP_Application_Passwords::create_new_application_password(
        $user, array('name' => 'recipe'));
    if (is_wp_error($app)) {
        fwrite(STDERR, 'install.php: ' . $app->get_error_message() . "\n");
        exit(1);
    }
    echo $app[0], "\n";
}
