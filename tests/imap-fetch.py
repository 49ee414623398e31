#!/usr/bin/env python3
"""Print the messages of an IMAP folder, for the tests.

    imap-fetch.py --port PORT --user ADDRESS --password PW
                  [--host 127.0.0.1] [--folder INBOX]
                  [--where NAME=VALUE]... [--headers-only | --count | --field NAME]

Logs in over plain IMAP (the test Dovecot of tests/mailservers.sh, on
127.0.0.1), opens the folder read-only, and writes every message in UID
order to stdout, each preceded by a line "=== message UID" and followed by
a blank line, with CRLF turned into LF (fetched with BODY.PEEK[], so no
flag changes). --headers-only fetches the header section only; --count
prints only the number of messages. --where NAME=VALUE keeps only the
messages with a header field NAME (any case) whose value, unfolded and
stripped, is VALUE exactly (repeated: all must hold). --field NAME prints,
for each message kept, the unfolded value of its first NAME field (an
empty line when it has none) instead of the message. Exits 0 on success,
1 with a message on stderr on failure. Python 3 standard library only.
"""

import argparse
import imaplib
import socket
import sys


def fail(message):
    sys.stderr.write("imap-fetch: %s\n" % message)
    sys.exit(1)


def quote(mailbox):
    """mailbox as an IMAP quoted string."""
    return '"' + mailbox.replace("\\", "\\\\").replace('"', '\\"') + '"'


def fetched_literal(data):
    """The literal of a one-message FETCH response as imaplib returns it."""
    for item in data:
        if isinstance(item, tuple) and len(item) == 2:
            return item[1]
    return None


def header_fields(text):
    """The (lower-case name, unfolded stripped value) pairs of a message's
    header section, in order."""
    head = text.replace(b"\r\n", b"\n").split(b"\n\n", 1)[0]
    fields = []
    for line in head.split(b"\n"):
        if line[:1] in (b" ", b"\t") and fields:
            name, value = fields[-1]
            fields[-1] = (name, value + b" " + line.strip())
        elif b":" in line:
            name, value = line.split(b":", 1)
            fields.append((name.strip().lower(), value.strip()))
    return [(n.decode("ascii", "replace"), v.decode("utf-8", "replace"))
            for n, v in fields]


def wanted(fields, where):
    """Whether header fields satisfy every (name, value) of where."""
    return all(any(n == name and v == value for n, v in fields)
               for name, value in where)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--folder", default="INBOX")
    parser.add_argument("--timeout", type=float, default=30,
                        help="seconds for each network operation (30)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--headers-only", action="store_true",
                      help="fetch the header section only")
    what.add_argument("--count", action="store_true",
                      help="print only the number of messages")
    what.add_argument("--field", metavar="NAME",
                      help="print the value of header NAME of each message")
    parser.add_argument("--where", metavar="NAME=VALUE", action="append", default=[],
                        help="only messages whose header NAME is VALUE")
    args = parser.parse_args()
    where = []
    for w in args.where:
        if "=" not in w:
            fail("--where wants NAME=VALUE, not %r" % w)
        name, value = w.split("=", 1)
        where.append((name.strip().lower(), value.strip()))

    try:
        imap = imaplib.IMAP4(args.host, args.port, timeout=args.timeout)
    except (OSError, imaplib.IMAP4.error) as e:
        fail("cannot connect to %s:%d: %s" % (args.host, args.port, e))
    try:
        try:
            imap.login(args.user, args.password)
        except imaplib.IMAP4.error as e:
            fail("login as %s refused: %s" % (args.user, e))
        typ, data = imap.select(quote(args.folder), readonly=True)
        if typ != "OK":
            fail("cannot open folder %s: %s" % (args.folder, data))
        typ, data = imap.uid("SEARCH", None, "ALL")
        if typ != "OK":
            fail("UID SEARCH failed: %s" % data)
        uids = sorted({int(u) for u in b" ".join(d for d in data if d).split()})
        if args.count and not where:
            sys.stdout.write("%d\n" % len(uids))
            return
        headers = args.headers_only or args.count or args.field
        section = "BODY.PEEK[HEADER]" if headers else "BODY.PEEK[]"
        out = sys.stdout.buffer
        count = 0
        for uid in uids:
            typ, data = imap.uid("FETCH", str(uid), "(" + section + ")")
            text = fetched_literal(data) if typ == "OK" else None
            if text is None:
                fail("cannot fetch message UID %d: %s %s" % (uid, typ, data))
            text = text.replace(b"\r\n", b"\n")
            fields = header_fields(text)
            if not wanted(fields, where):
                continue
            count += 1
            if args.count:
                continue
            if args.field:
                values = [v for n, v in fields if n == args.field.lower()]
                out.write((values[0] if values else "").encode("utf-8") + b"\n")
                continue
            if args.headers_only:
                # The header section ends with its empty line: one only.
                text = text.rstrip(b"\n") + b"\n"
            elif not text.endswith(b"\n"):
                text += b"\n"
            out.write(b"=== message %d\n" % uid)
            out.write(text)
            out.write(b"\n")
        if args.count:
            sys.stdout.write("%d\n" % count)
        out.flush()
    except (OSError, socket.timeout, imaplib.IMAP4.error) as e:
        fail("IMAP on %s:%d: %s" % (args.host, args.port, e))
    finally:
        try:
            imap.logout()
        except (OSError, imaplib.IMAP4.error):
            pass


if __name__ == "__main__":
    main()
