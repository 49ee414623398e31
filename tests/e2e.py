#!/usr/bin/env python3
"""The mailbox side of tests/e2e.sh: what a developer's mail client sees.

Every mailbox is a Maildir under $MS_MAILDIRS/ADDRESS (tests/mailservers.sh).
Subcommands:
  find ADDRESS FILTER...: the files of ADDRESS's mails that match every
      FILTER, one a line, oldest first. FILTERs: irt=MID (In-Reply-To <MID>),
      ref=MID (References names <MID>), subject=RE, from=ADDRESS,
      body=RE (the text/plain parts), noirt (no In-Reply-To).
  wait SECONDS ADDRESS FILTER...: waits for a first match; prints it as find.
  header FILE NAME: the header NAME of FILE, unfolded.
  mid FILE: the Message-ID of FILE, without brackets.
  body FILE: the text/plain parts of FILE.
  attachment FILE NAME OUT: writes FILE's attachment called NAME to OUT.
  reproduce FILE: the reproduce commands of a zeroday report (the indented
      lines below "To reproduce"), one a line.
  dups: every mailbox's Message-IDs that it holds more than once; fails if any.
  delivered: reads `zeroday outbox --json`; fails, naming them, unless every
      mail sent is in each of its recipients' mailboxes.
"""
import collections
import email
import email.policy
import email.utils
import json
import os
import re
import sys
import time

ROOT = os.environ.get("MS_MAILDIRS", "")


def files(address):
    out = []
    for sub in ("cur", "new"):
        d = os.path.join(ROOT, address.lower(), sub)
        if os.path.isdir(d):
            out += [os.path.join(d, n) for n in os.listdir(d)]
    return sorted(out, key=lambda p: (os.stat(p).st_mtime, p))


def parse(path):
    with open(path, "rb") as f:
        return email.message_from_binary_file(f, policy=email.policy.default)


def ids(value):
    return re.findall(r"<([^<>]+)>", value or "")


def text(msg):
    out = []
    for part in msg.walk():
        if part.get_content_type() == "text/plain" and not part.get_filename():
            out.append(part.get_content())
    return "\n".join(out)


def matches(msg, filters):
    for f in filters:
        name, _, value = f.partition("=")
        if name == "irt" and ids(msg["In-Reply-To"]) != [value]:
            return False
        if name == "ref" and value not in ids(msg["References"]):
            return False
        if name == "noirt" and msg["In-Reply-To"]:
            return False
        if name == "subject" and not re.search(value, str(msg["Subject"] or "")):
            return False
        if name == "from" and email.utils.parseaddr(str(msg["From"]))[1].lower() != value.lower():
            return False
        if name == "body" and not re.search(value, text(msg), re.M):
            return False
    return True


def find(address, filters):
    return [p for p in files(address) if matches(parse(p), filters)]


def delivered():
    missing = []
    for row in json.load(sys.stdin):
        if row["state"] != "sent":
            continue
        for each in row["each"]:
            if each["state"] != "sent":
                continue
            addr = email.utils.parseaddr(each["address"])[1] or each["address"]
            if not any(ids(parse(p)["Message-ID"]) == [row["message_id"]] for p in files(addr)):
                missing.append("<%s> (%s) to %s" % (row["message_id"], row["kind"], addr))
    for m in missing:
        print("# sent but not delivered: " + m)
    return not missing


def dups():
    bad = 0
    for address in sorted(os.listdir(ROOT)):
        seen = collections.Counter()
        for p in files(address):
            for mid in ids(parse(p)["Message-ID"]):
                seen[mid] += 1
        for mid, count in sorted(seen.items()):
            if count > 1:
                print("# %s holds <%s> %d times" % (address, mid, count))
                bad += 1
    return bad == 0


def main(cmd, args):
    if cmd == "find":
        for path in find(args[0], args[1:]):
            print(path)
    elif cmd == "wait":
        end = time.time() + float(args[0])
        while True:
            found = find(args[1], args[2:])
            if found:
                print(found[0])
                return True
            if time.time() > end:
                return False
            time.sleep(1)
    elif cmd == "header":
        print(" ".join(str(parse(args[0])[args[1]] or "").split()))
    elif cmd == "mid":
        print((ids(parse(args[0])["Message-ID"]) or [""])[0])
    elif cmd == "body":
        sys.stdout.write(text(parse(args[0])))
    elif cmd == "attachment":
        for part in parse(args[0]).walk():
            if part.get_filename() == args[1]:
                with open(args[2], "wb") as f:
                    f.write(part.get_payload(decode=True))
                return True
        return False
    elif cmd == "reproduce":
        lines = text(parse(args[0])).split("\n")
        for i, line in enumerate(lines):
            if line.startswith("To reproduce"):
                # The sentence may wrap; the commands follow the blank line.
                block = lines[i:]
                while block and block[0].strip():
                    block.pop(0)
                block = block[1:]
                cmds = []
                while block and block[0].startswith("        "):
                    cmds.append(block.pop(0).strip())
                print("\n".join(cmds))
                return bool(cmds)
        return False
    elif cmd == "dups":
        return dups()
    elif cmd == "delivered":
        return delivered()
    else:
        sys.exit("e2e.py: unknown command " + cmd)
    return True


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1], sys.argv[2:]) else 1)
