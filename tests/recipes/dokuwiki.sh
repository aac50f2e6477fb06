#!/bin/bash
# dokuwiki.sh - the DokuWiki recipe (examples/recipes/dokuwiki/), tested:
# Debian's dokuwiki package copied into a temporary root with its own
# configuration and data, a user alice whose password is in the attack's
# list, the test plugin authcount (DokuWiki's authplain that logs every
# password check) as the wiki's authentication, and hydra against every
# entry point and spelling of alice, first behind nginx -> php-cgi alone,
# then behind nginx -> suspect-fcgi -> php-cgi as the recipe says; logins
# posted as multipart/form-data (as browsers post a form with a file
# input, with bare LF lines, and with u hidden after a file part); and
# behind Suspect, bob's upload of a 6 MiB file through the media
# manager's form without JavaScript, stored byte for byte.
RECIPE=dokuwiki
. "$(dirname "$0")/common.sh"

PKG=/usr/share/dokuwiki
HERE=$SUSPECT_SRCDIR/tests/recipes/dokuwiki
R=$RECIPES/dokuwiki
W=$TMP/wiki
PASSWORD='Sunflower-77'
BOB_PASSWORD='Tulip-42'

# The wiki in $W: code from the package, configuration and data of its own.
setup_wiki() {
    cp -rL "$PKG" "$W"
    cp -rL /etc/dokuwiki "$W/conf"
    cp -rL /var/lib/dokuwiki/data "$W/data"
    rm -f "$W/.htaccess"
    cp -r "$HERE/authcount" "$W/lib/plugins/authcount"
    # The package's preload points at /etc/dokuwiki: point at ours.
    printf '<?php\ndefine("DOKU_CONF", "%s/conf/");\n' "$W" >"$W/inc/preload.php"
    cat >"$W/conf/local.php" <<EOF
<?php
\$conf['title'] = 'Recipe test';
\$conf['savedir'] = '$W/data';
\$conf['useacl'] = 1;
\$conf['authtype'] = 'authcount';
\$conf['superuser'] = '@admin';
\$conf['remote'] = 1;
EOF
    printf '<?php\n$plugins["authcount"] = 1;\n' >"$W/conf/plugins.local.php"
    # A cheap hash (md5-crypt): the attack without Suspect stays short.
    local hash hash_bob
    hash=$(php -r 'echo crypt($argv[1], "\$1\$recipes\$");' "$PASSWORD")
    hash_bob=$(php -r 'echo crypt($argv[1], "\$1\$recipes\$");' "$BOB_PASSWORD")
    {
        printf '# users.auth.php\n'
        printf 'alice:%s:Alice:alice@example.org:admin,user\n' "$hash"
        printf 'bob:%s:Bob:bob@example.org:user\n' "$hash_bob"
        # Names with accents, as DokuWiki stores them (cleanID()).
        printf 'lukasz:%s:Łukasz:lukasz@example.org:user\n' "$hash_bob"
        printf 'joerg:%s:Jörg:joerg@example.org:user\n' "$hash_bob"
    } >"$W/conf/users.auth.php"
    : >"$W/conf/checks.log"
    chown -R www-data:www-data "$W/conf" "$W/data" 2>/dev/null || true
    chmod -R a+rwX "$W/conf" "$W/data"
}

# Password checks DokuWiki made for user name $1 since the log was reset.
checks_for() {
    local hex
    hex=$(printf '%s' "$1" | od -An -tx1 | tr -d ' \n')
    grep -c -x "$hex" "$W/conf/checks.log" || true
}

# The attacks: NAME MODULE "PATH:FORM" LOGIN.  Every entry point that
# makes DokuWiki check a password, and every spelling of alice it reads as
# alice; ^USER^ is hydra's login (URL-encoded by hydra).  MODULE "curl" is
# a loop of curl requests with "Authorization: SCHEME base64(alice:guess)":
# hydra's http-get module takes DokuWiki's 403 for a success, and its H=
# option cannot put a scheme before a guessed credential (it replaces the
# whole value with the base64).
S='S=%7C0%7C' # the login cookie (base64 user|0|...): set on success only
ATTACKS=(
    "login-form|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|alice"
    "no-do|http-post-form|/doku.php:u=^USER^&p=^PASS^|alice"
    "do-array|http-post-form|/doku.php:do[login]=1&u=^USER^&p=^PASS^|alice"
    "get-query|http-get-form|/doku.php:u=^USER^&p=^PASS^|alice"
    "root|http-post-form|/:u=^USER^&p=^PASS^|alice"
    "index|http-post-form|/index.php:u=^USER^&p=^PASS^|alice"
    "feed|http-post-form|/feed.php:u=^USER^&p=^PASS^|alice"
    "ajax|http-post-form|/lib/exe/ajax.php:u=^USER^&p=^PASS^|alice"
    "detail|http-get-form|/lib/exe/detail.php:u=^USER^&p=^PASS^|alice"
    "fetch|http-post-form|/lib/exe/fetch.php:u=^USER^&p=^PASS^|alice"
    "indexer|http-get-form|/lib/exe/indexer.php:u=^USER^&p=^PASS^|alice"
    "mediamanager|http-post-form|/lib/exe/mediamanager.php:u=^USER^&p=^PASS^|alice"
    "xmlrpc|http-post-form|/lib/exe/xmlrpc.php:u=^USER^&p=^PASS^|alice"
    "install|http-post-form|/install.php:u=^USER^&p=^PASS^|alice"
    "case-Alice|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|Alice"
    "case-ALICE|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|ALICE"
    "accent|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|álice"
    "umlaut-upper|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|ÁLICE"
    "trail-underscore|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|alice_"
    "trail-dot|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|alice."
    "lead-colon|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|:alice"
    "lead-space|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login| alice"
    "control|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|"$'al\x01ice'
    "stroke-l|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|ałice"
    "dotless-i|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|alıce"
    "stroke-dotless|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|ałıce"
    "superscript-2|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|alice²"
    "superscript-3|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|alice³"
    "superscript-12|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|alice¹²"
    "ordinal|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|aliceª"
    "ordinal-first|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|ªalice"
    "trade-mark|http-post-form|/doku.php:u=^USER^&p=^PASS^&do=login|alice™"
    "nul-first|http-post-form|/doku.php:u=%00^USER^&p=^PASS^&do=login|alice"
    "nul-inside|http-post-form|/doku.php:u=al%00ice&x=^USER^&p=^PASS^&do=login|alice"
    "query-and-body|http-post-form|/doku.php?u=alice:p=^PASS^|alice"
    "multipart|multipart|/doku.php|form"
    "multipart-lf|multipart|/doku.php|lf"
    "multipart-late|multipart|/doku.php|late"
    "basic|curl|/doku.php|Basic"
    "bearer|curl|/doku.php|Bearer"
    "any-scheme|curl|/feed.php|Xxxxxx"
    "remote-api|xmlrpc|/lib/exe/xmlrpc.php|dokuwiki.login"
)
# Eleven wrong guesses, then the password: more than the limit (5) and
# hydra's parallel tasks (4, whose guesses may arrive out of order) allow.
printf '%s\n' guess1 guess2 guess3 guess4 guess5 guess6 guess7 guess8 guess9 \
    guess10 guess11 "$PASSWORD" >"$TMP/passwords"

# curl_run NAME PATH SCHEME: the password list in "Authorization: SCHEME
# base64(alice:guess)"; true when a guess was let in (the login cookie).
curl_run() {
    local name=$1 path=$2 scheme=$3 p t0 found=1
    t0=$(now_ms)
    while read -r p; do
        if curl -s -D - -o /dev/null -H "Authorization: $scheme $(printf 'alice:%s' "$p" | base64)" \
            "$BASE$path" | grep -q '%7C0%7C'; then
            echo "login: alice password: $p" >>"$TMP/hydra-$name.log"
            found=0
            break
        fi
    done <"$TMP/passwords"
    HYDRA_MS=$(($(now_ms) - t0))
    return $found
}

# rpc_run NAME PATH METHOD: the password list through the remote API
# (XML-RPC METHOD with user and password in the XML body); true when a
# guess was let in (the call answers true).
rpc_run() {
    local name=$1 path=$2 method=$3 p t0 found=1
    t0=$(now_ms)
    while read -r p; do
        if curl -s -H 'Content-Type: text/xml' --data-binary "<?xml version=\"1.0\"?><methodCall><methodName>$method</methodName><params><param><value><string>alice</string></value></param><param><value><string>$p</string></value></param></params></methodCall>" \
            "$BASE$path" | tr -d ' \n' | grep -q '<boolean>1</boolean>'; then
            echo "login: alice password: $p" >>"$TMP/hydra-$name.log"
            found=0
            break
        fi
    done <"$TMP/passwords"
    HYDRA_MS=$(($(now_ms) - t0))
    return $found
}

# mp_run NAME PATH SHAPE: the password list posted as multipart/form-data,
# SHAPE form (curl -F, as browsers send a form), lf (bare LF lines, which
# PHP reads too) or late (u after a 256 KiB file part: past formMax);
# true when a guess was let in (the login cookie).
mp_run() {
    local name=$1 path=$2 shape=$3 p t0 found=1 args
    t0=$(now_ms)
    head -c 262144 /dev/urandom >"$TMP/big.bin"
    while read -r p; do
        case $shape in
        form) args=(-F u=alice -F "p=$p" -F do=login) ;;
        late) args=(-F "p=$p" -F do=login -F "upload=@$TMP/big.bin" -F u=alice) ;;
        lf)
            printf -- '--b\nContent-Disposition: form-data; name="u"\n\nalice\n--b\nContent-Disposition: form-data; name="p"\n\n%s\n--b\nContent-Disposition: form-data; name="do"\n\nlogin\n--b--\n' "$p" >"$TMP/lf.body"
            args=(-H 'Content-Type: multipart/form-data; boundary=b' --data-binary "@$TMP/lf.body")
            ;;
        esac
        if curl -s -D - -o /dev/null "${args[@]}" "$BASE$path" | grep -q '%7C0%7C'; then
            echo "login: alice password: $p" >>"$TMP/hydra-$name.log"
            found=0
            break
        fi
    done <"$TMP/passwords"
    HYDRA_MS=$(($(now_ms) - t0))
    return $found
}

# upload_as USER PASSWORD FILE NAME: logs in, takes the media manager's
# security token, posts FILE as the form without JavaScript does (the
# token and namespace first, then the file, then its name), as NAME in
# the namespace "wiki"; true when the wiki stored it byte for byte.
upload_as() {
    local jar=$TMP/jar-$1 tok
    rm -f "$jar"
    curl -s -c "$jar" -b "$jar" -o /dev/null -d "u=$1&p=$2&do=login" "$BASE/doku.php"
    tok=$(curl -s -c "$jar" -b "$jar" "$BASE/lib/exe/mediamanager.php?ns=wiki" |
        sed -n 's/.*name="sectok" value="\([0-9a-f]*\)".*/\1/p' | head -n 1)
    [ -n "$tok" ] || return 1
    curl -s -c "$jar" -b "$jar" -o "$TMP/upload.html" -w '%{http_code}\n' \
        -F "sectok=$tok" -F ns=wiki -F "upload=@$3;filename=$4" -F "mediaid=$4" \
        "$BASE/lib/exe/mediamanager.php?ns=wiki" >"$TMP/upload.status"
    cmp -s "$3" "$W/data/media/wiki/$4"
}

# attack_all LABEL: runs every attack; FOUND = how many found the password,
# ATTACK_MS = the time of them all, FIRST_MS = the time to the first find.
attack_all() {
    local label=$1 a name module target login t0 found
    FOUND=0
    FIRST_MS=
    t0=$(now_ms)
    for a in "${ATTACKS[@]}"; do
        IFS='|' read -r name module target login <<<"$a"
        # ONLY=REGEX runs the attacks whose name matches (while debugging).
        [[ -z "${ONLY:-}" || "$name" =~ $ONLY ]] || continue
        if [ "$module" = curl ]; then
            curl_run "$label-$name" "$target" "$login" && found=1 || found=0
        elif [ "$module" = xmlrpc ]; then
            rpc_run "$label-$name" "$target" "$login" && found=1 || found=0
        elif [ "$module" = multipart ]; then
            mp_run "$label-$name" "$target" "$login" && found=1 || found=0
        else
            hydra_run "$label-$name" -l "$login" -P "$TMP/passwords" -t 4 \
                -s "$PORT" 127.0.0.1 "$module" "$target:$S" &&
                found=1 || found=0
        fi
        if [ "$found" = 1 ]; then
            FOUND=$((FOUND + 1))
            [ -n "$FIRST_MS" ] || FIRST_MS=$(($(now_ms) - t0))
        fi
        echo "$name found=$found checks=$(checks_for alice)" >>"$TMP/$label.tally"
        owner_between "$label" "$name"
    done
    ATTACK_MS=$(($(now_ms) - t0))
}

setup_wiki
PORT=$(free_port)
BASE=http://127.0.0.1:$PORT

# PHP as without a php.ini (the official container images, php-cgi -n):
# no request_order, variables_order EGPCS, so $_REQUEST is built in the
# order G, P, C: it holds the cookies and a cookie wins over GET and POST.
# (An empty request_order would build an empty $_REQUEST: "GPC" is what
# an unset one does.)  Debian's php.ini sets request_order "GP"; the
# recipe must hold under either.  DokuWiki itself rebuilds $_REQUEST from
# GET and POST (inc/init.php), so a cookie named u makes it check nothing:
# the test's sign-ins with u in a cookie are the e2e suite's, against an
# application that reads $_REQUEST as PHP builds it.
PHP_REQUEST=(-d request_order=GPC -d variables_order=EGPCS)

# ---- without Suspect: nginx -> php-cgi ------------------------------------
start_php "$TMP/php.sock" "${PHP_REQUEST[@]}"
recipe_nginx "$R/nginx.conf" "$TMP/bare.conf" "$PORT" "$W" "$TMP/php.sock"
start_nginx "$TMP/bare.conf"
check "the wiki answers without Suspect" wait_for 10 http_up "$BASE/doku.php"
attack_all bare
per_attack bare
BARE_CHECKS=$(checks_for alice)
say "without Suspect: hydra found the password in $FOUND of ${#ATTACKS[@]} attacks, the first after $FIRST_MS ms ($ATTACK_MS ms for all; $BARE_CHECKS password checks of alice)"
check "without Suspect the attacks find the password" [ "$FOUND" -gt 0 ]
# Every attack really reaches a password check of alice (the shapes are
# live): each added at least one.
check "without Suspect every attack makes the wiki check alice's password" \
    [ "$(per_attack bare | awk '$NF == 0' | wc -l)" -eq 0 ]
stop_all

# ---- with Suspect: nginx -> suspect-fcgi -> php-cgi, as the recipe says ---
: >"$W/conf/checks.log"
cp "$R/limits.xml" "$TMP/limits.xml"
sed -e "s|unix:/run/suspect/fcgi.sock|unix:$TMP/fcgi.sock|" \
    -e "s|unix:/run/suspect/php.sock|unix:$TMP/php.sock|" \
    -e "s|path=\"limits.xml\"|path=\"$TMP/limits.xml\"|" \
    -e 's|<Server |<Server socketMode="0666" |' \
    "$R/suspect.xml" >"$TMP/suspect.xml"
check "the recipe's suspect.xml checks" \
    "$SUSPECT_BUILDDIR/suspect-fcgi" -c "$TMP/suspect.xml" --check
# Uploads up to nginx's client_max_body_size (8m in the recipe).
start_php "$TMP/php.sock" -d upload_max_filesize=8M -d post_max_size=8M \
    "${PHP_REQUEST[@]}"
start_suspect "$TMP/suspect.xml" -v
wait_for 10 test -S "$TMP/fcgi.sock"
recipe_nginx "$R/nginx.conf" "$TMP/guarded.conf" "$PORT" "$W" "$TMP/fcgi.sock"
start_nginx "$TMP/guarded.conf"
check "the wiki answers behind Suspect" wait_for 10 http_up "$BASE/doku.php"
check "pages without credentials are not counted" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/doku.php?id=start")" = 200 ]
# alice signs in from her browser before the attack: a device cookie.
owner_login() {
    curl -s -D - -o /dev/null -c "$TMP/alice.jar" -b "$TMP/alice.jar" \
        -d "u=alice&p=$PASSWORD&do=login" "$BASE/doku.php" |
        grep -q 'DW[0-9a-f]*=YWxpY2U' || return 1
    OWNER_OK=$((OWNER_OK + 1))
}
OWNER_AFTER=login-form
check "alice signs in from her browser before the attack" owner_login
check "her browser was given a device cookie" grep -q suspect_device "$TMP/alice.jar"
attack_all guarded
check "alice's browser signs in right after the attack, at the first try" \
    owner_login
check "without her device cookie alice is locked out with the attacker" \
    sh -c "curl -s -o /dev/null -w '%{http_code}' -d 'u=alice&p=$PASSWORD&do=login' \
        '$BASE/doku.php' | grep -q 429"
per_attack guarded
CHECKS=$(checks_for alice)
LIMIT=$(sed -n '/Action="DokuWikiLogin"/s/.*LimitCount="\([0-9]*\)".*/\1/p' "$R/limits.xml")
say "with Suspect: hydra found the password in $FOUND of ${#ATTACKS[@]} attacks ($ATTACK_MS ms for all; hydra reported $FALSE_FINDS false passwords); the wiki checked alice's password $CHECKS times (limit $LIMIT)"
check "with Suspect no attack finds the password" [ "$FOUND" -eq 0 ]
check "with Suspect the wiki checks at most $LIMIT of the attacker's passwords for alice (besides alice's own $OWNER_OK)" \
    [ "$((CHECKS - OWNER_OK))" -le "$LIMIT" ]
# Another user logs in as usual: the limit is alice's, not the site's.
check "with Suspect bob logs in" sh -c "curl -s -D - -o /dev/null \
    -d 'u=bob&p=$BOB_PASSWORD&do=login' '$BASE/doku.php' | grep -q '%7C0%7C'"
# Only the failures count: bob signs in 6 more times in the window (more
# than the limit), through doku.php, feed.php and with "remember me".
for i in 1 2 3 4 5 6; do
    case $((i % 3)) in
    0) args="-d u=bob -d p=$BOB_PASSWORD -d do=login $BASE/doku.php" ;;
    1) args="-d u=bob -d p=$BOB_PASSWORD $BASE/feed.php" ;;
    2) args="-d u=bob -d p=$BOB_PASSWORD -d r=1 -d do=login $BASE/doku.php" ;;
    esac
    check "with Suspect bob's right password $i is let in" sh -c \
        "curl -s -D - -o /dev/null $args | grep -q 'DW[0-9a-f]*=Ym9i'"
done
# Names with accents log in as their users type them.
for u in Łukasz Jörg; do
    check "with Suspect $u logs in" sh -c "curl -s -D - -o /dev/null \
        --data-urlencode 'u=$u' -d 'p=$BOB_PASSWORD&do=login' '$BASE/doku.php' |
        grep -q '%7C0%7C'"
done
check "with Suspect the spellings DokuWiki reads as alice beyond a-z were refused" \
    grep -q 'status=400 (identity refused by its normalize)' "$TMP/suspect.log"
check "with Suspect the remote API was refused" \
    grep -q 'status=403' "$TMP/suspect.log"
# ... and uploads a 6 MiB file (past formMax: checked on its way).
head -c 6291456 /dev/urandom >"$TMP/upload.zip"
check "with Suspect bob uploads 6 MiB through the media manager, stored byte for byte" \
    upload_as bob "$BOB_PASSWORD" "$TMP/upload.zip" recipe.zip
say "upload: HTTP $(cat "$TMP/upload.status" 2>/dev/null), $(stat -c %s "$W/data/media/wiki/recipe.zip" 2>/dev/null || echo no) bytes stored"
check "with Suspect u hidden after the file was refused" \
    grep -q 'status=413 (multipart field past formMax)' "$TMP/suspect.log"
finish
