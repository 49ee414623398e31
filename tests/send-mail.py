#!/usr/bin/env python3
"""Send RFC 5322 files through an SMTP server, for the tests.

    send-mail.py --port PORT --ca-file CA --user USER --password PW
                 --from ENVELOPE-FROM --to RCPT [--to RCPT]... FILE...

Connects to the Postfix of tests/mailservers.sh on 127.0.0.1 (or --host),
upgrades with STARTTLS, verifying the server's certificate against the
test CA (CA) for the host connected to, logs in (AUTH) as USER with PW,
and sends each FILE as it is (its bytes untouched but for the line ends,
which SMTP makes CRLF, and the dot-stuffing) with the envelope sender
ENVELOPE-FROM ("" for the null sender of bounces) and the envelope
recipients RCPT, BODY=8BITMIME when the file holds 8-bit bytes. One
connection for all the files. Prints nothing on success; exits 1 with a
message on stderr when the server refuses a file, or anything fails.
Python 3 standard library only.
"""

import argparse
import smtplib
import ssl
import sys


def fail(message):
    sys.stderr.write("send-mail: %s\n" % message)
    sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ca-file", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--from", dest="sender", required=True,
                        help='the envelope sender ("" for the null sender)')
    parser.add_argument("--to", action="append", required=True,
                        help="an envelope recipient (repeatable)")
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("files", nargs="+", metavar="FILE")
    args = parser.parse_args()

    messages = []
    for path in args.files:
        try:
            with open(path, "rb") as f:
                messages.append((path, f.read()))
        except OSError as e:
            fail("cannot read %s: %s" % (path, e))
    try:
        smtp = smtplib.SMTP(args.host, args.port, timeout=args.timeout)
    except OSError as e:
        fail("cannot connect to %s:%d: %s" % (args.host, args.port, e))
    try:
        smtp.ehlo("send-mail.test")
        if not smtp.has_extn("starttls"):
            fail("%s:%d offers no STARTTLS" % (args.host, args.port))
        smtp.starttls(context=ssl.create_default_context(cafile=args.ca_file))
        smtp.ehlo("send-mail.test")
        smtp.login(args.user, args.password)
        for path, data in messages:
            options = ["BODY=8BITMIME"] if any(b >= 0x80 for b in data) else []
            refused = smtp.sendmail(args.sender, args.to, data, mail_options=options)
            if refused:
                fail("%s: recipients refused: %s" % (path, refused))
        smtp.quit()
    except (OSError, ssl.SSLError, smtplib.SMTPException) as e:
        fail("SMTP on %s:%d: %s" % (args.host, args.port, e))


if __name__ == "__main__":
    main()
