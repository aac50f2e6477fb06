"""browser_jar.py - the cookie jar of a recipe attack's client (attack.py).

A fresh jar, or with JAR=file in the environment a browser's that kept its
device cookie from earlier runs (its sessions ended): the device cookie is
saved again at exit.
"""
import atexit
import http.cookiejar
import os


def browser_jar():
    """The jar for one guess: see the module's text."""
    path = os.environ.get("JAR")
    if not path:
        return http.cookiejar.CookieJar()
    jar = http.cookiejar.MozillaCookieJar(path)
    if os.path.exists(path):
        jar.load(ignore_discard=True, ignore_expires=True)

    def keep():
        out = http.cookiejar.MozillaCookieJar(path)
        for c in jar:
            if c.name.endswith("suspect_device"):
                out.set_cookie(c)
        out.save(ignore_discard=True, ignore_expires=True)

    atexit.register(keep)
    return jar
