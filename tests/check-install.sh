#!/bin/sh
# Installs the build into a temp DESTDIR (make install), then builds the
# README's C example (its first ```c block) against what was installed,
# with nothing but pkg-config's flags, runs it on examples/limits.xml and
# checks its three answers; then builds examples/libfcgi/protected-app.c
# the same way, out of the tree (pkg-config libsuspect-guard fcgi: the
# installed headers and libraries alone, no private header), and starts
# it on examples/libfcgi/suspect.xml until it listens.  Run by
# `make check` after the suite.
set -u
top=${SUSPECT_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${SUSPECT_BUILDDIR:-$(pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/suspect-install-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-install: $*" >&2; exit 1; }

for tool in pkg-config "${CC:-cc}"; do
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
sed "s|\.\./limits.xml|$top/examples/limits.xml|" \
    "$top/examples/libfcgi/suspect.xml" >"$tmp/app/suspect.xml"
LD_LIBRARY_PATH="$libdir" "$tmp/app/protected-app" "$tmp/app/suspect.xml" \
    "$tmp/app/fcgi.sock" >"$tmp/app/out" 2>&1 &
app=$!
# Until it listens or exits, at most 10 s (times SUSPECT_TEST_SCALE).
scale=${SUSPECT_TEST_SCALE:-1}
case $scale in '' | *[!0-9]*) scale=1 ;; esac
deadline=$(($(date +%s) + 10 * scale))
while [ ! -S "$tmp/app/fcgi.sock" ] && kill -0 "$app" 2>/dev/null &&
    [ "$(date +%s)" -lt "$deadline" ]; do
    sleep 0.1
done
listening=no
[ -S "$tmp/app/fcgi.sock" ] && listening=yes
kill "$app" 2>/dev/null
wait "$app" 2>/dev/null
[ "$listening" = yes ] ||
    { cat "$tmp/app/out" >&2; fail "protected-app did not start"; }
echo "check-install: examples/libfcgi built with $gflags, started: ok"
