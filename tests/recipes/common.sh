# common.sh - what the recipe tests share (sourced by tests/recipes/*.sh).
#
# A recipe test runs a real application from its Debian package in a
# temporary root, behind nginx -> suspect-fcgi -> php-cgi as the recipe
# in examples/recipes/<app>/ says, attacks its login with hydra, and
# counts the password checks the application itself made (its own log,
# or a small hook the test adds).  Everything listens on 127.0.0.1 (free
# ports) or in the temporary root, and is stopped on exit.
#
# Needs: SUSPECT_BUILDDIR (suspect-fcgi), SUSPECT_SRCDIR (the recipes),
# nginx, php-cgi, hydra, curl, python3.  SUSPECT_TEST_SCALE scales every
# deadline (a slow machine).

set -eu

: "${SUSPECT_SRCDIR:?}"
: "${SUSPECT_BUILDDIR:?}"
SCALE=${SUSPECT_TEST_SCALE:-1}
RECIPES=$SUSPECT_SRCDIR/examples/recipes
FAILS=0
PASSES=0
PIDS=""

TMP=$(mktemp -d /tmp/suspect-recipe.XXXXXX)
chmod 755 "$TMP"
cleanup() {
    for p in $PIDS; do
        kill "$p" 2>/dev/null || true
    done
    for p in $PIDS; do
        wait "$p" 2>/dev/null || true
    done
    [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
# Stopped by a signal, the script still stops what it started.
trap 'exit 130' INT
trap 'exit 143' TERM

say() { printf '%s: %s\n' "$RECIPE" "$*"; }

# ok CONDITION-TEXT: counts a passed check; fail TEXT: a failed one.
ok() { PASSES=$((PASSES + 1)); say "ok: $*"; }
fail() { FAILS=$((FAILS + 1)); say "FAIL: $*"; }
check() { # check TEXT COMMAND...
    local what=$1
    shift
    if "$@"; then ok "$what"; else fail "$what"; fi
}

# A TCP port nothing listens on (127.0.0.1).
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Milliseconds since the epoch.
now_ms() { date +%s%3N; }

# wait_for SECONDS COMMAND...: runs COMMAND until it succeeds, within
# SECONDS x SCALE.
wait_for() {
    local end=$(($(date +%s) + $1 * SCALE))
    shift
    until "$@" >/dev/null 2>&1; do
        if [ "$(date +%s)" -ge "$end" ]; then
            return 1
        fi
        sleep 0.1
    done
}

# start NAME COMMAND...: runs COMMAND in the background, logs in $TMP/NAME.log.
start() {
    local name=$1
    shift
    "$@" >"$TMP/$name.log" 2>&1 &
    PIDS="$PIDS $!"
}

# stop_all: stops what start() started (a new setup follows).
stop_all() {
    for p in $PIDS; do
        kill "$p" 2>/dev/null || true
    done
    for p in $PIDS; do
        wait "$p" 2>/dev/null || true
    done
    PIDS=""
}

# php-cgi as a FastCGI server on unix socket $1, INI settings after.
start_php() {
    local sock=$1
    shift
    rm -f "$sock"
    start "php-$(basename "$sock")" env PHP_FCGI_CHILDREN=4 \
        PHP_FCGI_MAX_REQUESTS=500 php-cgi -b "$sock" "$@"
    wait_for 10 test -S "$sock"
}

# nginx with the server block file $1 (placeholders already replaced),
# prefix $TMP/nginx.
start_nginx() {
    local block=$1
    mkdir -p "$TMP/nginx/logs" "$TMP/nginx/tmp"
    cp /etc/nginx/fastcgi_params "$TMP/nginx/"
    cat >"$TMP/nginx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
error_log $TMP/nginx/logs/error.log warn;
pid $TMP/nginx/nginx.pid;
events { worker_connections 256; }
http {
    include /etc/nginx/mime.types;
    access_log $TMP/nginx/logs/access.log;
    client_body_temp_path $TMP/nginx/tmp/body;
    fastcgi_temp_path $TMP/nginx/tmp/fastcgi;
    proxy_temp_path $TMP/nginx/tmp/proxy;
    scgi_temp_path $TMP/nginx/tmp/scgi;
    uwsgi_temp_path $TMP/nginx/tmp/uwsgi;
    include $block;
}
EOF
    start nginx nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf"
}

# suspect-fcgi with suspect.xml $1, options after (-v: refusals logged).
start_suspect() {
    local conf=$1
    shift
    start suspect "$SUSPECT_BUILDDIR/suspect-fcgi" -c "$conf" "$@"
}

# http_up URL: true once something answers HTTP at URL.
http_up() {
    curl -s -o /dev/null -m 2 "$1"
}

# The server block of a recipe with its placeholders replaced:
# recipe_nginx RECIPE-FILE OUT PORT ROOT FCGI-SOCKET.
recipe_nginx() {
    sed -e "s|listen 80;|listen 127.0.0.1:$3;|" \
        -e "s|@ROOT@|$4|g" \
        -e "s|unix:/run/suspect/fcgi.sock|unix:$5|g" "$1" >"$2"
}

# hydra_run NAME ARGS...: one hydra attack, its output in $TMP/hydra-NAME.log,
# its time in HYDRA_MS; true when hydra found the real password, $PASSWORD.
# A wrong "password" hydra reports (a tool that takes any answer but its
# failure text for a success reads a 429 so) is counted in FALSE_FINDS.
FALSE_FINDS=0
hydra_run() {
    local name=$1
    local t0
    shift
    t0=$(now_ms)
    hydra -I "$@" >"$TMP/hydra-$name.log" 2>&1 || true
    HYDRA_MS=$(($(now_ms) - t0))
    if grep 'password:' "$TMP/hydra-$name.log" | grep -qv -- "password: $PASSWORD\$"; then
        FALSE_FINDS=$((FALSE_FINDS + 1))
    fi
    grep -q -- "password: $PASSWORD\$" "$TMP/hydra-$name.log"
}

# note_attack LABEL NAME OUT T0 ACCOUNT: the end of one scripted attack
# (attack.py's output OUT, the round started at T0): its log kept, FOUND,
# FIRST_MS and DENIED moved on, and the application's count of ACCOUNT's
# password checks added to the round's tally.
note_attack() {
    local label=$1 name=$2 out=$3 t0=$4 account=$5
    echo "$out" >"$TMP/attack-$label-$name.log"
    if grep -q -- "password: $PASSWORD\$" <<<"$out"; then
        FOUND=$((FOUND + 1))
        [ -n "$FIRST_MS" ] || FIRST_MS=$(($(now_ms) - t0))
    fi
    DENIED=$((DENIED + $(sed -n 's/^denied //p' <<<"$out")))
    echo "$name checks=$(checks_for "$account")" >>"$TMP/$label.tally"
    owner_between "$label" "$name"
}

# The account's owner, alice, from her own browser, which signed in before
# the attack and kept its device cookie (examples/recipes/*/suspect.xml,
# <DeviceCookie>).  A recipe defines owner_login (true when she got in;
# it adds to OWNER_OK, her password checks that were not the attacker's)
# and names in OWNER_AFTER the attack after which she signs in again,
# during the attack.
OWNER_OK=0
owner_between() {
    [ "$1" = guarded ] && [ "$2" = "${OWNER_AFTER:-}" ] || return 0
    check "alice's browser signs in during the attack, at the first try" \
        owner_login
}

# per_attack LABEL: the application's password checks per attack of the
# round LABEL, from its tally.
per_attack() {
    awk -F'checks=' -v label="$1" '{ n = $2 - prev; prev = $2; print label ": " $1 "checks " n }' "$TMP/$1.tally"
}

# finish: prints the totals, fails when a check did.
finish() {
    say "$PASSES passed, $FAILS failed"
    [ "$FAILS" -eq 0 ]
}
