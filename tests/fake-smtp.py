#!/usr/bin/python3
"""Scripted fake SMTP server for fault injection in the zeroday test suite.

The real mail tests run against Postfix/Dovecot; this server exists only to
produce the misbehaviour a real MTA will not produce on demand: temporary
failures, refused recipients, connections dropped after DATA, servers that
never answer, STARTTLS response injection (CVE-2020-15953 class) and servers
that do not offer STARTTLS at all.

Usage:
  fake-smtp.py --port PORT --mode MODE --spool DIR [--cert CERT.pem --key KEY.pem]
               [--implicit-tls] [--refuse ADDRESS]... [--once]

Modes: ok, tempfail, rcpt-tempfail, drop-after-data, silent, starttls-inject,
no-starttls.  With --once the fault applies to the first connection only and
later connections behave as "ok".

Prints "ready" on stdout once listening on 127.0.0.1:PORT.  Each delivered
message becomes DIR/NNNN.eml ("X-Fake-Rcpt:" and "X-Fake-Auth:" lines, then
the un-dot-stuffed body with LF line endings); each session appends one JSON
line to DIR/log.jsonl.  Runs until killed.  Standard library only.
"""
import argparse, base64, json, os, re, socket, ssl, sys, threading

MODES = ("ok", "tempfail", "rcpt-tempfail", "drop-after-data", "silent",
         "starttls-inject", "no-starttls")
LOCK = threading.Lock()
STATE = {"conn": 0, "msg": 0}


class Dropped(Exception):
    """The session ends here on purpose (fault injection)."""


class Session:
    def __init__(self, args, sock, conn, mode):
        self.args, self.sock, self.conn, self.mode = args, sock, conn, mode
        self.buf, self.tls, self.commands, self.flags, self.delivered = b"", False, [], set(), 0
        self.reset(ehlo=True)

    def reset(self, ehlo=False):
        if ehlo:
            self.ehlo = False
            self.user = None
        self.mail_from = None
        self.rcpts = []

    def send(self, text):
        self.sock.sendall(text.encode())

    def reply(self, *lines):
        out = "".join("%s%s%s\r\n" % (l[:3], "-" if i < len(lines) - 1 else " ", l[4:])
                      for i, l in enumerate(lines))
        self.send(out)

    def readline(self):
        """One line as bytes without CRLF/LF, or None at EOF."""
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                return None
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line[:-1] if line.endswith(b"\r") else line

    def start_tls(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.args.cert, self.args.key)
        self.buf = b""   # never let plaintext pipelined before the handshake through
        self.sock = ctx.wrap_socket(self.sock, server_side=True)
        self.tls = True

    def run(self):
        if self.mode == "silent":
            self.flags.add("silent")
            while self.sock.recv(65536):
                pass
            return
        if self.args.implicit_tls:
            self.start_tls()
        self.send("220 fake.test ESMTP\r\n")
        while True:
            raw = self.readline()
            if raw is None:
                return
            line = raw.decode("utf-8", "replace")
            verb, _, arg = line.partition(" ")
            verb = verb.upper()
            self.commands.append(redact(verb, verb + line[len(verb):]))
            handler = getattr(self, "do_" + verb, None)
            if handler is None:
                self.reply("500 5.5.2 command not recognized")
            elif handler(arg.strip()) == "quit":
                return

    def can_starttls(self):
        return (not self.tls and self.args.cert and not self.args.implicit_tls
                and self.mode != "no-starttls")

    def do_EHLO(self, arg):
        self.ehlo = True
        self.reset()
        lines = ["250 fake.test"]
        if self.can_starttls():
            lines.append("250 STARTTLS")
        if self.tls or self.mode == "no-starttls":
            lines.append("250 AUTH PLAIN LOGIN")
        self.reply(*lines, "250 8BITMIME", "250 SIZE 10485760")

    def do_HELO(self, arg):
        self.ehlo = True
        self.reset()
        self.reply("250 fake.test")

    def do_STARTTLS(self, arg):
        if self.mode == "no-starttls":
            return self.reply("502 5.5.1 not here")
        if self.tls:
            return self.reply("503 5.5.1 TLS already active")
        if not self.args.cert:
            return self.reply("454 4.7.0 TLS not available")
        if self.mode == "starttls-inject":
            self.flags.add("injected")
            self.send("220 go ahead\r\n250-injected\r\n250 AUTH PLAIN\r\n")
        else:
            self.send("220 go ahead\r\n")
        self.start_tls()
        self.reset(ehlo=True)

    def ask(self, prompt):
        self.send("334 %s\r\n" % prompt)
        raw = self.readline()
        if raw is None:
            raise Dropped("eof during AUTH")
        return raw.strip()

    def do_AUTH(self, arg):
        mech, _, initial = arg.partition(" ")
        mech, initial = mech.upper(), initial.strip().encode()
        try:
            if mech == "PLAIN":
                resp = initial if initial and initial != b"=" else self.ask("")
                if resp == b"*":
                    return self.reply("501 5.7.0 cancelled")
                parts = base64.b64decode(resp, validate=True).split(b"\0")
                if len(parts) != 3:
                    return self.reply("501 5.5.2 bad PLAIN response")
                user = parts[1]
            elif mech == "LOGIN":
                resp = initial or self.ask("VXNlcm5hbWU6")
                user = base64.b64decode(resp, validate=True)
                base64.b64decode(self.ask("UGFzc3dvcmQ6"), validate=True)
            else:
                return self.reply("504 5.5.4 mechanism not supported")
        except ValueError:
            return self.reply("501 5.5.2 bad base64")
        self.user = user.decode("utf-8", "replace")
        self.reply("235 2.7.0 ok")

    def do_MAIL(self, arg):
        if not self.ehlo:
            return self.reply("503 5.5.1 EHLO first")
        if self.mode == "tempfail":
            self.flags.add("tempfail")
            return self.reply("451 4.3.0 try again later")
        self.reset()
        self.mail_from = address(arg)
        self.reply("250 2.1.0 ok")

    def do_RCPT(self, arg):
        if self.mail_from is None:
            return self.reply("503 5.5.1 MAIL first")
        addr = address(arg)
        if addr.lower() in self.args.refuse:
            if self.mode == "rcpt-tempfail":
                self.flags.add("tempfail")
                return self.reply("450 4.2.0 mailbox busy")
            self.flags.add("refused")
            return self.reply("550 5.1.1 <%s>: user unknown" % addr)
        self.rcpts.append(addr)
        self.reply("250 2.1.5 ok")

    def do_DATA(self, arg):
        if not self.rcpts:
            return self.reply("503 5.5.1 no valid recipients")
        self.reply("354 end data with <CR><LF>.<CR><LF>")
        body = []
        while True:
            raw = self.readline()
            if raw is None:
                raise Dropped("eof during DATA")
            if raw == b".":
                break
            body.append(raw[1:] if raw.startswith(b".") else raw)
        if self.mode == "drop-after-data":
            self.flags.add("dropped")
            raise Dropped("dropped after DATA")
        n = store(self.args.spool, self.rcpts, self.user, body)
        self.delivered += 1
        self.reset()
        self.reply("250 2.0.0 queued as %d" % n)

    def do_RSET(self, arg):
        self.reset()
        self.reply("250 2.0.0 ok")

    def do_NOOP(self, arg):
        self.reply("250 2.0.0 ok")

    def do_QUIT(self, arg):
        self.reply("221 2.0.0 bye")
        return "quit"

    def outcome(self):
        for flag in ("silent", "dropped", "injected"):
            if flag in self.flags:
                return flag
        if self.delivered:
            return "delivered"
        for flag in ("tempfail", "refused"):
            if flag in self.flags:
                return flag
        return "quit"


def redact(verb, line):
    """Log AUTH as "AUTH PLAIN ***": never keep the credential."""
    if verb == "AUTH":
        words = line.split()
        return " ".join(words[:2] + ["***"] * (len(words) > 2))
    return line


def address(arg):
    m = re.search(r"<([^>]*)>", arg)
    return m.group(1) if m else arg.partition(":")[2].strip()


def store(spool, rcpts, user, body):
    with LOCK:
        STATE["msg"] += 1
        n = STATE["msg"]
    head = "X-Fake-Rcpt: %s\nX-Fake-Auth: %s\n" % (", ".join(rcpts), user or "none")
    tmp = os.path.join(spool, ".tmp-%04d" % n)
    with open(tmp, "wb") as f:
        f.write(head.encode() + b"".join(l + b"\n" for l in body))
    os.rename(tmp, os.path.join(spool, "%04d.eml" % n))
    return n


def log(spool, record):
    line = (json.dumps(record) + "\n").encode()
    with LOCK:
        fd = os.open(os.path.join(spool, "log.jsonl"),
                     os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def serve(args, sock, conn):
    faulty = not args.once or conn == 1
    s = Session(args, sock, conn, args.mode if faulty else "ok")
    outcome = None
    try:
        s.run()
    except (Dropped, ConnectionError):
        pass
    except Exception as e:  # one broken session must not kill the server
        outcome = "error: %s: %s" % (type(e).__name__, e)
    finally:
        try:
            s.sock.close()
        except OSError:
            pass
    log(args.spool, {"conn": conn, "tls": s.tls, "commands": s.commands,
                     "outcome": outcome or s.outcome()})


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--mode", choices=MODES, default="ok")
    p.add_argument("--spool", required=True)
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--implicit-tls", action="store_true")
    p.add_argument("--refuse", action="append", default=[])
    p.add_argument("--once", action="store_true")
    args = p.parse_args()
    if args.implicit_tls and not args.cert:
        p.error("--implicit-tls needs --cert and --key")
    args.key = args.key or args.cert
    args.refuse = {a.strip("<>").lower() for a in args.refuse}
    os.makedirs(args.spool, exist_ok=True)
    existing = [int(f[:4]) for f in os.listdir(args.spool) if re.fullmatch(r"\d{4}\.eml", f)]
    STATE["msg"] = max(existing, default=0)

    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", args.port))
    lsock.listen(16)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        sock, _ = lsock.accept()
        with LOCK:
            STATE["conn"] += 1
            conn = STATE["conn"]
        threading.Thread(target=serve, args=(args, sock, conn), daemon=True).start()


if __name__ == "__main__":
    main()
