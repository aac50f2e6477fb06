#!/bin/bash
# wordpress.sh - the WordPress recipe (examples/recipes/wordpress/), tested:
# Debian's wordpress package copied into a temporary root with a
# wp-config.php of its own, a throwaway MariaDB (temporary datadir, free
# loopback port), the site installed by tests/recipes/wordpress/install.php
# with alice (an author, alice@example.org, an application password), and
# the must-use plugin tests/recipes/wordpress/authcount.php, through which
# WordPress logs every password check and every reset mail it sends.
# First behind nginx -> php-cgi alone (each attack reaches a password
# check), then behind nginx -> suspect-fcgi -> php-cgi as the recipe says:
# hydra over the login form, curl over XML-RPC (single calls and
# system.multicall batches of 20) and the REST API's Basic auth, spellings
# of alice mixed, and reset mails.
RECIPE=wordpress
. "$(dirname "$0")/common.sh"

PKG=/usr/share/wordpress
HERE=$SUSPECT_SRCDIR/tests/recipes/wordpress
R=$RECIPES/wordpress
W=$TMP/wp
DB=$TMP/db
LOG=$W/authcount.log
PASSWORD='Sunflower-77'
ADMIN_PASSWORD='Admin-Recipe-91'

# A throwaway MariaDB in $DB on 127.0.0.1:$DB_PORT (no grant tables: any
# user, any password), as the wordpress suite starts it.
setup_db() {
    mkdir -p "$DB"
    mariadb-install-db --no-defaults --datadir="$DB/data" --user=root \
        --auth-root-authentication-method=normal --skip-test-db \
        >"$DB/install.log" 2>&1 || {
        say "mariadb-install-db failed: $(tail -n 3 "$DB/install.log")"
        return 1
    }
    DB_PORT=$(free_port)
    start mariadb mariadbd --no-defaults --datadir="$DB/data" --user=root \
        --bind-address=127.0.0.1 --port="$DB_PORT" --socket="$DB/mysql.sock" \
        --pid-file="$DB/mariadb.pid" --skip-grant-tables --skip-log-bin \
        --innodb-buffer-pool-size=32M
    wait_for 60 bash -c "exec 3<>/dev/tcp/127.0.0.1/$DB_PORT" || {
        say "MariaDB does not listen: $(tail -n 3 "$TMP/mariadb.log")"
        return 1
    }
    sql "CREATE DATABASE wordpress DEFAULT CHARSET utf8mb4"
}
sql() {
    mariadb --no-defaults --host=127.0.0.1 --port="$DB_PORT" --user=root \
        --batch --skip-column-names -e "$1"
}

# WordPress in $W: the package's code, a wp-config.php of our own (the
# package's reads /etc/wordpress/config-HOST.php), authcount as a
# must-use plugin, installed with alice.
setup_wordpress() {
    cp -r "$PKG" "$W"
    rm -f "$W/.htaccess"
    mkdir -p "$W/wp-content/mu-plugins" "$W/wp-content/uploads"
    cp "$HERE/authcount.php" "$W/wp-content/mu-plugins/"
    cat >"$W/wp-config.php" <<CONF
<?php
define('DB_NAME', 'wordpress');
define('DB_USER', 'root');
define('DB_PASSWORD', '');
define('DB_HOST', '127.0.0.1:$DB_PORT');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
define('WP_HOME', 'http://127.0.0.1:$PORT');
define('WP_SITEURL', 'http://127.0.0.1:$PORT');
define('WP_CONTENT_DIR', '$W/wp-content');
// Application passwords without HTTPS (WordPress 6.1).
define('WP_ENVIRONMENT_TYPE', 'local');
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('SUSPECT_AUTHCOUNT_LOG', '$LOG');
\$table_prefix = 'wp_';
if (!defined('ABSPATH')) {
    define('ABSPATH', __DIR__ . '/');
}
require_once ABSPATH . 'wp-settings.php';
CONF
    : >"$LOG"
    php "$HERE/install.php" "$W" "$ADMIN_PASSWORD" "$PASSWORD" >"$TMP/app-passwords"
    APP_PASSWORD=$(sed -n 1p "$TMP/app-passwords")
    BOB_APP_PASSWORD=$(sed -n 2p "$TMP/app-passwords")
    [ -n "$APP_PASSWORD" ] && [ -n "$BOB_APP_PASSWORD" ]
    : >"$LOG"
    chmod -R a+rwX "$W/wp-content" "$LOG"
}

# Password checks WordPress made of account $1 (its login), reset mails
# it sent ($2 = reset), since the log was cut.
checks_for() {
    tail -c +$(($(cat "$TMP/cut" 2>/dev/null || echo 0) + 1)) "$LOG" |
        grep -c -x "${2:-check} $1" || true
}
cut_log() { stat -c %s "$LOG" >"$TMP/cut"; }

# Twelve guesses, the password last: more than the limit (5) and hydra's
# parallel tasks (4) allow; a short list (a wrong guess, then the
# password) for the shapes after the first without Suspect.
printf '%s\n' guess1 guess2 guess3 guess4 guess5 guess6 guess7 guess8 guess9 \
    guess10 guess11 "$PASSWORD" >"$TMP/passwords"
printf '%s\n' guess1 "$PASSWORD" >"$TMP/passwords-short"

# found NAME LOGIN GUESS: notes a guess that was let in, as hydra does.
found() { echo "login: $2 password: $3" >>"$TMP/hydra-$1.log"; }

# form_run NAME LOGIN LIST: hydra over wp-login.php, a failure told by
# WordPress's error box (login_error: "The password you entered for the
# username alice is incorrect", "... is not registered"), as an attacker
# runs it.  hydra then takes a 429 for a find and stops there: such a
# "password" is counted in FALSE_FINDS (common.sh), not as found.
form_run() {
    hydra_run "$1" -l "$2" -P "$3" -t 4 -s "$PORT" 127.0.0.1 http-post-form \
        "/wp-login.php:log=^USER^&pwd=^PASS^&wp-submit=Log+In:F=login_error"
}

# mp_run NAME LOGIN LIST: the login form posted as multipart/form-data
# (as a browser posts a form with a file input), with curl.
mp_run() {
    local p rc=1
    while read -r p; do
        if curl -s -D - -o /dev/null -F "log=$2" -F "pwd=$p" -F 'wp-submit=Log In' \
            "$BASE/wp-login.php" | grep -q 'wordpress_logged_in_'; then
            found "$1" "$2" "$p"
            rc=0
            break
        fi
    done <"$3"
    return $rc
}

# rpc_body METHOD PARAMS...: an XML-RPC call (strings), or with METHOD
# system.multicall, PARAMS are "login password" pairs of wp.getUsersBlogs.
xml_escape() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' <<<"$1"; }
rpc_call() {
    local m=$1 p
    shift
    printf '<?xml version="1.0"?><methodCall><methodName>%s</methodName><params>' "$m"
    for p in "$@"; do
        printf '<param><value><string>%s</string></value></param>' "$(xml_escape "$p")"
    done
    printf '</params></methodCall>'
}
rpc_multicall() { # LOGIN GUESS...
    local login=$1 g
    shift
    printf '<?xml version="1.0"?><methodCall><methodName>system.multicall</methodName><params><param><value><array><data>'
    for g in "$@"; do
        printf '<value><struct><member><name>methodName</name><value><string>wp.getUsersBlogs</string></value></member><member><name>params</name><value><array><data><value><string>%s</string></value><value><string>%s</string></value></data></array></value></member></struct></value>' \
            "$(xml_escape "$login")" "$(xml_escape "$g")"
    done
    printf '</data></array></value></param></params></methodCall>'
}
rpc_post() { # BODY: the answer's status line last
    curl -s -w '\nstatus=%{http_code}\n' -H 'Content-Type: text/xml' \
        --data-binary "$1" "$BASE/xmlrpc.php"
}

# rpc_run NAME LOGIN LIST: wp.getUsersBlogs(LOGIN, guess), one call a
# request; a success lists alice's blogs (isAdmin).
rpc_run() {
    local p rc=1
    while read -r p; do
        if rpc_post "$(rpc_call wp.getUsersBlogs "$2" "$p")" | grep -q isAdmin; then
            found "$1" "$2" "$p"
            rc=0
            break
        fi
    done <"$3"
    return $rc
}

# multi_run NAME LOGIN LIST: the list in system.multicall batches of 20
# (the list repeated to fill them, the password last).
multi_run() {
    local -a g
    local rc=1 i
    mapfile -t g <"$3"
    while [ "${#g[@]}" -lt 40 ]; do g=(guess0 "${g[@]}"); done
    for i in 0 20; do
        if rpc_post "$(rpc_multicall "$2" "${g[@]:$i:20}")" | grep -q isAdmin; then
            found "$1" "$2" "multicall"
            rc=0
            break
        fi
    done
    return $rc
}

# rest_run NAME LOGIN LIST: Basic auth on the REST API (an application
# password); a success is alice's own record.
rest_run() {
    local p rc=1
    while read -r p; do
        if [ "$(curl -s -o /dev/null -w '%{http_code}' -u "$2:$p" \
            "$BASE/wp-json/wp/v2/users/me")" = 200 ]; then
            found "$1" "$2" "$p"
            rc=0
            break
        fi
    done <"$3"
    return $rc
}

# envelope_run NAME LOGIN LIST: the same with _envelope (?rest_route=,
# without pretty permalinks): WordPress answers 200 whatever happened and
# puts the status in the body.
envelope_run() {
    local p rc=1
    while read -r p; do
        if curl -s -u "$2:$p" "$BASE/?rest_route=/wp/v2/users/me&_envelope=1" |
            grep -q '"status":200'; then
            found "$1" "$2" "$p"
            rc=0
            break
        fi
    done <"$3"
    return $rc
}

# reset_run LOGIN: asks for a reset mail; prints the status.
reset_run() {
    curl -s -o /dev/null -w '%{http_code}\n' --data-urlencode "user_login=$1" \
        -d 'redirect_to=&wp-submit=Get+New+Password' \
        "$BASE/wp-login.php?action=lostpassword"
}

# The attacks: NAME KIND LOGIN (raw; hydra and curl encode it).  Every
# entry point that makes WordPress check alice's password, and spellings
# WordPress reads as alice.
ATTACKS=(
    "login-form|form|alice"
    "case-ALICE|form|ALICE"
    "e-mail|form|alice@example.org"
    "fullwidth|form|ａｌｉｃｅ"
    "percent|form|al%41ice"
    "tag|form|al<b>ice"
    "multipart|mp|Alice"
    "xmlrpc|rpc|alice"
    "xmlrpc-e-mail|rpc|ALICE@Example.ORG"
    "xmlrpc-circled|rpc|ⓐⓛⓘⓒⓔ"
    "multicall|multi|alice"
    "multicall-tag|multi|<b>alice</b>"
    "rest|rest|alice"
    "rest-e-mail|rest|alice@example.org"
    "rest-envelope|envelope|ALICE"
)

# attack_all LABEL: every attack (FOUND, FIRST_MS, ATTACK_MS as in
# dokuwiki.sh); without Suspect all but the first on the short list.
attack_all() {
    local label=$1 a name kind login t0 list
    FOUND=0
    FIRST_MS=
    t0=$(now_ms)
    for a in "${ATTACKS[@]}"; do
        IFS='|' read -r name kind login <<<"$a"
        [[ -z "${ONLY:-}" || "$name" =~ $ONLY ]] || continue
        list=$TMP/passwords
        [ "$label" = guarded ] || [ "$a" = "${ATTACKS[0]}" ] || list=$TMP/passwords-short
        [[ "$kind" != rest && "$kind" != envelope ]] || list=$TMP/app-$(basename "$list")
        if "${kind}_run" "$label-$name" "$login" "$list"; then
            FOUND=$((FOUND + 1))
            [ -n "$FIRST_MS" ] || FIRST_MS=$(($(now_ms) - t0))
        fi
        echo "$name checks=$(checks_for alice)" >>"$TMP/$label.tally"
    done
    ATTACK_MS=$(($(now_ms) - t0))
}

PORT=$(free_port)
BASE=http://127.0.0.1:$PORT
setup_db
setup_wordpress
# The database outlives the web servers of each half.
DB_PIDS=$PIDS
PIDS=""
trap 'PIDS="$PIDS $DB_PIDS"; cleanup' EXIT
MYSQL_OPTS="--host=127.0.0.1 --port=$DB_PORT --user=root" \
    "$SUSPECT_SRCDIR/examples/wordpress/wp-aliases" "$TMP/wp-aliases.tsv"
check "wp-aliases maps alice's e-mail address to her login" \
    grep -qx "alice@example.org	alice" "$TMP/wp-aliases.tsv"

for f in passwords passwords-short; do
    sed "\$s/.*/$APP_PASSWORD/" "$TMP/$f" >"$TMP/app-$f"
done

# ---- without Suspect: nginx -> php-cgi ------------------------------------
start_php "$TMP/php.sock"
recipe_nginx "$R/nginx.conf" "$TMP/bare.conf" "$PORT" "$W" "$TMP/php.sock"
start_nginx "$TMP/bare.conf"
check "WordPress answers without Suspect" wait_for 20 http_up "$BASE/wp-login.php"
cut_log
attack_all bare
per_attack bare
BARE_CHECKS=$(checks_for alice)
say "without Suspect: the attacks found the password in $FOUND of ${#ATTACKS[@]}, the first after $FIRST_MS ms ($ATTACK_MS ms for all; WordPress checked alice's password $BARE_CHECKS times)"
# A multicall finds nothing (WordPress stops checking after the first
# failure of a request), but each checks at least once.
check "without Suspect every attack but the multicalls finds the password" \
    [ "$FOUND" -eq $((${#ATTACKS[@]} - 2)) ]
check "without Suspect every attack makes WordPress check alice's password" \
    [ "$(per_attack bare | awk '$NF == 0' | wc -l)" -eq 0 ]
for i in 1 2 3 4; do reset_run alice >/dev/null; done
check "without Suspect WordPress sends every reset mail asked for (4)" \
    [ "$(checks_for alice reset)" -eq 4 ]
stop_all

# ---- with Suspect: nginx -> suspect-fcgi -> php-cgi, as the recipe says ---
cp "$R/limits.xml" "$TMP/limits.xml"
sed -e "s|unix:/run/suspect/fcgi.sock|unix:$TMP/fcgi.sock|" \
    -e "s|unix:/run/suspect/php.sock|unix:$TMP/php.sock|" \
    -e "s|path=\"limits.xml\"|path=\"$TMP/limits.xml\"|" \
    -e "s|aliases:/var/lib/suspect/wp-aliases.tsv|aliases:$TMP/wp-aliases.tsv|" \
    -e 's|<Server |<Server socketMode="0666" |' \
    "$R/suspect.xml" >"$TMP/suspect.xml"
check "the recipe's suspect.xml checks" \
    "$SUSPECT_BUILDDIR/suspect-fcgi" -c "$TMP/suspect.xml" --check
start_php "$TMP/php.sock"
start_suspect "$TMP/suspect.xml" -v
wait_for 10 test -S "$TMP/fcgi.sock"
recipe_nginx "$R/nginx.conf" "$TMP/guarded.conf" "$PORT" "$W" "$TMP/fcgi.sock"
start_nginx "$TMP/guarded.conf"
check "WordPress answers behind Suspect" wait_for 20 http_up "$BASE/wp-login.php"
check "the login page is not counted" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/wp-login.php")" = 200 ]
cut_log

# Only what failed counts: alice signs in 6 times in the window (more
# than the limit), by name and by e-mail address, each let in.
login_ok() { # LOGIN PASSWORD
    curl -s -D - -o /dev/null --data-urlencode "log=$1" \
        --data-urlencode "pwd=$2" -d 'wp-submit=Log+In' "$BASE/wp-login.php" |
        grep -q 'wordpress_logged_in_'
}
for i in 1 2 3 4 5 6; do
    login=$([ $((i % 2)) = 0 ] && echo alice || echo alice@example.org)
    check "alice's right password $i ($login) is let in" login_ok "$login" "$PASSWORD"
done
# A legitimate XML-RPC client (one call, the right password) and REST
# client (her application password) work before the attack; the methods
# that check no password pass.
check "alice's XML-RPC client gets her blogs" sh -c \
    "curl -s -H 'Content-Type: text/xml' --data-binary '$(rpc_call wp.getUsersBlogs alice "$PASSWORD")' \
    '$BASE/xmlrpc.php' | grep -q isAdmin"
check "alice's REST client reads her record" [ "$(curl -s -o /dev/null -w '%{http_code}' \
    -u "alice:$APP_PASSWORD" "$BASE/wp-json/wp/v2/users/me")" = 200 ]
check "system.listMethods passes" sh -c "curl -s -H 'Content-Type: text/xml' \
    --data-binary '$(rpc_call system.listMethods)' '$BASE/xmlrpc.php' |
    grep -q wp.getUsersBlogs"
check "pingback.ping passes (WordPress answers it)" sh -c "curl -s -H 'Content-Type: text/xml' \
    --data-binary '$(rpc_call pingback.ping http://example.org/ "$BASE/?p=1")' \
    '$BASE/xmlrpc.php' | grep -q faultCode"
say "alice's own password checks before the attack: $(checks_for alice)"
cut_log

attack_all guarded
per_attack guarded
CHECKS=$(checks_for alice)
LIMIT=$(sed -n '/Action="WordPressLogin"/,/>/s/.*LimitCount="\([0-9]*\)".*/\1/p' "$R/limits.xml")
say "with Suspect: the attacks found the password in $FOUND of ${#ATTACKS[@]} ($ATTACK_MS ms for all; hydra reported $FALSE_FINDS false passwords); WordPress checked alice's password $CHECKS times (limit $LIMIT)"
check "with Suspect no attack finds the password" [ "$FOUND" -eq 0 ]
check "with Suspect WordPress checks at most $LIMIT of alice's passwords" \
    [ "$CHECKS" -le "$LIMIT" ]
check "with Suspect an XML-RPC call sent as a form is refused (415)" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' --data-binary \
        "$(rpc_call wp.getUsersBlogs alice guess)" "$BASE/xmlrpc.php")" = 415 ]
check "another account (admin) still logs in" login_ok admin "$ADMIN_PASSWORD"

# REST with _envelope, which WordPress answers 200 whatever happened: bob,
# whom nobody has tried yet, attacked there alone.
cut_log
sed "\$s/.*/$BOB_APP_PASSWORD/" "$TMP/passwords" >"$TMP/bob-app-passwords"
envelope_run guarded-bob-envelope bob "$TMP/bob-app-passwords" && found=1 || found=0
say "with Suspect: _envelope alone against bob: found=$found, WordPress checked bob's application passwords $(checks_for bob) times"
check "with Suspect the _envelope attack on a fresh account finds nothing" [ "$found" = 0 ]
check "... and WordPress checks at most $LIMIT of its guesses" [ "$(checks_for bob)" -le "$LIMIT" ]
# A multicall of 20 guesses for admin, whom nobody has tried yet: 20
# attempts, more than the limit, so the whole request is refused and
# WordPress checks none of them.
cut_log
g=()
for i in $(seq 1 20); do g+=("guess$i"); done
check "with Suspect a multicall of 20 guesses for a fresh account is refused whole" \
    sh -c "curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: text/xml' \
    --data-binary '$(rpc_multicall admin "${g[@]}")' '$BASE/xmlrpc.php' | grep -qx 429"
check "... and WordPress checked none of them" [ "$(checks_for admin)" -eq 0 ]

# Reset mails: 8 asked for alice under 6 spellings, at most the route's
# limit sent.
RLIMIT=$(sed -n '/Action="WordPressReset"/,/>/s/.*LimitCount="\([0-9]*\)".*/\1/p' "$R/limits.xml")
cut_log
for u in alice ALICE alice@example.org ａｌｉｃｅ alice al%41ice Alice@Example.org alice; do
    echo "$u $(reset_run "$u")" >>"$TMP/resets.log"
done
RESETS=$(checks_for alice reset)
say "with Suspect: 8 reset mails asked for alice, WordPress sent $RESETS (limit $RLIMIT): $(awk '{print $2}' "$TMP/resets.log" | tr '\n' ' ')"
check "with Suspect WordPress sends at most $RLIMIT reset mails for alice" \
    [ "$RESETS" -le "$RLIMIT" ]
check "with Suspect the reset mails past the limit were answered 429" \
    [ "$(grep -c ' 429$' "$TMP/resets.log")" -ge $((8 - RLIMIT)) ]
check "with Suspect admin's reset mail is sent" [ "$(reset_run admin)" = 302 ]
# $_REQUEST['action'] from a cookie: which copy PHP keeps depends on
# php.ini, so a cookie that disagrees with the query is refused.
check "with Suspect action=login in a cookie beside ?action=lostpassword is refused (400)" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' -b action=login \
        -d 'log=alice&pwd=guess&user_login=alice' \
        "$BASE/wp-login.php?action=lostpassword")" = 400 ]
finish
