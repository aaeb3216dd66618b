# Source this file to use the bootstrapped workspace in a shell:
#   . tools/env.sh
# It activates .venv and the colcon install space, and keeps DDS on this host.
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$_root/.venv/bin/activate"
export CMAKE_PREFIX_PATH="$VIRTUAL_ENV" AMENT_PREFIX_PATH="$VIRTUAL_ENV"
# shellcheck disable=SC1091
[ -f "$_root/install/setup.bash" ] && . "$_root/install/setup.bash"
export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
unset _root
