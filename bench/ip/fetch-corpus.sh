#!/usr/bin/env bash
# Brings the public IP repositories of bench/ip/corpus.json onto this machine, each at the commit
# the corpus pins, so that `npm run bench:ip` measures the same sources everywhere. Nothing fetched
# here is part of the project: it lands in the git-ignored .chorus-cache/ip-corpus/<owner>+<name>/.
#
# Usage: bash bench/ip/fetch-corpus.sh [--from-mirror DIR] [--into DIR] [--corpus FILE]
#   (default)          git fetch --depth 1 https://github.com/<owner>/<name> <sha>
#   --from-mirror DIR  fetch from local git directories instead (no network): DIR/<owner>+<name>
#                      is a bare git directory, or holds one a few levels down (e.g. repo/ or
#                      repo/.git, the layout of a mirror tool)
#   --into DIR         where the checkouts go (default .chorus-cache/ip-corpus)
#   --corpus FILE      the corpus file (default bench/ip/corpus.json)
# A repository whose corpus entry lists "sparse" paths (git sparse-checkout patterns, e.g. /rtl/)
# is checked out with only those paths, and only their files' contents are fetched. A folder
# already at its commit is left alone. Exit status: 0 when every repository is there, 1 otherwise.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
corpus="$root/bench/ip/corpus.json"
into="$root/.chorus-cache/ip-corpus"
mirror=""

while [[ $# -gt 0 ]]; do
  case "$1" in
    --from-mirror) mirror=$(cd "$2" && pwd); shift 2 ;;
    --into) into="$2"; shift 2 ;;
    --corpus) corpus="$2"; shift 2 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "fetch-corpus: unknown argument $1" >&2; exit 2 ;;
  esac
done

# One line per repository: owner/name, commit, sparse paths (space-separated, may be empty).
repo_lines() {
  node -e '
    const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    for (const r of c.repos) console.log([r.repo, r.commit, (r.sparse ?? []).join(" ")].join("\t"));
  ' "$corpus"
}

# The git directory for owner+name inside the mirror folder: the first folder (depth <= 3) that
# holds HEAD and objects/.
mirror_git_dir() {
  local base="$mirror/$1"
  [[ -d "$base" ]] || return 1
  find "$base" -maxdepth 3 -type d -name objects -printf '%h\n' 2>/dev/null |
    while read -r d; do [[ -f "$d/HEAD" ]] && { echo "$d"; break; }; done
}

# Fetches one repository at one commit into its folder; skips a folder already there.
fetch_one() {
  local repo=$1 sha=$2 sparse=$3
  local dir="$into/${repo/\//+}" source
  if [[ "$(git -C "$dir" rev-parse -q --verify HEAD 2>/dev/null || true)" == "$sha" ]]; then
    echo "$repo: at $sha already"
    # The corpus may name other paths since the last fetch: the checkout follows them.
    # shellcheck disable=SC2086 # the sparse paths are one word each
    [[ -z "$sparse" ]] || git -C "$dir" sparse-checkout set --no-cone $sparse
    return 0
  fi
  if [[ -n "$mirror" ]]; then
    source=$(mirror_git_dir "${repo/\//+}") || true
    [[ -n "$source" ]] || { echo "$repo: no git directory under $mirror/${repo/\//+}" >&2; return 1; }
  else
    source="https://github.com/$repo"
  fi
  echo "$repo: fetching $sha from $source"
  mkdir -p "$dir"
  git -C "$dir" init -q
  git -C "$dir" remote remove origin 2>/dev/null || true
  git -C "$dir" remote add origin "$source"
  # A local source serves a commit by its id and a filtered (sparse) fetch only when asked to.
  [[ -z "$mirror" ]] ||
    git -C "$dir" config remote.origin.uploadpack \
      'git -c uploadpack.allowFilter=true -c uploadpack.allowAnySHA1InWant=true upload-pack'
  local filter=()
  if [[ -n "$sparse" ]]; then
    # shellcheck disable=SC2086 # the sparse paths are one word each
    git -C "$dir" sparse-checkout set --no-cone $sparse
    filter=(--filter=blob:none)
  fi
  # (set -e does not reach into a function called from `||`: each step says when it fails.)
  git -C "$dir" fetch -q --depth 1 "${filter[@]}" origin "$sha" || { echo "$repo: fetch of $sha failed" >&2; return 1; }
  git -C "$dir" checkout -q --force FETCH_HEAD || { echo "$repo: checkout failed" >&2; return 1; }
  [[ "$(git -C "$dir" rev-parse HEAD)" == "$sha" ]] || { echo "$repo: checkout is not at $sha" >&2; return 1; }
}

mkdir -p "$into"
failed=0
while IFS=$'\t' read -r repo sha sparse; do
  fetch_one "$repo" "$sha" "$sparse" || failed=1
done < <(repo_lines)
exit "$failed"
