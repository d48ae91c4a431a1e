#!/usr/bin/env bash
# Installs the Debian packages named as arguments that are not installed yet (apt-get update
# runs once, and only when something is missing). Sourced or run by the other scripts:
#
#   scripts/ensure_packages.sh clang libclang-rt-14-dev
set -euo pipefail

missing=()
for p in "$@"; do
  # npm: any npm on the PATH will do. NodeSource's nodejs package ships its own and conflicts with
  # Debian's npm package, so a machine with it must not be asked to install Debian's.
  if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "ensure_packages: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
