#!/usr/bin/env bash
# Prints the version make stamps into the binaries and the image: the release tag at HEAD
# (v0.2.0), or between releases a semver pre-release of the next patch release, with the
# commits since the last tag and the commit (v0.2.1-dev.3.gabc1234; v0.1.0-dev.N.g... before
# the first release), and ".dirty" when tracked files have uncommitted changes. It sorts after
# the last release and before the next, and is a valid image tag too.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "v0.1.0-dev"
  exit 0
fi
dirty=""
if [[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
  dirty=".dirty"
fi
commit=$(git rev-parse --short=7 HEAD)
if tag=$(git describe --tags --exact-match --match 'v[0-9]*.[0-9]*.[0-9]*' HEAD 2>/dev/null) && [[ -z "${dirty}" ]]; then
  echo "${tag}"
  exit 0
fi
if tag=$(git describe --tags --abbrev=0 --match 'v[0-9]*.[0-9]*.[0-9]*' HEAD 2>/dev/null); then
  count=$(git rev-list --count "${tag}..HEAD")
  IFS=. read -r major minor patch <<<"${tag#v}"
  patch=${patch%%[-+]*}
  next="v${major}.${minor}.$((patch + 1))"
else
  count=$(git rev-list --count HEAD)
  next="v0.1.0"
fi
echo "${next}-dev.${count}.g${commit}${dirty}"
