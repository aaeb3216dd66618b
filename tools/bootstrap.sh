#!/usr/bin/env bash
# Idempotent, cached set-up of the development environment for one ROS 2 distribution
# (ROS_DISTRO=jazzy, the default, or kilted; tools/distro.sh):
#   1. a virtual environment (.venv/<distro>) with that distribution's ROS 2 wheels
#      (requirements/ros-<distro>.txt) and the libraries of requirements.txt,
#   2. the CMake path fix the message wheels need (tools/fix_wheel_cmake_paths.py),
#   3. a colcon build of every package under src/ (build/<distro>, install/<distro>).
# Each step is skipped when its inputs have not changed since it last succeeded, so a second
# run with nothing changed takes a few seconds; a step that was interrupted runs again.
# LEGACY_ROBOTS_CONSTRAINTS=noble installs Ubuntu 24.04's library versions instead
# (requirements/constraints-noble.txt) in a venv of its own, .venv/<distro>-noble.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { printf 'bootstrap: %s\n' "$*" >&2; }
fail() { printf 'bootstrap: ERROR: %s\n' "$*" >&2; exit 1; }
# shellcheck source=tools/distro.sh
. "$root/tools/distro.sh"
distro="$(legacy_robots_distro)" || exit 2
legacy_robots_foreign_ros "$distro" || exit 2
flavour="$(legacy_robots_flavour "$distro")" || exit 2
venv="$root/.venv/$flavour"
stamps="$venv/.stamps"

python="${PYTHON:-python3}"
command -v "$python" >/dev/null || fail "no '$python' on PATH; install CPython 3.11 (the ROS 2 wheels are cp311 only)"
pyver="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[ "$pyver" = "3.11" ] || fail "'$python' is Python $pyver; the ROS 2 $distro wheels need CPython 3.11 (set PYTHON=...)"
# cmake and a C/C++ compiler build the interface package; install them if we may.
missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v c++ >/dev/null || missing+=(g++)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing ${missing[*]} with apt-get"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null \
      || fail "apt-get could not install ${missing[*]}"
  else
    fail "missing ${missing[*]} (needed to build the interface package): install them, e.g. apt-get install ${missing[*]}"
  fi
fi

# 0. the single .venv of earlier versions (Kilted only) is replaced by one per distribution
if [ -f "$root/.venv/pyvenv.cfg" ]; then
  say "removing the single-distribution .venv, build/ and install/ of an earlier version"
  rm -rf "$root/.venv" "$root/build" "$root/install"
fi
mkdir -p "$root/.venv" && touch "$root/.venv/COLCON_IGNORE"   # the wheels put package.xml files in share/

# 1. virtual environment and wheels; a venv whose creation did not finish is made anew
if [ ! -f "$stamps/venv" ]; then
  say "creating $venv (ROS 2 $distro)"
  rm -rf "$venv"
  "$python" -m venv "$venv" || fail "could not create the virtual environment (python3-venv missing?)"
  mkdir -p "$stamps"
  echo "$distro" > "$stamps/venv"
fi
rm -f "$stamps/complete"   # until every step below has succeeded, env.sh refuses this venv
# requirements-speech.txt: the Nabaztag bridge's speech engines (GPL, run in a worker process of
# their own); LEGACY_ROBOTS_SPEECH=0 leaves them out (say then answers which package to install)
requirement_files=("$root/requirements/ros-$distro.txt" "$root/requirements.txt")
[ "${LEGACY_ROBOTS_SPEECH:-1}" = 0 ] || requirement_files+=("$root/requirements-speech.txt")
if [ "$flavour" != "$distro" ]; then
  # Ubuntu's versions: each pin of the constraints file replaces the requirement files' own
  constraints="$root/requirements/constraints-noble.txt"
  awk -F'==' 'function key(name) { name = tolower(name); gsub(/_/, "-", name); return name }
    NR == FNR { if (NF == 2) pin[key($1)] = $0; next }
    { print ((NF == 2 && key($1) in pin) ? pin[key($1)] : $0) }' \
    "$constraints" "${requirement_files[@]}" > "$stamps/requirements-noble.txt"
  requirement_files=("$stamps/requirements-noble.txt" "$constraints")
  requirement_args=(-r "$stamps/requirements-noble.txt" -c "$constraints")
else
  requirement_args=()
  for file in "${requirement_files[@]}"; do requirement_args+=(-r "$file"); done
fi
req_hash="$(cat "${requirement_files[@]}" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamps/requirements" 2>/dev/null)" != "$req_hash" ]; then
  say "installing Python packages (ROS 2 $distro wheels; about a minute)"
  mkdir -p "$root/log"
  pip_log="log/bootstrap-$flavour-pip.log"
  "$venv/bin/python" -m pip install --disable-pip-version-check \
    "${requirement_args[@]}" \
    > "$root/$pip_log" 2>&1 || {
    grep -v 'is ignored: it is neither a file nor a directory' "$root/$pip_log" | tail -n 20 >&2
    fail "pip could not install ${requirement_files[*]#"$root/"} (is PyPI reachable?); full log: $pip_log"
  }
  rm -f "$stamps/cmake-fix"
  echo "$req_hash" > "$stamps/requirements"
fi

# 2. CMake path fix (idempotent; rerun after every install)
if [ ! -f "$stamps/cmake-fix" ]; then
  "$venv/bin/python" "$root/tools/fix_wheel_cmake_paths.py" "$venv" >&2 || fail "CMake path fix failed"
  touch "$stamps/cmake-fix"
fi

# 3. colcon build, when any source file changed since the last good build; ros_compat/ holds
#    ROS packages the wheels lack (tf2_msgs), built only while the venv has no copy of its own
base_paths=(src)
[ -d "$venv/share/tf2_msgs" ] || base_paths+=(ros_compat)
src_hash="$(cd "$root" && find src msg launch config colcon.meta ros_compat -type f \
  -not -path '*/__pycache__/*' -not -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
install_base="install/$flavour"
if [ "$(cat "$stamps/build" 2>/dev/null)" != "$src_hash" ] || [ ! -f "$root/$install_base/setup.bash" ]; then
  build_log="log/bootstrap-$flavour-build.log"
  say "colcon build for $flavour (log: $build_log)"
  mkdir -p "$root/log"
  rm -f "$stamps/build"
  (
    cd "$root"
    # shellcheck disable=SC1091
    . "$venv/bin/activate"
    export CMAKE_PREFIX_PATH="$VIRTUAL_ENV" AMENT_PREFIX_PATH="$VIRTUAL_ENV"
    colcon --log-base "log/colcon-$flavour" build --symlink-install --base-paths "${base_paths[@]}" \
      --build-base "build/$flavour" --install-base "$install_base" \
      --event-handlers console_cohesion- summary+ \
      --cmake-args -DPython3_EXECUTABLE="$VIRTUAL_ENV/bin/python" -DBUILD_TESTING=OFF
  ) > "$root/$build_log" 2>&1 || {
    tail -n 40 "$root/$build_log" >&2
    fail "colcon build failed; full log: $build_log"
  }
  echo "$src_hash" > "$stamps/build"
fi
echo "$distro" > "$stamps/complete"
say "ready: ROS 2 $distro in .venv/$flavour (. tools/env.sh to use it in a shell)"
