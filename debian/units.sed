# examples/systemd/* -> the packaged units (debian/rules): Debian's paths
# and its system user _suspect; the examples' steps to create the user and
# install the units are the package's work.
1i\
# Installed by the package suspect (/usr/share/doc/suspect/packaging.md.gz).\
# Change settings with "systemctl edit", not here: upgrades replace this file.
/^# Create the user first:/d
s/^# is)\.  Install both units in .*/# is)./
/^#     systemctl daemon-reload && systemctl enable --now/d
s|/usr/local/sbin/|/usr/sbin/|g
s/^\(User\|Group\|SocketUser\)=suspect$/\1=_suspect/
s/\(group\|user\) suspect\b/\1 _suspect/g
s/group="suspect"/group="_suspect"/g
