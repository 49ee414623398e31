#!/usr/bin/python3
"""A scripted fake IMAP server, for the faults a real Dovecot will not
produce on demand (tests/imap-real.sh): a server that does not offer
STARTTLS, and one that injects a response after its answer to STARTTLS
(CVE-2020-15953 class).

    fake-imap.py --port PORT --mode no-starttls|starttls-inject --log FILE

Prints "ready" once listening on 127.0.0.1:PORT; appends every line a
client sends to FILE (which exists, empty, from the start). Serves one
client at a time, until killed. Standard library only.
"""
import argparse, socket, sys


def serve(conn, mode, log):
    caps = "IMAP4rev1 LOGIN" + (" STARTTLS" if mode == "starttls-inject" else "")
    conn.sendall(("* OK [CAPABILITY %s] fake ready\r\n" % caps).encode())
    f = conn.makefile("rb")
    for line in f:
        with open(log, "ab") as out:
            out.write(line)
        words = line.decode("ascii", "replace").split()
        if len(words) < 2:
            return
        tag, cmd = words[0], words[1].upper()
        if cmd == "CAPABILITY":
            conn.sendall(("* CAPABILITY %s\r\n%s OK done\r\n" % (caps, tag)).encode())
        elif cmd == "STARTTLS" and mode == "starttls-inject":
            conn.sendall(("%s OK Begin TLS\r\n* OK [CAPABILITY IMAP4rev1 LOGIN] injected\r\n"
                          % tag).encode())
        elif cmd == "LOGOUT":
            conn.sendall(("* BYE bye\r\n%s OK bye\r\n" % tag).encode())
            return
        else:
            conn.sendall(("%s BAD no\r\n" % tag).encode())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--mode", choices=("no-starttls", "starttls-inject"), required=True)
    p.add_argument("--log", required=True)
    a = p.parse_args()
    open(a.log, "wb").close()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", a.port))
    s.listen(5)
    print("ready", flush=True)
    while True:
        conn, _ = s.accept()
        try:
            conn.settimeout(10)
            serve(conn, a.mode, a.log)
        except OSError:
            pass
        finally:
            conn.close()


if __name__ == "__main__":
    sys.exit(main())
