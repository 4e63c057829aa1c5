"""Repository hygiene: the tree speaks of the product, never of the work that made it.

Every tracked file (``git ls-files``; a walk of the tree, .git/ excluded, when the tree is not a git checkout or git is
missing) is checked for work-log references:

- in the text of every non-binary file: ``issue 7`` / ``issues 5/6`` / ``issue #12``, ``session 18``, ``call 3 of
  the session`` / ``step 2 of this work``;
- in every file or folder name: ``s4_`` / ``_s11.md``-style work-step parts, ``session``, and the history names
  ``_extra``, ``misc_``, ``_more``, ``_gaps``, ``attn23`` (names that say when or why a file was added instead of
  what it holds).

A comment states what the code does and why; measurements name the GPU and the date, not the work step. Each failure
lists ``path:line: text`` (contents) or the offending name, so the fix is a rewrite of that comment or a rename. Only
binary files, .git/ and this file are excluded. CPU only; needs nothing but Python (and git when the tree is a
checkout).
"""
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SELF = Path(__file__).resolve().relative_to(ROOT).as_posix()

CONTENT_PATTERNS = [
    re.compile(r"\bissues? #?\d+", re.IGNORECASE),
    re.compile(r"\bsessions? \d+", re.IGNORECASE),
    re.compile(r"\b(call|step) \d+ of (the|this) (session|work)", re.IGNORECASE),
]

# Applied to each component of a path (folders and the file name).
NAME_PATTERNS = [
    re.compile(r"(^|_)s\d+(_|\.|$)", re.IGNORECASE),
    re.compile(r"session", re.IGNORECASE),
    re.compile(r"_(extra|more|gaps)(?=[_.\-]|$)", re.IGNORECASE),
    re.compile(r"(^|_)misc_", re.IGNORECASE),
    re.compile(r"attn23", re.IGNORECASE),
]


def _git_files():
    """Tracked files relative to ROOT, or None when ROOT is not the top of a git checkout (or git is missing)."""
    try:
        top = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, check=True).stdout.strip()
        if Path(top).resolve() != ROOT:
            return None
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def _walked_files():
    files = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            files.append((Path(dirpath) / name).relative_to(ROOT).as_posix())
    return files


def _tree_files():
    """(source, files): source says how the list was made, so a run never passes on an empty list unnoticed."""
    files = _git_files()
    if files is not None:
        return "git ls-files", files
    return "walk of the tree (not a git checkout)", _walked_files()


def _is_excluded(rel):
    return rel == SELF or rel == ".git" or rel.startswith(".git/")


def _read_text(path):
    """The file's text (UTF-8, undecodable bytes replaced), or None for binary files (a NUL byte in the first 64 KiB)."""
    data = path.read_bytes()
    if b"\0" in data[:65536]:
        return None
    return data.decode("utf-8", errors="replace")


def _report(capsys, line):
    with capsys.disabled():
        print(f"\n[repo hygiene] {line}")


def test_no_work_log_references_in_file_contents(capsys):
    """No tracked text file mentions issue numbers, session numbers or 'call / step N of the session / work'."""
    source, files = _tree_files()
    assert files, f"no files found by {source} under {ROOT}"
    scanned, skipped_binary, hits = 0, 0, []
    for rel in files:
        if _is_excluded(rel):
            continue
        path = ROOT / rel
        if not path.is_file():
            continue  # tracked but deleted in the working tree: nothing to read
        text = _read_text(path)
        if text is None:
            skipped_binary += 1
            continue
        scanned += 1
        for number, line in enumerate(text.splitlines(), 1):
            if any(p.search(line) for p in CONTENT_PATTERNS):
                hits.append(f"{rel}:{number}: {line.strip()[:160]}")
    _report(capsys, f"contents: {scanned} text files scanned ({source}; {skipped_binary} binary files not read)")
    assert not hits, (f"{len(hits)} work-log references in {len({h.split(':', 1)[0] for h in hits})} files "
                      f"({scanned} text files scanned):\n" + "\n".join(hits))


def test_no_history_names_in_file_paths(capsys):
    """No tracked file or folder is named after a work step (s4_..., session...) or as a history bucket
    (_extra, misc_, _more, _gaps, attn23)."""
    source, files = _tree_files()
    assert files, f"no files found by {source} under {ROOT}"
    scanned, hits = 0, []
    for rel in files:
        if _is_excluded(rel):
            continue
        scanned += 1
        parts = rel.split("/")
        bad = [part for part in parts if any(p.search(part) for p in NAME_PATTERNS)]
        if bad:
            hits.append(f"{rel} ({', '.join(bad)})")
    _report(capsys, f"names: {scanned} paths scanned ({source})")
    assert not hits, f"{len(hits)} history names ({scanned} paths scanned):\n" + "\n".join(hits)
