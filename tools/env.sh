# Source this file to use the bootstrapped workspace in a shell:
#   . tools/env.sh
# It activates .venv and the colcon install space, and keeps DDS on this host.
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$_root/.venv/bin/activate"
export CMAKE_PREFIX_PATH="$VIRTUAL_ENV" AMENT_PREFIX_PATH="$VIRTUAL_ENV"
# shellcheck disable=SC1091
[ -f "$_root/install/setup.bash" ] && . "$_root/install/setup.bash"
# every package's installed executables (urf_builder, wav2usf, p2os_emulator, ...) on PATH:
# there is no `ros2 run` here (no ros2cli wheel)
for _pkg in "$_root"/install/*/; do
  _bin="${_pkg}lib/$(basename "$_pkg")"
  case ":$PATH:" in *":$_bin:"*) ;; *) [ -d "$_bin" ] && PATH="$_bin:$PATH" ;; esac
done
export PATH
unset _pkg _bin
export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
unset _root
