#!/usr/sbin/suspect-cgi -c /etc/suspect/suspect-cgi.xml /srv/suspect/app/app.cgi
#
# app.cgi of the document root (mode 0755; /var/www/html/app.cgi on
# Debian): the URL /app.cgi of examples/lighttpd/suspect-cgi.conf.  The
# kernel runs
#   /usr/sbin/suspect-cgi "-c /etc/suspect/suspect-cgi.xml /srv/suspect/app/app.cgi" /var/www/html/app.cgi
# suspect-cgi splits that one argument at its blanks, ignores the path of
# this file, decides with suspect-cgi.xml and runs /srv/suspect/app/app.cgi
# (which must lie inside <Cgi root>).  Nothing below the first line is
# ever read.  The first line must stay under 255 bytes; paths cannot hold
# blanks.
