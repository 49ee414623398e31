#!/usr/bin/env python3
"""
bench/parse-email: the baseline for bench/parse: the same mails parsed
with Python's standard email package (policy.default, which decodes
headers and bodies) and classified as bench/parse does, by rules that
follow mail/patchmail.h:

  reply   Re:, Aw:, Fwd:, ... before the subject's [tags]
  cover   tagged PATCH (or RFC with n/N), numbered 0 of N
  patch   tagged PATCH (or RFC with n/N) and a diff found
  other   the rest

A diff is a line "diff --git " in the first column, or a "--- " line
followed by a "+++ " line then an "@@ -" hunk header, in the first
text/plain, text/x-patch or text/x-diff part that holds one, after
transfer decoding and charset conversion (get_content()).

The files are read into memory first, untimed; the timed loop is run
three times, the best counts.  Output as bench/parse's:
  messages N bytes B
  best S s, R msg/s, M MB/s
  kinds patch P cover C reply R other O diffs D refused F
With --list=FILE, an untimed pass writes "NAME KIND DIFF" per mail.

usage: parse-email.py [--list=FILE] DIR
"""
import email
import email.policy
import os
import re
import sys
import time

RUNS = 3
REPLY_WORD = re.compile(r"(?:re|aw|sv|vs|antw|odp|fw|fwd|wg|tr)\s*:\s*", re.I)
GROUP = re.compile(r"\[([^\]]*)\]\s*")
COUNT = re.compile(r"^(\d+)/(\d+)$")
DIFF = re.compile(r"^diff --git |^--- .*\n\+\+\+ .*\n@@ -", re.M)
TEXT_TYPES = ("text/plain", "text/x-patch", "text/x-diff")


def subject_tags(subject):
    """-> (reply, patch, cover) as patchmail_subject_parse() reads them."""
    s = " ".join(subject.split())
    reply = keyword = tagged = rfc = counted = False
    n = 1
    while True:
        m = GROUP.match(s)
        if m:
            for w in m.group(1).split():
                u = w.upper()
                if u in ("PATCH", "PATCHES", "PATCHSET"):
                    keyword = tagged = True
                elif u == "RFC":
                    rfc = tagged = True
                elif u == "RESEND":
                    tagged = True
                c = COUNT.match(w)
                if c:
                    counted, n = True, int(c.group(1))
            s = s[m.end():]
            continue
        m = REPLY_WORD.match(s) if not tagged else None
        if m:
            reply = True
            s = s[m.end():].lstrip()
            continue
        break
    patch = not reply and (keyword or (rfc and counted))
    return reply, patch, patch and counted and n == 0


def has_diff(msg):
    for part in msg.walk():
        if part.get_content_type() not in TEXT_TYPES:
            continue
        try:
            text = part.get_content()
        except (LookupError, ValueError):
            continue
        if DIFF.search(text):
            return True
    return False


def classify(data):
    """-> (kind, diff) for one mail."""
    msg = email.message_from_bytes(data, policy=email.policy.default)
    reply, patch, cover = subject_tags(str(msg.get("Subject", "")))
    diff = has_diff(msg)
    if reply:
        return "reply", diff
    if cover:
        return "cover", diff
    if patch and diff:
        return "patch", diff
    return "other", diff


def run(mails, counts, out=None):
    for name, data in mails:
        try:
            kind, diff = classify(data)
        except Exception as e:  # noqa: BLE001 -- a refused mail, as on the C side
            kind, diff = "refused", False
            if out:
                out.write("%s refused 0 %s\n" % (name, type(e).__name__))
            counts[kind] += 1
            continue
        counts[kind] += 1
        counts["diffs"] += diff
        if out:
            out.write("%s %s %d\n" % (name, kind, diff))


def main():
    args = sys.argv[1:]
    list_path = None
    if args and args[0].startswith("--list="):
        list_path = args.pop(0)[len("--list="):]
    if len(args) != 1:
        sys.exit("usage: parse-email.py [--list=FILE] DIR")
    mails = []
    for name in sorted(os.listdir(args[0])):
        with open(os.path.join(args[0], name), "rb") as f:
            mails.append((name, f.read()))
    if not mails:
        sys.exit("parse-email.py: no mail in " + args[0])
    size = sum(len(d) for _, d in mails)
    best = None
    for _ in range(RUNS):
        counts = dict.fromkeys(("patch", "cover", "reply", "other", "diffs", "refused"), 0)
        t0 = time.monotonic()
        run(mails, counts)
        t = time.monotonic() - t0
        best = t if best is None else min(best, t)
    print("messages %d bytes %d" % (len(mails), size))
    print("best %.3f s, %.0f msg/s, %.1f MB/s" % (best, len(mails) / best, size / 1e6 / best))
    print("kinds " + " ".join("%s %d" % kv for kv in counts.items()))
    if list_path:
        with open(list_path, "w") as out:
            run(mails, dict(counts), out)


main()
