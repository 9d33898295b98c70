#!/bin/sh
# doc-trees.sh DIR: fetch six Debian HTML documentation trees (Python 3.11,
# PostgreSQL 15, SQLite, Zsh, Git, Apache httpd) into DIR, unpacked, not
# installed, and print their home directories comma-separated, for the e2e
# harness's real-pages case:
#
#   cd bench && go run ./cmd/e2e -modes "" -hosts 2 -pages 2 -polite "" -few "" -scale "" \
#     -docs "$(scripts/doc-trees.sh /tmp/doc-trees)" -extra-modes run-out,colly,wget
#
# Needs apt-get (Debian 12's archive) and dpkg-deb; nothing is installed.
set -eu
dir=${1:?usage: doc-trees.sh DIR}
mkdir -p "$dir/debs" "$dir/root"
cd "$dir/debs"
pkgs="python3.11-doc postgresql-doc-15 sqlite3-doc zsh-doc git-doc apache2-doc"
if ! ls ./*.deb >/dev/null 2>&1; then
	apt-get download $pkgs >&2
fi
for f in ./*.deb; do dpkg-deb -x "$f" "$dir/root"; done
d="$dir/root/usr/share/doc"
echo "$d/python3.11/html,$d/postgresql-doc-15/html,$d/sqlite3,$d/zsh-common/html,$d/git-doc,$d/apache2-doc/manual"
