#!/bin/sh
# Installs the build into a temp DESTDIR (make install), then builds the
# README's C example (its first ```c block) against what was installed,
# with nothing but pkg-config's flags, runs it on examples/limits.xml and
# checks its three answers.  Run by `make check` after the suite.
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
