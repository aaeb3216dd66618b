#!/usr/bin/env bash
# Build ServerlessNabaztag's simulator from the owner's checkout (its compiler is 32-bit: the
# multilib compilers are installed with apt-get when we may) and drive it through
# nabaztag_bridge: tools/peers/try_serverless_firmware.py. Usage:
#   tools/peers/try_serverless_firmware.sh PATH/TO/ServerlessNabaztag
# Result and what it showed: docs/nabaztag.md, "Tried against the real firmware".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
checkout="$(cd "${1:?usage: $0 PATH/TO/ServerlessNabaztag}" && pwd)"
[ -f "$checkout/compiler/mtl_simu/Makefile" ] || { echo "$checkout is not a ServerlessNabaztag checkout" >&2; exit 2; }
if ! echo 'int main(void){return 0;}' | gcc -m32 -x c - -o /dev/null 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-multilib g++-multilib; } >/dev/null
  else
    echo "the simulator builds with gcc -m32: install gcc-multilib g++-multilib" >&2; exit 2
  fi
fi
[ -x "$checkout/compiler/mtl_simu/mtl_simu" ] || make -C "$checkout" compiler >/dev/null
# the simulator runs the firmware from source: its build script writes nominal.mtl
(cd "$checkout" && ./scripts/make_nominal.sh -D SIMU)
make -C "$root" --no-print-directory bootstrap
set +u  # the ROS set-up scripts read unset variables
# shellcheck disable=SC1091
. "$root/tools/env.sh"
exec python "$root/tools/peers/try_serverless_firmware.py" "$checkout"
