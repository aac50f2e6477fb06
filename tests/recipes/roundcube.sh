#!/bin/bash
# roundcube.sh - the Roundcube recipe (examples/recipes/roundcube/), tested:
# Debian's roundcube-core copied into a temporary root with its own
# configuration and an SQLite database, Dovecot (Debian's dovecot-imapd)
# on a free loopback port with a passwd-file holding alice, whose
# password is in the attack's list; Dovecot's own log says each password
# it checked.  The attack (tests/recipes/roundcube/attack.py: hydra cannot
# carry Roundcube's request token) tries every entry point and spelling of
# alice, first behind nginx -> php-cgi alone, then behind nginx ->
# suspect-fcgi -> php-cgi as the recipe says.
RECIPE=roundcube
. "$(dirname "$0")/common.sh"

PKG=/var/lib/roundcube
HERE=$SUSPECT_SRCDIR/tests/recipes/roundcube
R=$RECIPES/roundcube
W=$TMP/roundcube
D=$TMP/dovecot
PASSWORD='Sunflower-77'
BOB_PASSWORD='Tulip-42'

# Dovecot on 127.0.0.1:$IMAP_PORT, plain passwords from a passwd-file,
# every password check in its log (auth_verbose).
setup_dovecot() {
    mkdir -p "$D/run" "$D/home"
    chmod 755 "$D" "$D/run"
    chown 65534:65534 "$D/home"
    printf 'alice:{PLAIN}%s::::::\nbob:{PLAIN}%s::::::\n' \
        "$PASSWORD" "$BOB_PASSWORD" >"$D/users"
    chmod 644 "$D/users"
    cat >"$D/dovecot.conf" <<EOF
base_dir = $D/run
state_dir = $D/run
log_path = $D/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_verbose = yes
# No per-address penalty, no delay on failure: the test's attacks come
# from one address and must not take minutes (an attacker spreads over
# many addresses).
auth_failure_delay = 0
auth_mechanisms = plain login
first_valid_uid = 1
mail_location = maildir:$D/home/%u
default_internal_user = dovecot
default_login_user = dovenull
passdb {
  driver = passwd-file
  args = $D/users
}
userdb {
  driver = static
  args = uid=65534 gid=65534 home=$D/home/%u
}
service imap-login {
  inet_listener imap {
    port = $IMAP_PORT
  }
  inet_listener imaps {
    port = 0
  }
}
service anvil {
  chroot =
  unix_listener anvil-auth-penalty {
    mode = 0
  }
}
service imap-login {
  chroot =
}
EOF
    start dovecot dovecot -F -c "$D/dovecot.conf"
    wait_for 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$IMAP_PORT"
}

# Roundcube in $W: code from the package, configuration, database and
# logs of its own.
setup_roundcube() {
    # (cp -L: the package's tree is symlinks; one of them, a skin's
    # optional less.min.js, points nowhere.)
    cp -rL "$PKG" "$W" 2>/dev/null || true
    [ -f "$W/public_html/index.php" ] && [ -f "$W/program/include/iniset.php" ]
    rm -f "$W/.htaccess" "$W/public_html/.htaccess"
    mkdir -p "$W/logs" "$W/temp" "$W/db"
    cat >"$W/config/config.inc.php" <<EOF
<?php
\$config = [];
\$config['db_dsnw'] = 'sqlite:///$W/db/roundcube.db?mode=0646';
\$config['imap_host'] = ['127.0.0.1:$IMAP_PORT'];
\$config['smtp_host'] = '';
\$config['des_key'] = 'recipe-test-key-24-bytes';
\$config['plugins'] = [];
\$config['log_dir'] = '$W/logs/';
\$config['temp_dir'] = '$W/temp/';
\$config['skin'] = 'elastic';
\$config['enable_installer'] = false;
// Roundcube's own lock-out (3 failures a minute) falls on the owner as on
// the attacker; Suspect's device cookies let the owner in (README.md).
\$config['login_rate_limit'] = 0;
EOF
    new_db
}

# A new, empty database: no user has logged in yet (Roundcube's own
# lock-out, 3 failures a minute, only applies to users it has seen).
new_db() {
    rm -f "$W/db/roundcube.db"
    php -r '$db = new PDO("sqlite:" . $argv[1]);
            $db->exec(file_get_contents($argv[2]));' \
        "$W/db/roundcube.db" "$W/SQL/sqlite.initial.sql"
    chmod -R a+rwX "$W/logs" "$W/temp" "$W/db"
}

# Password checks Dovecot made for user $1 since the log was cut.
checks_for() {
    local from
    from=$(cat "$D/cut" 2>/dev/null || echo 0)
    tail -c +$((from + 1)) "$D/dovecot.log" |
        grep -c -E "passwd-file\\($1,.*(Password mismatch|unknown user)|Login: user=<$1>" ||
        true
}
cut_log() { stat -c %s "$D/dovecot.log" >"$D/cut"; }

# The attacks: NAME PATH PLACE USER (urlencoded as sent).
ATTACKS=(
    "login-form|/|body|alice"
    "index-php|/index.php|body|alice"
    "task-in-query|/|query|alice"
    "task-in-cookie|/index.php|cookie|alice"
    "case-Alice|/|body|Alice"
    "case-ALICE|/|body|ALICE"
    "lead-space|/|body|+alice"
    "trail-newline|/|body|alice%0A"
    "nul-first|/|body|%00alice"
    "nul-last|/|body|alice%00"
    "tab-around|/|body|%09aLiCe%0B"
    "tag-after|/|body|alice%3Cx1%3E"
    "tag-before|/|body|%3Cb%3Ealice"
    "comment|/|body|alice%3C%21--n--%3E"
    "unterminated-tag|/|body|alice%3Cx"
    "tag-with-quote|/|body|alice%3Cb+t%3D%22%3E%22%3E"
    "not-utf8|/|body|al%FFice"
    "not-utf8-then-space|/|body|%C3+alice"
)
printf '%s\n' guess1 guess2 guess3 guess4 guess5 guess6 guess7 "$PASSWORD" \
    >"$TMP/passwords"
# After the first attack, a short list (a guess costs about a second):
# without Suspect it shows each shape reaches Dovecot and finds the
# password; with Suspect, a shape that were a fresh counter would find it
# too.
printf '%s\n' guess1 "$PASSWORD" >"$TMP/passwords-short"

# attack_all LABEL: as in dokuwiki.sh (FOUND, FIRST_MS, ATTACK_MS), and
# DENIED: the guesses answered 429.  Without Suspect (label bare) every
# attack starts on a new database, since Roundcube locks a user it has
# seen after 3 failures a minute; all but the first use the short list.
attack_all() {
    local label=$1 a name path place user t0 out list
    FOUND=0
    DENIED=0
    FIRST_MS=
    t0=$(now_ms)
    for a in "${ATTACKS[@]}"; do
        IFS='|' read -r name path place user <<<"$a"
        [[ -z "${ONLY:-}" || "$name" =~ $ONLY ]] || continue
        list=$TMP/passwords
        [ "$label" != bare ] || new_db
        [ "$a" = "${ATTACKS[0]}" ] || list=$TMP/passwords-short
        out=$(python3 "$HERE/attack.py" "$BASE" "$path" "$place" "$user" \
            "$list" 2>&1)
        note_attack "$label" "$name" "$out" "$t0" alice
    done
    ATTACK_MS=$(($(now_ms) - t0))
}

IMAP_PORT=$(free_port)
setup_dovecot
setup_roundcube
PORT=$(free_port)
BASE=http://127.0.0.1:$PORT
root=$W/public_html

# ---- without Suspect: nginx -> php-cgi ------------------------------------
start_php "$TMP/php.sock"
recipe_nginx "$R/nginx.conf" "$TMP/bare.conf" "$PORT" "$root" "$TMP/php.sock"
start_nginx "$TMP/bare.conf"
check "Roundcube answers without Suspect" wait_for 10 http_up "$BASE/"
cut_log
attack_all bare
per_attack bare
BARE_CHECKS=$(checks_for alice)
say "without Suspect: the attack found the password in $FOUND of ${#ATTACKS[@]} attacks, the first after $FIRST_MS ms ($ATTACK_MS ms for all; Dovecot checked alice's password $BARE_CHECKS times)"
check "without Suspect every attack finds the password" \
    [ "$FOUND" -eq "${#ATTACKS[@]}" ]
check "without Suspect every attack makes Dovecot check alice's password" \
    [ "$(per_attack bare | awk '$NF == 0' | wc -l)" -eq 0 ]
stop_all
start dovecot dovecot -F -c "$D/dovecot.conf"
wait_for 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$IMAP_PORT"

# ---- with Suspect: nginx -> suspect-fcgi -> php-cgi, as the recipe says ---
new_db
cp "$R/limits.xml" "$TMP/limits.xml"
sed -e "s|unix:/run/suspect/fcgi.sock|unix:$TMP/fcgi.sock|" \
    -e "s|unix:/run/suspect/php.sock|unix:$TMP/php.sock|" \
    -e "s|path=\"limits.xml\"|path=\"$TMP/limits.xml\"|" \
    -e 's|<Server |<Server socketMode="0666" |' \
    "$R/suspect.xml" >"$TMP/suspect.xml"
check "the recipe's suspect.xml checks" \
    "$SUSPECT_BUILDDIR/suspect-fcgi" -c "$TMP/suspect.xml" --check
start_php "$TMP/php.sock"
start_suspect "$TMP/suspect.xml"
wait_for 10 test -S "$TMP/fcgi.sock"
recipe_nginx "$R/nginx.conf" "$TMP/guarded.conf" "$PORT" "$root" "$TMP/fcgi.sock"
start_nginx "$TMP/guarded.conf"
check "Roundcube answers behind Suspect" wait_for 10 http_up "$BASE/"
check "the login page is not counted" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/?_task=login")" = 200 ]
cut_log
# alice signs in from her browser before the attack: a device cookie.
printf '%s\n' "$PASSWORD" >"$TMP/alice-password"
owner_login() {
    JAR=$TMP/alice.jar python3 "$HERE/attack.py" "$BASE" / body alice \
        "$TMP/alice-password" | grep -q -- "password: $PASSWORD\$" || return 1
    OWNER_OK=$((OWNER_OK + 1))
}
OWNER_AFTER=login-form
check "alice signs in from her browser before the attack" owner_login
check "her browser was given a device cookie" grep -q suspect_device "$TMP/alice.jar"
attack_all guarded
check "alice's browser signs in right after the attack, at the first try" \
    owner_login
check "without her device cookie alice is locked out with the attacker" sh -c \
    "python3 '$HERE/attack.py' '$BASE' / body alice '$TMP/alice-password' |
    grep -q '^denied 1\$'"
per_attack guarded
CHECKS=$(checks_for alice)
LIMIT=$(sed -n 's/.*LimitCount="\([0-9]*\)".*/\1/p' "$R/limits.xml")
say "with Suspect: the attack found the password in $FOUND of ${#ATTACKS[@]} attacks ($ATTACK_MS ms for all; $DENIED guesses answered 429); Dovecot checked alice's password $CHECKS times (limit $LIMIT)"
check "with Suspect no attack finds the password" [ "$FOUND" -eq 0 ]
check "with Suspect Dovecot checks at most $LIMIT of the attacker's passwords for alice (besides alice's own $OWNER_OK)" \
    [ "$((CHECKS - OWNER_OK))" -le "$LIMIT" ]
printf '%s\n' "$BOB_PASSWORD" >"$TMP/bob-password"
check "with Suspect bob logs in" sh -c "python3 '$HERE/attack.py' '$BASE' / body bob \
    '$TMP/bob-password' | grep -q 'password: $BOB_PASSWORD\$'"
# Only the failures count: bob signs in 6 more times in the window (more
# than the limit), through / and /index.php in turn.
for i in 1 2 3 4 5 6; do
    path=$([ $((i % 2)) = 0 ] && echo / || echo /index.php)
    check "with Suspect bob's right password $i ($path) is let in" sh -c \
        "python3 '$HERE/attack.py' '$BASE' $path body bob '$TMP/bob-password' |
        grep -q 'password: $BOB_PASSWORD\$'"
done
finish
