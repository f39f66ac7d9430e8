#!/usr/bin/env bash
# Fails when a text file of the repository names a repository path that does not exist:
#
#   (a) markdown links [text](target) in *.md files, outside code spans and fenced blocks:
#       the target (less its #fragment) resolved against the .md file's folder ("/x" against
#       the repository's root); http(s):, mailto: and other schemes, and bare #anchors, are
#       left alone;
#   (b) any token that looks like a path to a .md file, in any checked file: "docs/X.md" against
#       the repository's root (or the file's folder), "../X.md" and "./X.md" against the file's
#       folder, a bare "X.md" against the file's folder (in docs/*.md) or the file's folder or
#       the root (elsewhere); absolute paths (/usr/...) and URLs are left alone;
#   (c) any mention of a file inside a folder named "shared" (the word, a slash and a file
#       name with an extension): no such folder is part of the repository, so the mention is
#       always an error. This script's own lines are left out of this check only.
#
# Checked: the files git tracks (and untracked files it does not ignore, so new files are
# checked before they are committed) named *.md, *.h, *.cpp, *.cu, *.cuh, *.cmake, *.py, *.sh,
# CMakeLists.txt or Makefile. A path exists when git tracks it (or it is untracked and not
# ignored) and it is still on disk, or it is a folder holding such a file.
#
#   scripts/check-doc-refs.sh      prints "file:line: missing path (...)" for each finding;
#                                  exit 1 when there is one, 0 otherwise
#
# Needs bash, git and a POSIX awk (mawk is enough).
set -euo pipefail

root=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
cd "$root"
self=scripts/check-doc-refs.sh

known=$(mktemp)
files=$(mktemp)
trap 'rm -f "$known" "$files"' EXIT

# Every path of the repository as it stands: tracked or untracked-but-not-ignored, less the
# tracked files deleted from the work tree.
{
  git ls-files -co --exclude-standard
  git ls-files -d | sed 's/^/-/'
} >"$known"

git ls-files -co --exclude-standard -- '*.md' '*.h' '*.cpp' '*.cu' '*.cuh' '*.cmake' '*.py' \
  '*.sh' 'CMakeLists.txt' '*/CMakeLists.txt' 'Makefile' '*/Makefile' | while IFS= read -r f; do
  [[ -f $f ]] && printf '%s\n' "$f"
done >"$files"

status=0
# One awk over every file; xargs splits the list only if it is very long (each part then reads
# the known paths again, which takes milliseconds). File names with newlines are not supported.
# shellcheck disable=SC2016  # the awk program's $ fields are awk's, not the shell's
tr '\n' '\0' <"$files" | xargs -0 -r awk -v known="$known" -v self="$self" '
function mark(p,    i, d) {
  known_path[p] = 1
  while ((i = last_slash(p)) > 0) {  # every parent folder exists too
    p = substr(p, 1, i - 1)
    if (p in known_path) break
    known_path[p] = 1
  }
}
function last_slash(s,    i) {
  for (i = length(s); i > 0; i--) if (substr(s, i, 1) == "/") return i
  return 0
}
# "a/./b/../c/" -> "a/c"; "" for a path that climbs above the root.
function normalize(p,    n, parts, out, k, i, seg) {
  n = split(p, parts, "/")
  k = 0
  for (i = 1; i <= n; i++) {
    seg = parts[i]
    if (seg == "" || seg == ".") continue
    if (seg == "..") {
      if (k == 0) return "\001"  # outside the repository
      k--
      continue
    }
    out[++k] = seg
  }
  p = ""
  for (i = 1; i <= k; i++) p = p (i > 1 ? "/" : "") out[i]
  return p
}
function join(d, p) { return d == "" ? p : d "/" p }
function exists(p) { p = normalize(p); return p == "" || (p in known_path) }
function report(what, target,    key) {
  key = FILENAME SUBSEP FNR SUBSEP target  # a link to a .md file is also a path token: once
  if (key in reported) return
  reported[key] = 1
  printf "%s:%d: missing %s (%s)\n", FILENAME, FNR, target, what
  bad++
}
BEGIN {
  while ((getline line < known) > 0) {
    if (substr(line, 1, 1) == "-") gone[substr(line, 2)] = 1
    else all[line] = 1
  }
  for (p in all) if (!(p in gone)) mark(p)
}
FNR == 1 {
  i = last_slash(FILENAME)
  dir = i ? substr(FILENAME, 1, i - 1) : ""
  is_md = FILENAME ~ /\.md$/
  in_docs = FILENAME ~ /^docs\/[^\/]*\.md$/
  fenced = 0
}
{
  line = $0

  # (c) a file in a folder named shared
  if (FILENAME != self) {
    rest = line
    while (match(rest, /(^|[^A-Za-z0-9_])shared\/[A-Za-z0-9_.-]*[A-Za-z0-9_-]\.[A-Za-z0-9]+/)) {
      tok = substr(rest, RSTART, RLENGTH)
      sub(/^[^s]*/, "", tok)
      report("the shared folder is not part of the repository", tok)
      rest = substr(rest, RSTART + RLENGTH)
    }
  }

  # (a) markdown links, outside fenced blocks and code spans
  if (is_md) {
    if (line ~ /^[ \t]*(```|~~~)/) { fenced = !fenced; next_line = 1 } else next_line = 0
    if (!fenced && !next_line) {
      text = line
      gsub(/`[^`]*`/, "", text)
      while (match(text, /\[[^]]*\]\([^)]*\)/)) {
        link = substr(text, RSTART, RLENGTH)
        text = substr(text, RSTART + RLENGTH)
        sub(/^\[[^]]*\]\(/, "", link)
        sub(/\)$/, "", link)
        sub(/^[ \t]+/, "", link)
        sub(/[ \t].*$/, "", link)          # an optional "title"
        sub(/^</, "", link); sub(/>$/, "", link)
        if (link ~ /^[A-Za-z][A-Za-z0-9+.-]*:/ || link ~ /^#/ || link == "") continue
        sub(/[#?].*$/, "", link)
        target = substr(link, 1, 1) == "/" ? link : join(dir, link)
        if (!exists(target)) report("link target, from " link, normalize(target))
      }
    }
  }

  # (b) paths to .md files, anywhere (URLs removed first)
  text = line
  gsub(/[A-Za-z][A-Za-z0-9+.-]*:\/\/[^ \t)>"\047`]*/, "", text)
  while (match(text, /[A-Za-z0-9_.\/-]*[A-Za-z0-9_-]\.md/)) {
    tok = substr(text, RSTART, RLENGTH)
    before = RSTART > 1 ? substr(text, RSTART - 1, 1) : ""
    after = substr(text, RSTART + RLENGTH, 1)
    text = substr(text, RSTART + RLENGTH)
    if (after ~ /[A-Za-z0-9_]/) {                 # ".mdx" and the like: skip the whole word
      sub(/^[A-Za-z0-9_.\/-]*/, "", text)
      continue
    }
    if (substr(tok, 1, 1) == "/") continue        # absolute: not a repository path
    if (before == "$") continue                   # "$DIR/X.md": a variable decides the folder
    if (tok ~ /(^|\/)shared\/[^\/]*$/) continue  # reported by (c)
    if (FILENAME == self) continue
    if (tok ~ /^\.\.?\//) {
      ok = exists(join(dir, tok)); shown = normalize(join(dir, tok))
    } else if (index(tok, "/")) {
      ok = exists(tok) || exists(join(dir, tok)); shown = tok
    } else if (in_docs) {
      ok = exists(join(dir, tok)); shown = join(dir, tok)
    } else {
      ok = exists(join(dir, tok)) || exists(tok); shown = tok
    }
    if (!ok) report("path to a .md file, written " tok, shown == "\001" ? tok : shown)
  }
}
END { exit bad > 0 }
' || status=1

exit "$status"
