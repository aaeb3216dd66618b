#!/usr/bin/env bash
# The programs `make bench` measures with besides Python: ApacheBench (ab, Debian's
# apache2-utils) and a C compiler for the Nabaztag load generator. Installed with apt-get
# when we may; otherwise a clear message and a non-zero exit.
set -euo pipefail
missing=()
command -v ab >/dev/null || missing+=(apache2-utils)
command -v cc >/dev/null || missing+=(gcc)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  printf 'bench: installing %s with apt-get\n' "${missing[*]}" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null \
    || { printf 'bench: ERROR: apt-get could not install %s\n' "${missing[*]}" >&2; exit 1; }
else
  printf 'bench: ERROR: missing %s; install them, e.g. apt-get install %s\n' "${missing[*]}" "${missing[*]}" >&2
  exit 1
fi
