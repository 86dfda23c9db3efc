#!/usr/bin/env python3
"""Runs the shell blocks of README.md and docs/*.md as a reader would.

Why a runner of our own and not Debian's python3-cram: cram reads its own
.t format (indented `$ ` commands followed by their complete output), so the
blocks would have to be copied out of the Markdown (and could drift from it)
and every block would have to show its whole output, dates and generated ids
included. This runner reads the Markdown itself, checks only the lines the
doc chooses to show, and keeps one shell per file so that servers started in
the background by one block are there for the next. It needs python3 and
bash only.

The rules (docs/contributing.md says the same for writers):
- A block is a fence whose info string is sh, bash, shell or console. Every
  such block runs, in order, in one bash per file (`set -e -o pipefail`, so
  any failing command fails the block), unless the line right before the
  fence is `<!-- not run: REASON -->` (a reason is required).
- `<!-- run, then: COMMAND -->` right before the fence runs COMMAND after the
  block, unseen by readers: only for waiting until what the block started in
  the background is ready (the helpers `wait_for_port PORT [SECONDS]` and
  `wait_for_output TEXT [TIMES]`, which reads the block's output so far).
- A fence with info string `text` right after a block (blank lines may sit
  between) is that block's expected output: each of its lines must appear in
  the block's output (stdout and stderr), in that order; `...` inside a line
  matches anything, and a line that is only `...` is skipped.
- An unlabeled fence that starts with one of our commands is an error: label
  it sh (and run it) or mark it.
- `<!-- from: PATH -->` right before a fence (any info string) says the fence
  quotes PATH (relative to the source dir): its lines must appear in PATH
  verbatim, as one run of consecutive lines, or as several runs in that order
  where the fence has a line that is only `...` or `// ...` between them.
- `<!-- file: PATH -->` right before a shell block says the block writes a
  whole file of PATH's (relative to the source dir) for the reader: it must
  be exactly `cat > NAME <<'EOF'`, the file's every line, and `EOF`, where
  PATH ends with /NAME. With --complete-folder DIR, every file under DIR must
  be written so by the pages run, so that a reader who follows them has
  every file the project needs.

Each file runs in a fresh folder that looks like a checkout: the source
tree's top-level entries are linked there and `build` links to the build tree
under test. HOME and TMPDIR are that folder (fake_gateway keeps its ledger
there) and DATABASE_URL is unset (readers start without one, so the commands
start their embedded PostgreSQL in the folder's .phasekey/). No build folder
is on PATH: a page runs with the PATH a reader has after the install that
docs/getting-started.md shows (`cmake --install build --prefix
"$HOME/phasekey"`, then `$HOME/phasekey/bin` first on PATH). So for a page
that does not install phasekey itself, the build tree is installed once (for
the whole run) and `$HOME/phasekey` links to that installation; a page that
runs `cmake --install` itself (getting-started.md, tutorial.md) gets neither
the link nor the PATH entry, and must say what the reader does.
After the last block (or a failure) every process the file started is sent
SIGTERM, then SIGKILL, and any PostgreSQL left in the folder is stopped.

With --outside-checkout the folder is empty instead: the page runs where a
reader who has only the installed package would run it (the tutorial). With
--as-user NAME, a runner started as root runs the pages as that user (the
folder handed over to it), so they run as a reader without root would; the
installation stays root's, readable by all.

Usage: run_doc_blocks.py --source-dir DIR --build-dir DIR [--exclude FILE.md]...
                         [--outside-checkout] [--as-user NAME] [--complete-folder DIR]...
                         [--file-timeout SECONDS] [FILE.md ...]
Exit status 0 when every block of every file passed.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SHELL_INFOS = {"sh", "bash", "shell", "console"}
OUR_COMMANDS = re.compile(r"^(build/|\./|phasekey\b|ride_booking\b|fake_gateway\b|curl\b|cmake\b|ctest\b|psql\b|tests/)")
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(\S.*?)\s*-->$")
RUN_THEN = re.compile(r"^<!--\s*run, then:\s*(\S.*?)\s*-->$")
FROM = re.compile(r"^<!--\s*from:\s*(\S+)\s*-->$")
FILE = re.compile(r"^<!--\s*file:\s*(\S+)\s*-->$")
HEREDOC = re.compile(r"^cat > (\S+) <<'EOF'$")
ELISION = ("...", "// ...", "# ...", "-- ...")

PRELUDE = r"""
wait_for_port() {  # PORT [SECONDS]: until something accepts on 127.0.0.1:PORT
  local deadline=$((SECONDS + ${2:-120}))
  until (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "nothing listens on port $1 after ${2:-120}s" >&2; return 1; }
    sleep 0.2
  done
}
wait_for_output() {  # TEXT [TIMES]: until the block's output holds TEXT TIMES times (default 1)
  local deadline=$((SECONDS + 120))
  until [ "$(grep -cF -- "$1" "$DOCS_BLOCK_OUT")" -ge "${2:-1}" ]; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "no ${2:-1} lines with '$1' in the output after 120s" >&2; return 1; }
    sleep 0.2
  done
}
"""


class Block:
    def __init__(self, path, line, text):
        self.path, self.line, self.text = path, line, text
        self.skip_reason = None
        self.then = None
        self.expected = []

    def where(self):
        return f"{self.path}:{self.line}"


def quote_error(source_dir, rel, line, quoted, body):
    """Why `body` (a fence at rel:line) is not a quote of the file `quoted`,
    or None when it is."""
    try:
        source = open(os.path.join(source_dir, quoted), encoding="utf-8").read().split("\n")
    except OSError as e:
        return f"{rel}:{line}: the fence quotes {quoted}, which cannot be read: {e}"
    source = [l.rstrip() for l in source]
    runs, run = [], []
    for l in body:
        if l.strip() in ELISION:
            runs.append(run)
            run = []
        else:
            run.append(l.rstrip())
    runs.append(run)
    pos = 0
    for run in (r for r in runs if r):
        at = next((i for i in range(pos, len(source) - len(run) + 1) if source[i:i + len(run)] == run), None)
        if at is None:
            return (f"{rel}:{line}: the fence no longer matches {quoted}; these lines are not in it "
                    f"(in this order, after the fence's earlier lines):\n" + "\n".join(run))
        pos = at + len(run)
    return None


def listing_error(source_dir, rel, line, path, body):
    """Why `body` (a shell fence at rel:line) is not a complete listing of
    `path` written with a quoted here-document, or None when it is."""
    m = HEREDOC.match(body[0]) if body else None
    if not m or body[-1] != "EOF" or "EOF" in body[1:-1]:
        return f"{rel}:{line}: a `file:` block must be `cat > NAME <<'EOF'`, the file, then `EOF`"
    if not ("/" + path).endswith("/" + m.group(1)):
        return f"{rel}:{line}: the block writes {m.group(1)}, which is not {path}"
    try:
        want = open(os.path.join(source_dir, path), encoding="utf-8").read()
    except OSError as e:
        return f"{rel}:{line}: the block lists {path}, which cannot be read: {e}"
    if "\n".join(body[1:-1]) + "\n" != want:
        return f"{rel}:{line}: the listing is not {path} as it is now (every line, in full)"
    return None


def parse(path, rel, source_dir, written=None):
    """The shell blocks of one Markdown file, and the errors in its marks and
    quotes."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, errors = [], []
    i = 0
    last = None  # the last shell block, while only blank lines follow it
    while i < len(lines):
        line = lines[i]
        if not line.startswith("```"):
            if line.strip() and last is not None:
                last = None
            i += 1
            continue
        info = line[3:].strip().split(" ")[0]
        body_start = i + 1
        end = body_start
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        body = lines[body_start:end]
        before = lines[i - 1].strip() if i > 0 else ""
        m = FROM.match(before)
        if m:
            error = quote_error(source_dir, rel, i + 1, m.group(1), body)
            if error:
                errors.append(error)
        m = FILE.match(before)
        if m:
            error = listing_error(source_dir, rel, i + 1, m.group(1), body) if info in SHELL_INFOS else (
                f"{rel}:{i + 1}: a `file:` mark stands before a shell block only")
            if error:
                errors.append(error)
            if written is not None:
                written.add(os.path.normpath(m.group(1)))
        if info in SHELL_INFOS:
            b = Block(rel, i + 1, "\n".join(body) + "\n")
            m = NOT_RUN.match(before)
            if m:
                b.skip_reason = m.group(1)
            elif before.startswith("<!-- not run"):
                errors.append(f"{rel}:{i}: `not run` needs a reason: <!-- not run: REASON -->")
            m = RUN_THEN.match(before)
            if m:
                b.then = m.group(1)
            blocks.append(b)
            last = b
        elif info in ("text", "output") and last is not None:
            last.expected = [l for l in body if l.strip() and l.strip() != "..."]
            last = None
        else:
            last = None
            first = next((l.strip() for l in body if l.strip()), "")
            if info == "" and OUR_COMMANDS.match(first):
                errors.append(f"{rel}:{i + 1}: an unlabeled fence holds a command ({first!r}): "
                              "label it ```sh, or mark it <!-- not run: REASON -->")
        i = end + 1
    return blocks, errors


def line_pattern(expected):
    parts = [re.escape(p) for p in expected.strip().split("...")]
    return re.compile(".*".join(parts))


def missing_lines(expected, output):
    """The first expected line not found (in order) in output, or None."""
    out = [l.rstrip("\r") for l in output.split("\n")]
    pos = 0
    for e in expected:
        pattern = line_pattern(e)
        while pos < len(out) and not pattern.search(out[pos]):
            pos += 1
        if pos == len(out):
            return e
        pos += 1
    return None


def make_workdir(source_dir, build_dir, rel, bare):
    work = tempfile.mkdtemp(prefix="pk-docs-" + re.sub(r"[^a-z0-9]+", "-", rel.lower()) + "-")
    if bare:
        return work
    for entry in os.listdir(source_dir):
        if entry in ("build", ".git", ".phasekey") or entry.startswith("build-"):
            continue
        os.symlink(os.path.join(source_dir, entry), os.path.join(work, entry))
    os.symlink(build_dir, os.path.join(work, "build"))
    return work


def driver_script(blocks, out_dir):
    parts = [PRELUDE, "exec </dev/null"]
    for n, b in enumerate(blocks):
        if b.skip_reason:
            continue
        parts.append(f'DOCS_BLOCK_OUT="{out_dir}/{n}.out"; exec >"$DOCS_BLOCK_OUT" 2>&1')
        parts.append(f'echo {n} >"{out_dir}/current"')
        parts.append("set -e -o pipefail")
        parts.append(b.text)
        parts.append("set +e")
        if b.then:
            parts.append(f'echo "{n} then" >"{out_dir}/current"')
            parts.append("set -e -o pipefail")
            parts.append(b.then)
            parts.append("set +e")
        parts.append(f'echo {n} >>"{out_dir}/passed"')
    parts.append(f'echo done >"{out_dir}/current"')
    return "\n".join(parts) + "\n"


def stop_everything(proc, work):
    """SIGTERM to the file's process group, SIGKILL to what is left, then
    any PostgreSQL still running on a data folder inside work."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for root, _dirs, files in os.walk(work, followlinks=False):
        if "postmaster.pid" in files:
            try:
                pid = int(open(os.path.join(root, "postmaster.pid")).readline())
                os.kill(pid, signal.SIGQUIT)
            except (ValueError, OSError):
                pass


def read(path):
    try:
        return open(path, encoding="utf-8", errors="replace").read()
    except FileNotFoundError:
        return ""


def installs_itself(blocks):
    """True when one of the page's blocks runs `cmake --install`: the page
    then shows the reader's install, and the runner must not do it for it."""
    return any(re.search(r"^\s*cmake --install\b", b.text, re.M) for b in blocks if not b.skip_reason)


def hand_over(path, user):
    """Gives `path` and everything under it to `user` (a page run as that
    user writes there)."""
    import pwd
    entry = pwd.getpwnam(user)
    for root, dirs, files in os.walk(path):
        for name in [root] + [os.path.join(root, n) for n in dirs + files]:
            os.lchown(name, entry.pw_uid, entry.pw_gid)


def run_file(rel, blocks, source_dir, build_dir, installed, timeout_s, bare, user):
    work = make_workdir(source_dir, build_dir, rel, bare)
    out_dir = os.path.join(work, ".docs-test")
    os.mkdir(out_dir)
    env = dict(os.environ)
    env.pop("DATABASE_URL", None)
    env.pop("DESTDIR", None)
    env.update({"TMPDIR": work, "HOME": work})
    if not installs_itself(blocks):
        os.symlink(installed(), os.path.join(work, "phasekey"))
        env["PATH"] = os.pathsep.join([os.path.join(work, "phasekey", "bin"), env.get("PATH", "")])
    script = os.path.join(out_dir, "driver.sh")
    with open(script, "w") as f:
        f.write(driver_script(blocks, out_dir))
    command = ["bash", script]
    if user:
        hand_over(work, user)
        # runuser sets HOME to the user's own; the page's HOME is its folder.
        command = ["runuser", "-u", user, "--", "env", "HOME=" + work] + command
    proc = subprocess.Popen(command, cwd=work, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    timed_out = False
    try:
        status = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out, status = True, None
    stop_everything(proc, work)
    proc.wait()

    failures = []
    passed = set(read(os.path.join(out_dir, "passed")).split())
    current = read(os.path.join(out_dir, "current")).strip()
    for n, b in enumerate(blocks):
        if b.skip_reason:
            print(f"  skip {b.where()}: {b.skip_reason}")
            continue
        output = read(os.path.join(out_dir, f"{n}.out"))
        if str(n) not in passed:
            if current.split(" ")[0] == str(n):
                what = "its wait (run, then)" if current.endswith("then") else "the block"
                why = f"timed out after {timeout_s}s" if timed_out else f"exited {status}"
                failures.append(f"{b.where()}: {what} {why}\n{b.text}--- output:\n{output}")
            break  # later blocks did not run
        missing = missing_lines(b.expected, output)
        if missing is not None:
            failures.append(f"{b.where()}: the output lacks the line the doc shows: {missing!r}\n"
                            f"{b.text}--- output:\n{output}")
            continue
        print(f"  ok   {b.where()}")
    if failures or os.environ.get("PHASEKEY_DOCS_KEEP"):
        print(f"  (the folder is kept: {work})")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--exclude", action="append", default=[], help="a file to leave out of the default list")
    ap.add_argument("--outside-checkout", action="store_true",
                    help="run each page in an empty folder, not one that looks like a checkout")
    ap.add_argument("--as-user", default="",
                    help="when run as root, run the pages as this user (the install stays root's, readable)")
    ap.add_argument("--complete-folder", action="append", default=[],
                    help="a folder (relative to the source dir) whose every file a page must list in full")
    ap.add_argument("--file-timeout", type=int, default=420, help="seconds one file's blocks may take")
    ap.add_argument("files", nargs="*", help="Markdown files relative to the source dir (default: all)")
    args = ap.parse_args()
    source_dir, build_dir = os.path.abspath(args.source_dir), os.path.abspath(args.build_dir)
    files = args.files or (["README.md"] + sorted(
        "docs/" + f for f in os.listdir(os.path.join(source_dir, "docs")) if f.endswith(".md")))
    files = [f for f in files if f not in args.exclude]
    scratch = tempfile.mkdtemp(prefix="pk-docs-install-")
    os.chmod(scratch, 0o755)  # the installation is readable by every user, as under /usr/local
    user = args.as_user if args.as_user and os.geteuid() == 0 else ""
    prefix = []

    def installed():
        """The build tree installed as getting-started.md shows, once."""
        if not prefix:
            target = os.path.join(scratch, "phasekey")
            subprocess.run(["cmake", "--install", build_dir, "--prefix", target], check=True,
                           stdout=subprocess.DEVNULL)
            prefix.append(target)
        return prefix[0]

    all_failures, ran = [], 0
    written = set()
    for rel in files:
        blocks, errors = parse(os.path.join(source_dir, rel), rel, source_dir, written)
        all_failures += errors
        if not blocks:
            continue
        print(f"{rel}: {len(blocks)} shell blocks", flush=True)
        if all(b.skip_reason for b in blocks):
            for b in blocks:
                print(f"  skip {b.where()}: {b.skip_reason}")
            continue
        ran += sum(1 for b in blocks if not b.skip_reason)
        all_failures += run_file(rel, blocks, source_dir, build_dir, installed, args.file_timeout,
                                 args.outside_checkout, user)
        sys.stdout.flush()
    for folder in args.complete_folder:
        for root, _dirs, names in os.walk(os.path.join(source_dir, folder)):
            for name in sorted(names):
                path = os.path.relpath(os.path.join(root, name), source_dir)
                if path not in written:
                    all_failures.append(f"{path}: no page lists this file in full (<!-- file: {path} -->), "
                                        "so a reader following the pages lacks it")
    for f in all_failures:
        print("FAIL " + f, file=sys.stderr)
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"{ran} blocks run, {len(all_failures)} failures")
    return 1 if all_failures else 0


if __name__ == "__main__":
    sys.exit(main())
