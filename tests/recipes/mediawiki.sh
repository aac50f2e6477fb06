#!/bin/bash
# mediawiki.sh - the MediaWiki recipe (examples/recipes/mediawiki/), tested:
# Debian's mediawiki package served in place (/usr/share/mediawiki) with a
# wiki of its own set up by its installer in a temporary directory
# (SQLite; php-cgi finds it through MW_CONFIG_FILE), a user Alice whose
# password is in the attack's list, and a hook of MediaWiki's
# (AuthManagerLoginAuthenticateAudit) that logs every login attempt that
# reached the password check.  The attack (tests/recipes/mediawiki/
# attack.py: hydra cannot fetch MediaWiki's login token) tries every way
# in and spelling of alice, first behind nginx -> php-cgi alone, then
# behind nginx -> suspect-fcgi -> php-cgi as the recipe says.
RECIPE=mediawiki
. "$(dirname "$0")/common.sh"

PKG=/usr/share/mediawiki
HERE=$SUSPECT_SRCDIR/tests/recipes/mediawiki
R=$RECIPES/mediawiki
W=$TMP/wiki
PASSWORD='Sunflower-77'
BOB_PASSWORD='Tulip-42-tulip'

# The wiki's configuration and database in $W.
setup_wiki() {
    mkdir -p "$W/db" "$W/images" "$W/cache"
    php "$PKG/maintenance/install.php" --dbtype sqlite --dbpath "$W/db" \
        --dbname wiki --server "http://127.0.0.1:$PORT" --scriptpath "" \
        --pass 'Admin-Pass-12345' --confpath "$W" "Recipe Wiki" Admin \
        >"$TMP/install.log" 2>&1
    cat >>"$W/LocalSettings.php" <<EOF
\$wgUploadDirectory = '$W/images';
\$wgCacheDirectory = '$W/cache';
\$wgHooks['AuthManagerLoginAuthenticateAudit'][] = static function (
    \$response, \$user, \$username, \$extraData
) {
    // The name as MediaWiki looks it up (a failed attempt's is as sent).
    \$name = MediaWiki\\MediaWikiServices::getInstance()->getUserNameUtils()
        ->getCanonical( (string)\$username ) ?: (string)\$username;
    file_put_contents( '$W/checks.log', bin2hex( \$name ) . "\\n",
        FILE_APPEND | LOCK_EX );
};
EOF
    for u in "alice $PASSWORD" "bob $BOB_PASSWORD" "Jörg $PASSWORD"; do
        # shellcheck disable=SC2086
        MW_CONFIG_FILE=$W/LocalSettings.php php \
            "$PKG/maintenance/createAndPromote.php" $u >>"$TMP/install.log" 2>&1
    done
    : >"$W/checks.log"
    chmod -R a+rwX "$W"
}

# Login attempts MediaWiki checked for user $1 (its canonical name).
checks_for() {
    local hex
    hex=$(printf '%s' "$1" | od -An -tx1 | tr -d ' \n')
    grep -c -x "$hex" "$W/checks.log" || true
}

start_wiki_php() {
    rm -f "$TMP/php.sock"
    start php env MW_CONFIG_FILE="$W/LocalSettings.php" PHP_FCGI_CHILDREN=4 \
        PHP_FCGI_MAX_REQUESTS=500 php-cgi -b "$TMP/php.sock"
    wait_for 10 test -S "$TMP/php.sock"
}

# The attacks: NAME WAY USER (urlencoded as sent).
ATTACKS=(
    "api-login|api|alice"
    "api-lgname-in-query|api-query|alice"
    "clientlogin|client|alice"
    "login-form|form|alice"
    "login-form-path-info|form-path|alice"
    "underscores|api|_alice_"
    "spaces|api|+alice++"
    "direction-mark|api|%E2%80%8Ealice"
    "capital|form|Alice"
    "entity-lrm|api|%26lrm%3Balice"
    "entity-inside|api|a%26lrm%3Blice"
    "entity-rlm|api|al%26rlm%3Bice"
    "entities-two|api|%26lrm%3B%26lrm%3Balice"
    "entity-last|api|alice%26rlm%3B"
    "entities-apart|api|a%26rlm%3Bl%26lrm%3Bice"
    "user-prefix|api|User%3Aalice"
    "user-prefix-spaced|client|User+_%3A_alice"
    "entity-html5-space|api|%26ThinSpace%3Balice"
)
printf '%s\n' guess1 guess2 guess3 guess4 guess5 guess6 guess7 "$PASSWORD" \
    >"$TMP/passwords"
# After the first attack, a short list: without Suspect it shows each
# shape reaches the password check and finds the password; with Suspect,
# a shape that were a fresh counter would find it too.
printf '%s\n' guess1 "$PASSWORD" >"$TMP/passwords-short"

# attack_all LABEL: FOUND, FIRST_MS, ATTACK_MS, DENIED (as roundcube.sh).
attack_all() {
    local label=$1 a name way user t0 out list
    FOUND=0
    DENIED=0
    FIRST_MS=
    t0=$(now_ms)
    for a in "${ATTACKS[@]}"; do
        IFS='|' read -r name way user <<<"$a"
        [[ -z "${ONLY:-}" || "$name" =~ $ONLY ]] || continue
        list=$TMP/passwords
        [ "$a" = "${ATTACKS[0]}" ] || list=$TMP/passwords-short
        out=$(python3 "$HERE/attack.py" "$BASE" "$way" "$user" "$list" 2>&1)
        note_attack "$label" "$name" "$out" "$t0" Alice
    done
    ATTACK_MS=$(($(now_ms) - t0))
}

# jorg_round: the user Jörg (whose name has an accent) attacked in three
# spellings MediaWiki reads as his, 7 wrong guesses then the password
# each; JORG_FOUND = how many found it, JORG_CHECKS = MediaWiki's checks.
JORG=(J%C3%B6rg J%26ouml%3Brg User%3AJ%26ouml%3Brg)
jorg_round() {
    local u
    JORG_FOUND=0
    for u in "${JORG[@]}"; do
        if python3 "$HERE/attack.py" "$BASE" api "$u" "$TMP/passwords" |
            grep -q -- "password: $PASSWORD\$"; then
            JORG_FOUND=$((JORG_FOUND + 1))
        fi
    done
    JORG_CHECKS=$(checks_for Jörg)
}

PORT=$(free_port)
BASE=http://127.0.0.1:$PORT
setup_wiki
check "MediaWiki's installer set the wiki up" test -s "$W/db/wiki.sqlite"

# ---- without Suspect: nginx -> php-cgi ------------------------------------
start_wiki_php
recipe_nginx "$R/nginx.conf" "$TMP/bare.conf" "$PORT" "$PKG" "$TMP/php.sock"
start_nginx "$TMP/bare.conf"
check "the wiki answers without Suspect" wait_for 20 http_up "$BASE/index.php"
attack_all bare
per_attack bare
BARE_CHECKS=$(checks_for Alice)
say "without Suspect: the attack found the password in $FOUND of ${#ATTACKS[@]} attacks, the first after $FIRST_MS ms ($ATTACK_MS ms for all; MediaWiki checked Alice's password $BARE_CHECKS times)"
check "without Suspect every attack finds the password" \
    [ "$FOUND" -eq "${#ATTACKS[@]}" ]
check "without Suspect every attack makes MediaWiki check Alice's password" \
    [ "$(per_attack bare | awk '$NF == 0' | wc -l)" -eq 0 ]
jorg_round
say "without Suspect: Jörg's password found in $JORG_FOUND of ${#JORG[@]} spellings; $JORG_CHECKS checks"
check "without Suspect Jörg's spellings find his password" \
    [ "$JORG_FOUND" -eq "${#JORG[@]}" ]
stop_all
: >"$W/checks.log"

# ---- with Suspect: nginx -> suspect-fcgi -> php-cgi, as the recipe says ---
cp "$R/limits.xml" "$TMP/limits.xml"
sed -e "s|unix:/run/suspect/fcgi.sock|unix:$TMP/fcgi.sock|" \
    -e "s|unix:/run/suspect/php.sock|unix:$TMP/php.sock|" \
    -e "s|path=\"limits.xml\"|path=\"$TMP/limits.xml\"|" \
    -e 's|<Server |<Server socketMode="0666" |' \
    "$R/suspect.xml" >"$TMP/suspect.xml"
check "the recipe's suspect.xml checks" \
    "$SUSPECT_BUILDDIR/suspect-fcgi" -c "$TMP/suspect.xml" --check
start_wiki_php
start_suspect "$TMP/suspect.xml" -v
wait_for 10 test -S "$TMP/fcgi.sock"
recipe_nginx "$R/nginx.conf" "$TMP/guarded.conf" "$PORT" "$PKG" "$TMP/fcgi.sock"
start_nginx "$TMP/guarded.conf"
check "the wiki answers behind Suspect" wait_for 20 http_up "$BASE/index.php"
check "pages are not counted" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/index.php?title=Main_Page")" = 200 ]
# alice signs in from her browser before the attack: a device cookie.
printf '%s\n' "$PASSWORD" >"$TMP/alice-password"
owner_login() {
    JAR=$TMP/alice.jar python3 "$HERE/attack.py" "$BASE" form alice \
        "$TMP/alice-password" | grep -q -- "password: $PASSWORD\$" || return 1
    OWNER_OK=$((OWNER_OK + 1))
}
OWNER_AFTER=api-login
check "alice signs in from her browser before the attack" owner_login
check "her browser was given a device cookie" grep -q suspect_device "$TMP/alice.jar"
attack_all guarded
check "alice's browser signs in right after the attack, at the first try" \
    owner_login
check "without her device cookie alice is locked out with the attacker" sh -c \
    "python3 '$HERE/attack.py' '$BASE' form alice '$TMP/alice-password' |
    grep -q '^denied 1\$'"
per_attack guarded
CHECKS=$(checks_for Alice)
LIMIT=$(sed -n 's/.*LimitCount="\([0-9]*\)".*/\1/p' "$R/limits.xml")
say "with Suspect: the attack found the password in $FOUND of ${#ATTACKS[@]} attacks ($ATTACK_MS ms for all; $DENIED guesses answered 429); MediaWiki checked Alice's password $CHECKS times (limit $LIMIT)"
check "with Suspect no attack finds the password" [ "$FOUND" -eq 0 ]
check "with Suspect MediaWiki checks at most $LIMIT of the attacker's passwords for Alice (besides alice's own $OWNER_OK)" \
    [ "$((CHECKS - OWNER_OK))" -le "$LIMIT" ]
printf '%s\n' "$PASSWORD" >"$TMP/jorg-password"
check "with Suspect Jörg logs in as he types his name" sh -c "python3 \
    '$HERE/attack.py' '$BASE' api J%C3%B6rg '$TMP/jorg-password' |
    grep -q 'password: $PASSWORD\$'"
jorg_round
say "with Suspect: Jörg's password found in $JORG_FOUND of ${#JORG[@]} spellings; $JORG_CHECKS checks (limit $LIMIT)"
check "with Suspect no spelling of Jörg finds his password" [ "$JORG_FOUND" -eq 0 ]
# His own right password just before is one check more, which does not
# count: only what failed does.
check "with Suspect MediaWiki checks Jörg's password at most $LIMIT times besides his own login" \
    [ "$JORG_CHECKS" -le $((LIMIT + 1)) ]
check "with Suspect an entity of HTML 5 only was refused" \
    grep -q 'status=400 (identity refused by its normalize)' "$TMP/suspect.log"
printf '%s\n' "$BOB_PASSWORD" >"$TMP/bob-password"
check "with Suspect bob logs in" sh -c "python3 '$HERE/attack.py' '$BASE' api bob \
    '$TMP/bob-password' | grep -q 'password: $BOB_PASSWORD\$'"
# Only the failures count: bob signs in 6 more times in the window (more
# than the limit), through the form, the API and clientlogin in turn.
for i in 1 2 3 4 5 6; do
    way=$(echo "form api client" | cut -d' ' -f$((i % 3 + 1)))
    check "with Suspect bob's right password $i ($way) is let in" sh -c \
        "python3 '$HERE/attack.py' '$BASE' $way bob '$TMP/bob-password' |
        grep -q 'password: $BOB_PASSWORD\$'"
done
finish
