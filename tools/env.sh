# Source this file to use the bootstrapped workspace in a shell:
#   . tools/env.sh                      # ROS 2 Jazzy, the default
#   ROS_DISTRO=kilted . tools/env.sh    # Kilted (make bootstrap with the same ROS_DISTRO first)
# It activates .venv/<distro> and install/<distro>, and keeps DDS on this host. It refuses (status
# 2) an unsupported ROS_DISTRO, a ROS install sourced into the shell, and a set-up that is missing
# or was interrupted; sourced again with another ROS_DISTRO, it leaves the first one behind.
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_legacy_robots_env() {
  local root="$_root" distro flavour venv entry entries kept var
  # shellcheck source=tools/distro.sh
  . "$root/tools/distro.sh"
  distro="$(legacy_robots_distro)" || return 2
  flavour="$(legacy_robots_flavour "$distro")" || return 2
  venv="$root/.venv/$flavour"
  # what an earlier `. tools/env.sh` of this checkout put on the paths (another distribution's)
  [ "$(type -t deactivate)" = function ] && [ "${VIRTUAL_ENV:-}" != "${VIRTUAL_ENV#"$root"/}" ] &&
    deactivate
  for var in PATH PYTHONPATH LD_LIBRARY_PATH AMENT_PREFIX_PATH CMAKE_PREFIX_PATH COLCON_PREFIX_PATH; do
    IFS=: read -ra entries <<< "${!var:-}"
    kept=""
    for entry in "${entries[@]}"; do
      case "$entry" in "$root"/*) ;; *) kept="${kept:+$kept:}$entry" ;; esac
    done
    if [ -n "$kept" ]; then export "$var=$kept"; else unset "$var"; fi
  done
  legacy_robots_foreign_ros "$distro" || return 2
  if [ "$(cat "$venv/.stamps/complete" 2>/dev/null)" != "$distro" ]; then
    printf 'tools/env.sh: the ROS 2 %s set-up (.venv/%s) is missing or unfinished: run\n' \
      "$distro" "$flavour" >&2
    printf '  ROS_DISTRO=%s make bootstrap\n' "$distro" >&2
    return 2
  fi
  # shellcheck disable=SC1091
  . "$venv/bin/activate"
  export CMAKE_PREFIX_PATH="$VIRTUAL_ENV" AMENT_PREFIX_PATH="$VIRTUAL_ENV"
  # shellcheck disable=SC1091
  . "$root/install/$flavour/setup.bash"
  # every package's installed executables (urf_builder, wav2usf, p2os_emulator, ...) on PATH:
  # there is no `ros2 run` here (no ros2cli wheel)
  local pkg bin
  for pkg in "$root/install/$flavour"/*/; do
    bin="${pkg}lib/$(basename "$pkg")"
    [ -d "$bin" ] && PATH="$bin:$PATH"
  done
  export PATH ROS_DISTRO="$distro"
  export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
  export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
}
_legacy_robots_env
_legacy_robots_status=$?
unset _root
unset -f _legacy_robots_env
# shellcheck disable=SC2152
return $_legacy_robots_status 2>/dev/null || exit $_legacy_robots_status
