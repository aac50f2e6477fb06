#!/bin/sh
# Installs the build into a temp DESTDIR (make install), then builds the
# README's C example (its first ```c block) against what was installed,
# with nothing but pkg-config's flags, runs it on examples/limits.xml and
# checks its three answers; then builds examples/libfcgi/protected-app.c
# the same way, out of the tree (pkg-config libsuspect-guard fcgi: the
# installed headers and libraries alone, no private header), runs it on
# the installed libraries and examples/libfcgi/suspect.xml behind a real
# nginx with the example's snippet (examples/libfcgi/nginx.conf), and asks
# with curl: the page, two bank updates and the third's 429, a right
# sign-in, three wrong ones and the lock-out; the application's log must
# show it performed the allowed requests only.  Run by `make check` after
# the suite; needs nginx, curl and python3 (for a free port).
set -u
top=${SUSPECT_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${SUSPECT_BUILDDIR:-$(pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/suspect-install-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-install: $*" >&2; exit 1; }

for tool in pkg-config "${CC:-cc}" nginx curl python3; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool not found"
done
root=$tmp/root
make -C "$build" install DESTDIR="$root" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "make install failed"; }
pc=$(find "$root" -name libsuspect.pc | head -n 1)
[ -n "$pc" ] || fail "no libsuspect.pc installed"
libdir=$(dirname "$(dirname "$pc")")

awk '/^```c$/ { on = 1; next } on && /^```$/ { exit } on { print }' \
    "$top/README.md" >"$tmp/example.c"
[ -s "$tmp/example.c" ] || fail "no \`\`\`c block in README.md"
flags=$(PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$root" \
    pkg-config --cflags --libs libsuspect) || fail "pkg-config libsuspect failed"
# shellcheck disable=SC2086 # the flags are words
"${CC:-cc}" -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror \
    ${SUSPECT_SAN_CFLAGS:-} "$tmp/example.c" $flags -o "$tmp/example" \
    2>"$tmp/cc.log" ||
    { cat "$tmp/cc.log" >&2; fail "README example does not build with: $flags"; }
LD_LIBRARY_PATH="$libdir" "$tmp/example" "$top/examples/limits.xml" alice \
    >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; fail "README example failed"; }
printf 'allowed, 1 left\nallowed, 0 left\ndenied for 120 s (MemberCode)\n' \
    >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" ||
    { diff "$tmp/want" "$tmp/out" >&2; fail "README example answered otherwise"; }
echo "check-install: README example built with $flags: ok"

# ---- the libfcgi example, out of the tree -----------------------------------
gpc=$(find "$root" -name libsuspect-guard.pc | head -n 1)
[ -n "$gpc" ] || fail "no libsuspect-guard.pc installed"
private=$(find "$root" -name '*.h' ! -name 'suspect_*.h')
[ -z "$private" ] || fail "headers installed that are no public API: $private"
mkdir "$tmp/app"
cp "$top/examples/libfcgi/protected-app.c" "$tmp/app/"
gflags=$(PKG_CONFIG_PATH="$(dirname "$gpc")" PKG_CONFIG_SYSROOT_DIR="$root" \
    pkg-config --cflags --libs libsuspect-guard fcgi) ||
    fail "pkg-config libsuspect-guard fcgi failed"
# shellcheck disable=SC2086 # the flags are words
(cd "$tmp/app" && "${CC:-cc}" -std=c11 -D_POSIX_C_SOURCE=200809L -Wall \
    -Wextra -Werror ${SUSPECT_SAN_CFLAGS:-} protected-app.c $gflags \
    -o protected-app) 2>"$tmp/cc.log" ||
    { cat "$tmp/cc.log" >&2; fail "protected-app.c does not build with: $gflags"; }
exported=$(nm -D --defined-only "$(dirname "$(dirname "$gpc")")/libsuspect-guard.so" |
    awk '{print $3}' | grep -v '^suspect_guard_' | grep -v '^_' || true)
[ -z "$exported" ] || fail "libsuspect-guard exports more than its API: $exported"
# libsuspect exports what libsuspect.sym lists, no more, and each of them
# is declared in an installed header.
so=$libdir/libsuspect.so
exported=$(nm -D --defined-only "$so" | awk '$3 !~ /^_/ {print $3}' | sort)
listed=$(grep -v '^$' "$top/libsuspect.sym" | sort)
[ "$exported" = "$listed" ] || {
    printf '%s\n' "$exported" >"$tmp/exported"
    printf '%s\n' "$listed" >"$tmp/listed"
    diff "$tmp/listed" "$tmp/exported" >&2
    fail "libsuspect exports otherwise than libsuspect.sym lists"
}
headers=$(find "$root" -name 'suspect_*.h')
for sym in $exported; do
    # shellcheck disable=SC2086 # header paths have no blanks
    grep -qw "$sym" $headers || fail "libsuspect exports $sym, in no installed header"
done
sed "s|\.\./limits.xml|$top/examples/limits.xml|" \
    "$top/examples/libfcgi/suspect.xml" >"$tmp/app/suspect.xml"
case $(LD_LIBRARY_PATH="$libdir" ldd "$tmp/app/protected-app") in
*"$libdir/libsuspect-guard.so"*) ;;
*) fail "protected-app does not load the installed libsuspect-guard" ;;
esac

# wait_for PID CMD...: runs CMD until it succeeds (0) while PID runs, at
# most 10 s (times SUSPECT_TEST_SCALE); else 1.
scale=${SUSPECT_TEST_SCALE:-1}
case $scale in '' | *[!0-9]*) scale=1 ;; esac
wait_for() {
    pid=$1
    shift
    deadline=$(($(date +%s) + 10 * scale))
    until "$@"; do
        kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ] ||
            return 1
        sleep 0.1
    done
}
app=
web=
stop() {
    for p in $web $app; do
        kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    web=
    app=
}
trap 'stop; rm -rf "$tmp"' EXIT

LD_LIBRARY_PATH="$libdir" "$tmp/app/protected-app" "$tmp/app/suspect.xml" \
    "$tmp/app/fcgi.sock" 2 >"$tmp/app/out" 2>&1 &
app=$!
wait_for "$app" test -S "$tmp/app/fcgi.sock" ||
    { cat "$tmp/app/out" >&2; fail "protected-app did not start"; }

# nginx, as the example's README puts it: its snippet in a server block.
port=$(python3 -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') ||
    fail "no free port"
web_dir=$tmp/nginx
mkdir -p "$web_dir/tmp"
cp /etc/nginx/fastcgi_params "$web_dir/" || fail "no /etc/nginx/fastcgi_params"
sed "s|/run/app/fcgi.sock|$tmp/app/fcgi.sock|" \
    "$top/examples/libfcgi/nginx.conf" >"$web_dir/protected-app.conf"
cat >"$web_dir/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $web_dir/nginx.pid;
error_log stderr notice;
events { worker_connections 64; }
http {
    access_log $web_dir/access.log;
    client_body_temp_path $web_dir/tmp/body;
    fastcgi_temp_path $web_dir/tmp/fastcgi;
    proxy_temp_path $web_dir/tmp/proxy;
    uwsgi_temp_path $web_dir/tmp/uwsgi;
    scgi_temp_path $web_dir/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        server_name _;
        include $web_dir/protected-app.conf;
    }
}
CONF
nginx -p "$web_dir/" -c "$web_dir/nginx.conf" -e stderr \
    >"$web_dir/out" 2>&1 &
web=$!
url=http://127.0.0.1:$port/app
# ask CURL_ARGS...: the response's header into $tmp/head, its body into
# $tmp/res, its status on stdout.
ask() {
    curl -q -s --noproxy '*' --max-time $((10 * scale)) -D "$tmp/head" \
        -o "$tmp/res" -w '%{http_code}' "$@"
}
answers() { [ "$(ask "$url")" = 200 ]; }
wait_for "$web" answers ||
    { cat "$web_dir/out" "$tmp/app/out" >&2; fail "nginx did not answer"; }
# expect WANT CURL_ARGS...: the status must be WANT.
expect() {
    want=$1
    shift
    got=$(ask "$@")
    [ "$got" = "$want" ] || {
        cat "$tmp/res" "$web_dir/out" "$tmp/app/out" >&2
        fail "$* answered $got, not $want"
    }
}
expect 200 "$url"
grep -q '^ok index' "$tmp/res" || fail "/app answered: $(cat "$tmp/res")"
for want in 200 200 429; do
    expect $want -b member=check -H 'Accept: application/problem+json' \
        -d amount=1 "$url?op=bank"
done
for h in 'Retry-After: 1[0-9][0-9]' 'Content-Type: application/problem+json'; do
    grep -qi "^$h" "$tmp/head" || fail "the 429's header: $(cat "$tmp/head")"
done
grep -q '"BankAccountUpdate"' "$tmp/res" || fail "the 429 says: $(cat "$tmp/res")"
# A sign-in without a user is refused (it would not be counted).
expect 400 -d "password=right" "$url?op=signin"
# Only wrong passwords count: the right one, three wrong, the lock-out.
for want in 200 401 401 401 429; do
    case $want in 401) pass=guess ;; *) pass=right ;; esac
    expect $want -d "user=ann&password=$pass" "$url?op=signin"
done
stop
performed() { grep -c "performed POST /app?op=$1\$" "$tmp/app/out"; }
if [ "$(performed bank)" != 2 ] || [ "$(performed signin)" != 4 ]; then
    cat "$tmp/app/out" >&2
    fail "protected-app performed other than what was allowed"
fi
echo "check-install: examples/libfcgi built with $gflags, behind nginx: ok"
