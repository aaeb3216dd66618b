# Which ROS 2 distribution the embedded set-up uses, and where its files live. Sourced by
# tools/bootstrap.sh and tools/env.sh (bash); needs $root (the repository) set first.
#   ROS_DISTRO=jazzy (the default, the LTS) or kilted; anything else is a usage error (2).
# Each distribution has its own virtual environment, colcon build and install space, so that
# switching back and forth rebuilds nothing that is already there:
#   .venv/<distro>/   build/<distro>/   install/<distro>/
SUPPORTED_ROS_DISTROS="jazzy kilted"
DEFAULT_ROS_DISTRO=jazzy

# Prints the chosen distribution; a message on stderr and status 2 for one we do not support.
legacy_robots_distro() {
  local distro="${ROS_DISTRO:-$DEFAULT_ROS_DISTRO}"
  case " $SUPPORTED_ROS_DISTROS " in
    *" $distro "*) printf '%s\n' "$distro" ;;
    *)
      printf 'ROS_DISTRO=%s is not supported here; supported: %s (default: %s)\n' \
        "$distro" "${SUPPORTED_ROS_DISTROS// /, }" "$DEFAULT_ROS_DISTRO" >&2
      return 2
      ;;
  esac
}

# A ROS install sourced into this shell (e.g. /opt/ros/humble/setup.bash) would mix its Python
# 3.12 packages and libraries with the embedded set: name it and refuse (status 2).
legacy_robots_foreign_ros() {
  local distro="$1" entry name
  local IFS=:
  for entry in ${AMENT_PREFIX_PATH:-} ${COLCON_PREFIX_PATH:-} ${PYTHONPATH:-}; do
    case "$entry" in "$root"/* | "") continue ;; esac
    case "$entry" in
      /opt/ros/*) name="${entry#/opt/ros/}" && name="${name%%/*}" ;;
      *) [ -e "$entry/share/ament_index/resource_index/packages/rclpy" ] || continue
         name="another" ;;
    esac
    if [ "$name" = "$distro" ]; then
      printf 'a ROS 2 %s install is sourced in this shell (%s); the embedded set-up has its own\n' \
        "$name" "$entry" >&2
      printf '%s and must not mix with it: open a shell without it, or build this workspace with\n' \
        "$distro" >&2
      printf 'that install as README.md says ("In a ROS 2 workspace")\n' >&2
    else
      printf 'a ROS 2 %s install is sourced in this shell (%s) but ROS_DISTRO asks for %s:\n' \
        "$name" "$entry" "$distro" >&2
      case " $SUPPORTED_ROS_DISTROS " in
        *" $name "*) printf 'open a shell without it, or choose ROS_DISTRO=%s\n' "$name" >&2 ;;
        *) printf 'open a shell without it (supported here: %s)\n' \
             "${SUPPORTED_ROS_DISTROS// /, }" >&2 ;;
      esac
    fi
    return 2
  done
}

# The venv's name: the distribution, or <distro>-noble with LEGACY_ROBOTS_CONSTRAINTS=noble
# (Ubuntu 24.04's library versions, requirements/constraints-noble.txt).
legacy_robots_flavour() {
  case "${LEGACY_ROBOTS_CONSTRAINTS:-}" in
    "") printf '%s\n' "$1" ;;
    noble) printf '%s-noble\n' "$1" ;;
    *)
      printf 'LEGACY_ROBOTS_CONSTRAINTS=%s is not known; known: noble (or unset)\n' \
        "$LEGACY_ROBOTS_CONSTRAINTS" >&2
      return 2
      ;;
  esac
}
