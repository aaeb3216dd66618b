#!/usr/bin/env bash
# Run pynab's nabd from the owner's checkout on this machine (PostgreSQL, its Django settings,
# the virtual I/O with our control port: tools/peers/nabd_peer.py) and drive it through
# nabaztag_bridge: tools/peers/try_pynab_nabd.py. Usage (as root, on a Debian-like machine):
#   tools/peers/try_pynab_nabd.sh PATH/TO/pynab
# Result and what it showed: docs/nabaztag.md, "Tried against the real daemons".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
checkout="$(cd "${1:?usage: $0 PATH/TO/pynab}" && pwd)"
[ -f "$checkout/nabd/nabd.py" ] || { echo "$checkout is not a pynab checkout" >&2; exit 2; }
if ! command -v pg_ctlcluster >/dev/null || [ ! -e /usr/lib/x86_64-linux-gnu/libmpg123.so.0 ]; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql libmpg123-0; } >/dev/null
fi
service postgresql start >/dev/null
su postgres -c "psql -tAc \"SELECT 1 FROM pg_roles WHERE rolname='pynab'\"" | grep -q 1 ||
  su postgres -c "psql -qc \"CREATE USER pynab WITH PASSWORD 'pynab' SUPERUSER\""
su postgres -c "psql -tAc \"SELECT 1 FROM pg_database WHERE datname='pynab'\"" | grep -q 1 ||
  su postgres -c "createdb -O pynab pynab"
venv="$root/.venv/pynab-peer"   # nabd's own libraries, apart from the bridge's
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check Django==3.2.25 psycopg2-binary \
  python-dateutil lockfile==0.12.2 mpg123==0.4 2>&1 | grep -v '^WARNING' || true
export PGUSER=pynab PGPASSWORD=pynab PGHOST=127.0.0.1 DJANGO_SETTINGS_MODULE=nabweb.settings
(cd "$checkout" && "$venv/bin/python" manage.py migrate --skip-checks >/dev/null)
work="$(mktemp -d)"
LOGDIR="$work" PYTHONPATH="$checkout:$root/tools/peers" "$venv/bin/python" \
  "$root/tools/peers/nabd_peer.py" --pidfile="$work/nabd.pid" > "$work/nabd.out" 2>&1 &
nabd=$!
trap 'kill $nabd 2>/dev/null; wait $nabd 2>/dev/null || true' EXIT
make -C "$root" --no-print-directory bootstrap
set +u  # the ROS set-up scripts read unset variables
# shellcheck disable=SC1091
. "$root/tools/env.sh"
python "$root/tools/peers/try_pynab_nabd.py" --logs "$work"
