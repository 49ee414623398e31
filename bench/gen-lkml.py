#!/usr/bin/env python3
"""
bench/gen-lkml: writes N LKML-style messages, one file each (00000.eml,
...), into DIR, for bench/parse.  Deterministic: the same N and seed give
the same bytes.

The mix, by messages: about 45% series mail ([PATCH vK n/N] with a cover
letter when N > 1, single patches, a few RFC and RESEND), 35% review
replies that quote the commit message and parts of the diff with "> "
(a few carry an unquoted fixup diff, a few are top-posted), 10%
discussion (regression reports, questions), 10% other list traffic
([GIT PULL] with a diffstat, syzbot reports, [RFC] without a diff).
Diffs are 20 to 2000 lines, log-uniform, over one to a few files in
kernel-like paths, with consistent hunk counts.  Transports: mostly 8bit
UTF-8; some quoted-printable and base64 patches, some attached as
text/x-patch in multipart/mixed, some ISO-8859-1 bodies and RFC 2047
names; vger's Received, ARC, DKIM and List-* headers.

usage: gen-lkml.py N DIR [SEED]
"""
import base64
import quopri
import random
import sys
import os

FIRST = ["Marta", "José", "Inês", "Tomasz", "Greg", "Jakub", "Eric", "Paolo", "Sven", "Łukasz",
         "Andrii", "Krzysztof", "Björn", "Hans", "Wei", "Yang", "Arnd", "Geert", "Mika", "Jörg",
         "Pablo", "Florian", "Vladimir", "Chen", "Naveen", "Ilpo", "Uwe", "Stéphane", "Johan", "Rafael"]
LAST = ["Kowalska", "Müller", "Duarte", "Nowak", "Kroah", "Kicinski", "Dumazet", "Abeni",
        "Schnelle", "Bartosik", "Nakryiko", "Kozlowski", "Töpel", "de Goede", "Liu", "Zhang",
        "Bergmann", "Uytterhoeven", "Westerberg", "Rödel", "Neira", "Fainelli", "Oltean", "Li",
        "Rao", "Järvinen", "Kleine-König", "Grenier", "Hovold", "Wysocki"]
DOMAINS = ["kernel.org", "example.com", "linux.example.org", "corp.example.net", "gmail.example",
           "suse.example", "redhat.example", "intel.example", "arm.example", "linaro.example"]
SUBSYS = [
    ("netdev", "net", ["drivers/net/ethernet/%s", "net/%s", "include/linux/%s"],
     ["acme", "mlx5", "ice", "stmmac", "bnxt", "ipv4", "ipv6", "core", "sched", "tls"]),
    ("linux-mm", "mm", ["mm/%s", "include/linux/%s"],
     ["slub", "vmscan", "huge_memory", "memcontrol", "page_alloc", "kasan"]),
    ("linux-usb", "usb", ["drivers/usb/%s", "include/linux/usb/%s"],
     ["dwc3", "xhci", "typec", "gadget", "serial", "host"]),
    ("linux-fsdevel", "fs", ["fs/%s", "include/linux/%s"],
     ["ext4", "btrfs", "xfs", "iomap", "fuse", "nfs"]),
    ("linux-arm-kernel", "arm64", ["arch/arm64/%s", "drivers/clk/%s", "drivers/soc/%s"],
     ["kernel", "mm", "boot/dts/qcom", "imx", "rockchip", "mediatek"]),
    ("bpf", "bpf", ["kernel/bpf/%s", "tools/testing/selftests/bpf/%s", "include/linux/%s"],
     ["verifier", "syscall", "btf", "progs", "prog_tests", "helpers"]),
    ("linux-kernel", "sched", ["kernel/sched/%s", "kernel/%s", "include/linux/%s"],
     ["fair", "core", "deadline", "rt", "topology", "cpufreq"]),
]
VERBS = ["fix", "add", "remove", "use", "convert", "drop", "avoid", "handle", "simplify", "rework",
         "introduce", "check", "free", "initialize", "protect", "annotate", "document", "move"]
OBJECTS = ["NULL dereference in %s()", "memory leak in %s()", "error path of %s()",
           "race between %s() and teardown", "support for %s offload", "%s() helper",
           "unused variable in %s()", "locking in %s()", "refcount leak in %s()",
           "use-after-free in %s()", "missing of_node_put() in %s()", "READ_ONCE() in %s()",
           "dev_err_probe() in %s()", "overflow check in %s()", "stale comment above %s()"]
IDENTS = ["priv", "dev", "ndev", "skb", "page", "folio", "ctx", "req", "queue", "ring", "desc",
          "entry", "node", "buf", "len", "ret", "i", "flags", "state", "cfg", "port", "irq"]
TYPES = ["struct device *", "struct sk_buff *", "struct page *", "struct folio *", "u32 ",
         "int ", "unsigned long ", "size_t ", "struct mutex *", "void *", "bool ", "u64 "]
FUNCS = ["kmalloc", "kfree", "mutex_lock", "mutex_unlock", "spin_lock_irqsave", "dev_err",
         "netif_stop_queue", "dma_map_single", "put_page", "WARN_ON_ONCE", "refcount_inc",
         "list_add_tail", "memcpy", "readl", "writel", "of_property_read_u32", "pm_runtime_get_sync"]
WORDS = ("the a driver when this that patch with from kernel memory device queue lock path "
         "error return value case code function call after before only since used should "
         "would could must never always buffer page folio reference count release probe "
         "remove teardown reset interrupt handler context race condition commit series "
         "change version review test tested hardware firmware register field bit mask").split()
MAILERS = ["git-send-email 2.43.0", "git-send-email 2.39.5", "b4 0.13.0", None, None]
AGENTS = ["Mutt/2.2.12 (2023-09-09)", "Mozilla Thunderbird", "Evolution 3.50.2",
          "Gnus/5.13 (Gnus v5.13)", "NeoMutt/20231103"]
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.t = 1700000000
        self.serial = 0
        self.people = [(self.r.choice(FIRST) + " " + self.r.choice(LAST),
                        None) for _ in range(200)]
        self.people = [(n, "%s@%s" % (n.split()[0].lower().encode("ascii", "ignore").decode()
                                      + "." + n.split()[-1].lower().encode("ascii", "ignore")
                                      .decode().replace(" ", ""), self.r.choice(DOMAINS)))
                       for n, _ in self.people]
        self.recent = []  # patch mails one can reply to: dicts

    # ---- small pieces ----
    def hexid(self, n=40):
        return "%0*x" % (n, self.r.getrandbits(4 * n))

    def words(self, lo, hi):
        return " ".join(self.r.choice(WORDS) for _ in range(self.r.randint(lo, hi)))

    def paragraph(self, lines=None):
        out, line = [], ""
        for _ in range(lines or self.r.randint(2, 6)):
            s = self.words(8, 16)
            out.append(s[0].upper() + s[1:] + ".")
        text = " ".join(out)
        # Fill to 72 columns, as git commit messages are.
        wrapped, cur = [], ""
        for w in text.split():
            if len(cur) + 1 + len(w) > 72:
                wrapped.append(cur)
                cur = w
            else:
                cur = cur + " " + w if cur else w
        wrapped.append(cur)
        return "\n".join(wrapped)

    def date(self):
        self.t += self.r.randint(5, 400)
        t = self.t
        days = t // 86400
        y, doy = 2023, days - 19358  # 2023-01-01
        while doy >= 365:
            doy -= 365
            y += 1
        mdays = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        m = 0
        while doy >= mdays[m]:
            doy -= mdays[m]
            m += 1
        s = t % 86400
        return "%s, %d %s %d %02d:%02d:%02d +0000" % (DAYS[(days + 3) % 7], doy + 1, MONTHS[m], y,
                                                      s // 3600, s // 60 % 60, s % 60)

    def person(self):
        return self.r.choice(self.people)

    def addr(self, p, encode_name=True):
        name, email = p
        if encode_name and any(ord(c) > 127 for c in name):
            if self.r.random() < 0.5:
                enc = "=?UTF-8?B?%s?=" % base64.b64encode(name.encode()).decode()
            else:
                enc = "=?utf-8?q?%s?=" % "".join(
                    c if c.isalnum() and ord(c) < 128 else
                    "_" if c == " " else "".join("=%02X" % b for b in c.encode()) for c in name)
            return "%s <%s>" % (enc, email)
        return "%s <%s>" % (name, email)

    def msgid(self, who):
        self.serial += 1
        if self.r.random() < 0.6:
            return "%d.%d-%d-%s" % (self.t * 1000 + self.serial % 1000, self.serial, 1,
                                    who[1].replace("@", "@"))
        return "%s@%s" % (self.hexid(16), who[1].split("@")[1])

    def func(self):
        return "%s_%s" % (self.r.choice(["acme", "mlx5e", "ice", "dwc3", "ext4", "btrfs", "bpf",
                                          "sched", "xhci", "folio", "tcp", "sk"]),
                          self.r.choice(["probe", "remove", "open", "stop", "xmit", "poll",
                                         "alloc", "free", "init", "exit", "reset", "setup",
                                         "get_stats", "handle_irq", "flush", "map", "unmap"]))

    def code_line(self, depth):
        tab = "\t" * depth
        k = self.r.random()
        if k < 0.07:
            return ""
        if k < 0.25:
            return "%s%s%s = %s(%s, %s);" % (tab, self.r.choice(TYPES) if self.r.random() < 0.2 else "",
                                             self.r.choice(IDENTS), self.r.choice(FUNCS),
                                             self.r.choice(IDENTS), self.r.choice(IDENTS))
        if k < 0.4:
            return "%sif (%s%s->%s)" % (tab, self.r.choice(["!", "", "unlikely("]),
                                        self.r.choice(IDENTS), self.r.choice(IDENTS))
        if k < 0.5:
            return "%sreturn %s;" % (tab, self.r.choice(["0", "ret", "-ENOMEM", "-EINVAL",
                                                         "PTR_ERR(%s)" % self.r.choice(IDENTS)]))
        if k < 0.6:
            return "%s/* %s. */" % (tab, self.words(4, 10).capitalize())
        if k < 0.7:
            return "%s%s(&%s->%s);" % (tab, self.r.choice(FUNCS), self.r.choice(IDENTS),
                                       self.r.choice(IDENTS))
        if k < 0.8:
            return "%s%s->%s = %s;" % (tab, self.r.choice(IDENTS), self.r.choice(IDENTS),
                                       self.r.choice(IDENTS + ["NULL", "true", "0"]))
        if k < 0.9:
            return "%s%s(%s->dev, \"%s: %%d\\n\", %s);" % (
                tab, self.r.choice(["dev_err", "dev_dbg", "netdev_warn"]), self.r.choice(IDENTS),
                self.words(3, 7), self.r.choice(IDENTS))
        return "%s}" % tab if depth else "}"

    def path(self, sub):
        d = self.r.choice(sub[2]) % self.r.choice(sub[3])
        f = self.r.choice(["core", "main", "ethtool", "debugfs", "ops", "sysfs", "util", "irq",
                           "dma", "pm", "trace"])
        ext = self.r.choices([".c", ".h", ".rst", "/Makefile", "/Kconfig"], [70, 20, 3, 4, 3])[0]
        if ext.startswith("/"):
            return d + ext
        if ext == ".rst":
            return "Documentation/" + d + "/" + f + ext
        return d + "/" + f + ext

    # ---- diffs ----
    def file_diff(self, path, lines):
        """A git diff section of about @lines lines: (text, added, removed)."""
        new = self.r.random() < 0.08
        out = ["diff --git a/%s b/%s" % (path, path)]
        if new:
            out.append("new file mode 100644")
            out.append("index 000000000000..%s" % self.hexid(12))
            out.append("--- /dev/null")
            out.append("+++ b/%s" % path)
            n = max(1, lines - 5)
            out.append("@@ -0,0 +1,%d @@" % n)
            out.extend("+" + self.code_line(self.r.randint(0, 2)) for _ in range(n))
            return "\n".join(out) + "\n", n, 0
        out.append("index %s..%s 100644" % (self.hexid(12), self.hexid(12)))
        out.append("--- a/%s" % path)
        out.append("+++ b/%s" % path)
        added = removed = 0
        left = max(8, lines - 4)
        old = self.r.randint(10, 400)
        shift = 0
        while left > 0:
            ctx1, ctx2 = 3, 3
            minus = self.r.choice([0, 0, 1, 1, 2, 3, 5, 8, 12])
            plus = self.r.choice([0, 1, 1, 2, 3, 4, 6, 10, 20, 40])
            # Each hunk takes its header and six lines of context besides.
            room = max(1, left - 7)
            if minus + plus > room:
                minus = min(minus, room // 2)
                plus = room - minus
            if minus + plus == 0:
                plus = 1
            ocount, ncount = ctx1 + ctx2 + minus, ctx1 + ctx2 + plus
            depth = self.r.randint(0, 2)
            out.append("@@ -%d,%d +%d,%d @@ static int %s(%s%s)" % (
                old, ocount, old + shift, ncount, self.func(), self.r.choice(TYPES),
                self.r.choice(IDENTS)))
            out.extend(" " + self.code_line(depth) for _ in range(ctx1))
            out.extend("-" + self.code_line(depth) for _ in range(minus))
            out.extend("+" + self.code_line(depth) for _ in range(plus))
            out.extend(" " + self.code_line(depth) for _ in range(ctx2))
            added += plus
            removed += minus
            shift += plus - minus
            old += ocount + self.r.randint(5, 120)
            left -= 7 + minus + plus
        return "\n".join(out) + "\n", added, removed

    def diff(self, sub):
        """A diff of 20..2000 lines (log-uniform) over 1..5 files, with its diffstat."""
        total = int(round(20 * 100 ** self.r.random()))
        nfiles = min(self.r.choice([1, 1, 1, 2, 2, 3, 4, 5]), max(1, total // 15))
        paths = sorted({self.path(sub) for _ in range(nfiles)})
        parts, stat = [], []
        ins = dels = 0
        for p in paths:
            text, a, d = self.file_diff(p, total // len(paths))
            parts.append(text)
            stat.append((p, a, d))
            ins += a
            dels += d
        width = max(len(p) for p, _, _ in stat)
        lines = [" %-*s | %3d %s" % (width, p, a + d, ("+" * min(a, 40)) + ("-" * min(d, 20)))
                 for p, a, d in stat]
        lines.append(" %d file%s changed, %d insertion%s(+), %d deletion%s(-)" % (
            len(stat), "s" if len(stat) > 1 else "", ins, "s" if ins != 1 else "",
            dels, "s" if dels != 1 else ""))
        return "".join(parts), "\n".join(lines) + "\n"

    # ---- headers ----
    def headers(self, sender, subject, msgid, lst, irt=None, refs=None, ctype=None, cte=None,
                to=None, cc=None, mailer=None, agent=None):
        date = self.date()
        h = []
        h.append("Return-Path: <%s+bounces-%d-archive=example.net@vger.kernel.org>" % (
            lst, self.serial))
        h.append("Delivered-To: archive@example.net")
        h.append("Received: from sy.mirrors.kernel.org (sy.mirrors.kernel.org [147.75.48.161])\n"
                 "\tby mx.example.net (Postfix) with ESMTPS id %s\n\tfor <archive@example.net>; %s"
                 % (self.hexid(12).upper(), date))
        h.append("Received: from vger.kernel.org (vger.kernel.org [23.128.96.18])\n"
                 "\tby sy.mirrors.kernel.org (Postfix) with ESMTP id %s\n"
                 "\tfor <archive@example.net>; %s" % (self.hexid(11).upper(), date))
        h.append("ARC-Seal: i=1; a=rsa-sha256; d=subspace.kernel.org; s=arc-20240116;\n"
                 "\tt=%d; cv=none; b=%s" % (self.t, self.b64blob(340)))
        h.append("ARC-Message-Signature: i=1; a=rsa-sha256; d=subspace.kernel.org;\n"
                 "\ts=arc-20240116; t=%d; c=relaxed/simple;\n"
                 "\tbh=%s;\n\th=From:To:Cc:Subject:Date:Message-ID:MIME-Version; b=%s"
                 % (self.t, self.b64blob(44), self.b64blob(340)))
        h.append("ARC-Authentication-Results: i=1; smtp.subspace.kernel.org; dmarc=pass (p=none dis=none)"
                 " header.from=%s;\n\tspf=pass smtp.mailfrom=%s" % (sender[1].split("@")[1],
                                                                    sender[1].split("@")[1]))
        h.append("DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/simple; d=%s;\n"
                 "\ts=k20201202; t=%d; bh=%s;\n\th=From:To:Cc:Subject:Date:From;\n\tb=%s"
                 % (sender[1].split("@")[1], self.t, self.b64blob(44), self.b64blob(344)))
        h.append("From: " + self.addr(sender))
        h.append("To: " + (to or "%s@vger.kernel.org" % lst))
        h.append("Cc: " + (cc or self.cc_list()))
        h.append("Subject: " + self.fold(subject))
        h.append("Date: " + date)
        h.append("Message-ID: <%s>" % msgid)
        if irt:
            h.append("In-Reply-To: <%s>" % irt)
        if refs:
            h.append("References: " + "\n ".join("<%s>" % x for x in refs))
        if mailer:
            h.append("X-Mailer: " + mailer)
        if agent:
            h.append("User-Agent: " + agent)
        h.append("Precedence: bulk")
        h.append("X-Mailing-List: %s@vger.kernel.org" % lst)
        h.append("List-Id: <%s.vger.kernel.org>" % lst)
        h.append("List-Subscribe: <mailto:%s+subscribe@vger.kernel.org>" % lst)
        h.append("List-Unsubscribe: <mailto:%s+unsubscribe@vger.kernel.org>" % lst)
        h.append("MIME-Version: 1.0")
        h.append("Content-Type: " + (ctype or "text/plain; charset=UTF-8"))
        if cte:
            h.append("Content-Transfer-Encoding: " + cte)
        return "\n".join(h) + "\n\n"

    def b64blob(self, n):
        s = base64.b64encode(self.r.randbytes(n * 3 // 4 + 3)).decode()[:n]
        return "\n\t ".join(s[i:i + 70] for i in range(0, len(s), 70))

    def fold(self, subject):
        if len(subject) <= 70:
            return subject
        cut = subject.rfind(" ", 0, 70)
        return subject[:cut] + "\n" + subject[cut:] if cut > 0 else subject

    def cc_list(self):
        cc = [self.addr(self.person()) for _ in range(self.r.randint(1, 8))]
        cc.append("linux-kernel@vger.kernel.org")
        return ",\n\t".join(cc)

    # ---- bodies and transports ----
    def encode_body(self, body, charset="UTF-8"):
        """-> (ctype, cte, bytes): 8bit mostly, else quoted-printable or base64."""
        raw = body.encode(charset, "replace")
        k = self.r.random()
        ctype = "text/plain; charset=%s" % (charset if self.r.random() < 0.7 else '"%s"' % charset)
        if k < 0.10:
            return ctype, "quoted-printable", quopri.encodestring(raw)
        if k < 0.16:
            return ctype, "base64", base64.encodebytes(raw)
        if all(b < 128 for b in raw) and self.r.random() < 0.5:
            return ctype.replace(charset, "us-ascii"), "7bit", raw
        return ctype, "8bit", raw

    def series(self):
        """A series: a cover letter when N > 1, then N patches; appended to self.out."""
        sub = self.r.choice(SUBSYS)
        author = self.person()
        n = self.r.choices([1, 2, 3, 4, 5, 6, 8, 12], [40, 12, 12, 10, 8, 6, 6, 6])[0]
        version = self.r.choices([1, 2, 3, 4, 5, 7], [55, 20, 12, 6, 4, 3])[0]
        tags = ["PATCH"]
        k = self.r.random()
        if k < 0.06:
            tags = ["RFC", "PATCH"]
        elif k < 0.09:
            tags = ["PATCH", "RESEND"]
        if sub[0] in ("netdev", "bpf") and self.r.random() < 0.7:
            tags.append(self.r.choice(["net", "net-next", "bpf-next"]))
        if version > 1:
            tags.append("v%d" % version)
        base = self.hexid()
        mailer = self.r.choice(MAILERS)
        root = self.msgid(author)
        titles = ["%s: %s: %s %s" % (sub[1], self.r.choice(sub[3]), self.r.choice(VERBS),
                                     self.r.choice(OBJECTS) % self.func()) for _ in range(n)]
        diffs = [self.diff(sub) for _ in range(n)]
        if n > 1:
            stat = "".join(s for _, s in diffs)
            body = ("%s\n\n%s\n\n" % (self.paragraph(), self.paragraph()))
            if version > 1:
                body += "Changes in v%d:\n" % version
                body += "".join("- %s\n" % self.words(4, 10) for _ in range(self.r.randint(1, 4)))
                body += "- Link to v%d: https://lore.kernel.org/r/%s\n\n" % (version - 1, self.msgid(author))
            body += "%s (%d):\n" % (author[0], n)
            body += "".join("  %s\n" % t for t in titles)
            body += "\n" + stat + "\n"
            body += "base-commit: %s\n" % base
            if mailer and mailer.startswith("b4"):
                body += "change-id: 20231114-%s-%s\n\nBest regards,\n-- \n%s <%s>\n" % (
                    self.func(), self.hexid(12), author[0], author[1])
            else:
                body += "-- \n2.43.0\n"
            subj = "[%s 0/%d] %s: %s" % (" ".join(tags), n, sub[1], self.words(3, 8))
            ctype, cte, raw = self.encode_body(body)
            self.emit(self.headers(author, subj, root, sub[0], ctype=ctype, cte=cte,
                                   mailer=mailer).encode() + raw)
        for i in range(1, n + 1):
            diff, stat = diffs[i - 1]
            msg = "%s\n\n%s\n\n" % (self.paragraph(), self.paragraph())
            if self.r.random() < 0.3:
                msg += "Fixes: %s (\"%s\")\n" % (self.hexid(12), self.words(4, 8))
            if self.r.random() < 0.2:
                msg += "Reported-by: %s\n" % self.addr(self.person(), False)
            msg += "Signed-off-by: %s\n" % self.addr(author, False)
            body = msg + "---\n"
            if version > 1 and self.r.random() < 0.5:
                body += "v%d: %s\n\n" % (version, self.words(5, 12))
            body += stat + "\n" + diff
            if n == 1:
                body += "\nbase-commit: %s\n" % base
            body += "-- \n2.43.0\n"
            num = " %d/%d" % (i, n) if n > 1 else ""
            subj = "[%s%s] %s" % (" ".join(tags), num, titles[i - 1])
            mid = self.msgid(author) if (n > 1 or i > 1) else root
            irt = root if n > 1 else None
            latin1 = self.r.random() < 0.05
            if self.r.random() < 0.06:
                hdr, raw = self.attached(author, subj, mid, sub, irt, msg, stat, diff)
            else:
                ctype, cte, raw = self.encode_body(body, "ISO-8859-1" if latin1 else "UTF-8")
                hdr = self.headers(author, subj, mid, sub[0], irt=irt, refs=[root] if irt else None,
                                   ctype=ctype, cte=cte, mailer=mailer)
            self.emit(hdr.encode() + raw)
            self.recent.append({"id": mid, "refs": [root] if irt else [], "subject": subj,
                                "author": author, "msg": msg, "diff": diff, "list": sub[0]})
        del self.recent[:-40]

    def attached(self, author, subj, mid, sub, irt, msg, stat, diff):
        b = "------------%s" % self.hexid(24)
        name = "0001-%s.patch" % subj.split("] ", 1)[1][:40].replace(" ", "-").replace(":", "")
        patch = ("From %s Mon Sep 17 00:00:00 2001\nFrom: %s\nDate: %s\nSubject: %s\n\n%s---\n%s\n%s"
                 "-- \n2.43.0\n" % (self.hexid(), self.addr(author, False), self.date(), subj,
                                   msg, stat, diff))
        cte = "7bit"
        enc = patch.encode()
        if self.r.random() < 0.3:
            cte = "base64"
            enc = base64.encodebytes(enc)
        elif any(b_ > 127 for b_ in enc):
            cte = "8bit"
        raw = ("This is a multi-part message in MIME format.\n--%s\n"
               "Content-Type: text/plain; charset=UTF-8; format=flowed\n"
               "Content-Transfer-Encoding: 7bit\n\n%s\n\nThanks,\n%s\n\n"
               "--%s\nContent-Type: text/x-patch; charset=UTF-8;\n name=\"%s\"\n"
               "Content-Disposition: attachment;\n filename=\"%s\"\n"
               "Content-Transfer-Encoding: %s\n\n" % (b, self.paragraph(2), author[0], b, name, name, cte)
               ).encode() + enc + ("\n--%s--\n" % b).encode()
        hdr = self.headers(author, subj, mid, sub[0], irt=irt, refs=[irt] if irt else None,
                           ctype='multipart/mixed; boundary="%s"' % b, agent="Mozilla Thunderbird")
        return hdr, raw

    def reply(self, fixup=False):
        if not self.recent:
            return self.discussion()
        p = self.r.choice(self.recent[-20:])
        who = self.person()
        lines = []
        if self.r.random() < 0.1:
            # Top-posted.
            lines.append(self.paragraph(2) + "\n")
        lines.append("On %s, %s wrote:" % (self.date()[:-6], p["author"][0]))
        lines.extend(("> " + l) if l else ">" for l in p["msg"].rstrip("\n").split("\n")[:8])
        lines.append("")
        lines.append(self.paragraph(self.r.randint(1, 3)))
        lines.append("")
        dl = p["diff"].rstrip("\n").split("\n")
        for _ in range(self.r.randint(0, 4)):
            start = self.r.randrange(len(dl))
            chunk = dl[start:start + self.r.randint(3, 40)]
            lines.extend("> " + l if l else ">" for l in chunk)
            lines.append("")
            lines.append(self.paragraph(self.r.randint(1, 2)))
            lines.append("")
        if fixup:
            d, _ = self.diff(self.r.choice(SUBSYS))
            lines.append("Something like this on top?\n")
            lines.append(d)
        if self.r.random() < 0.4:
            lines.append("Reviewed-by: %s" % self.addr(who, False))
        lines.append("\n-- \n%s" % who[0].split()[0])
        body = "\n".join(lines) + "\n"
        mid = self.msgid(who)
        charset = "ISO-8859-1" if self.r.random() < 0.1 else "UTF-8"
        ctype, cte, raw = self.encode_body(body, charset)
        subj = "Re: " + p["subject"]
        self.emit(self.headers(who, subj, mid, p["list"], irt=p["id"], refs=p["refs"] + [p["id"]],
                               ctype=ctype, cte=cte, to=self.addr(p["author"]),
                               agent=self.r.choice(AGENTS)).encode() + raw)
        if self.r.random() < 0.3:
            self.recent.append(dict(p, id=mid, refs=p["refs"] + [p["id"]], subject=subj,
                                    author=who, msg=body[:2000]))

    def discussion(self):
        sub = self.r.choice(SUBSYS)
        who = self.person()
        subj = self.r.choice(["Regression in 6.%d-rc%d: %s" % (self.r.randint(5, 8), self.r.randint(1, 7),
                                                                 self.words(3, 6)),
                              "Question about %s()" % self.func(),
                              "%s: %s" % (sub[1], self.words(3, 8)),
                              "WARNING in %s" % self.func()])
        body = "Hi,\n\n%s\n\n" % self.paragraph()
        if self.r.random() < 0.5:
            body += "[  %d.%06d] ------------[ cut here ]------------\n" % (self.r.randint(1, 999),
                                                                          self.r.randint(0, 999999))
            for _ in range(self.r.randint(5, 30)):
                body += "[  %d.%06d]  %s+0x%x/0x%x\n" % (self.r.randint(1, 999), self.r.randint(0, 999999),
                                                         self.func(), self.r.randint(1, 999),
                                                         self.r.randint(1000, 4000))
            body += "\n"
        body += "%s\n\nThanks,\n%s\n" % (self.paragraph(), who[0])
        mid = self.msgid(who)
        irt = refs = None
        if self.r.random() < 0.4 and self.recent:
            # A reply in a discussion thread, itself with "Re:".
            p = self.r.choice(self.recent[-20:])
            subj, irt, refs = "Re: " + p["subject"], p["id"], p["refs"] + [p["id"]]
        if self.r.random() < 0.15:
            b = "=_%s" % self.hexid(16)
            text = body.encode("ISO-8859-1", "replace")
            html = ("<html><body><p>%s</p></body></html>" % body.replace("\n\n", "</p><p>")).encode(
                "ISO-8859-1", "replace")
            raw = ("--%s\nContent-Type: text/plain; charset=iso-8859-1\n"
                   "Content-Transfer-Encoding: quoted-printable\n\n" % b).encode() + \
                quopri.encodestring(text) + ("\n--%s\nContent-Type: text/html; charset=iso-8859-1\n"
                                             "Content-Transfer-Encoding: quoted-printable\n\n" % b
                                             ).encode() + quopri.encodestring(html) + \
                ("\n--%s--\n" % b).encode()
            ctype, cte = 'multipart/alternative; boundary="%s"' % b, None
        else:
            ctype, cte, raw = self.encode_body(body, "ISO-8859-1" if self.r.random() < 0.2 else "UTF-8")
        self.emit(self.headers(who, subj, mid, sub[0], irt=irt, refs=refs, ctype=ctype, cte=cte,
                               agent=self.r.choice(AGENTS)).encode() + raw)

    def misc(self):
        sub = self.r.choice(SUBSYS)
        who = self.person()
        k = self.r.random()
        if k < 0.4:
            _, stat = self.diff(sub)
            subj = "[GIT PULL] %s fixes for 6.%d-rc%d" % (sub[1], self.r.randint(5, 8), self.r.randint(1, 7))
            body = ("Hi Linus,\n\nThe following changes since commit %s:\n\n"
                    "  Linux 6.7-rc1 (2023-11-12 16:19:07 -0800)\n\nare available in the Git repository at:\n\n"
                    "  git://git.kernel.org/pub/scm/linux/kernel/git/%s/%s.git tags/%s-6.7-rc2\n\n"
                    "for you to fetch changes up to %s:\n\n%s\n\n"
                    "----------------------------------------------------------------\n%s\n\n%s"
                    % (self.hexid(), sub[1], sub[1], sub[1], self.hexid(), self.paragraph(),
                       self.paragraph(), stat))
        elif k < 0.7:
            subj = "[syzbot] [%s?] KASAN: slab-use-after-free Read in %s" % (sub[1], self.func())
            body = ("Hello,\n\nsyzbot found the following issue on:\n\nHEAD commit:    %s Merge tag\n"
                    "git tree:       upstream\n\n%s\n\n" % (self.hexid(12), self.paragraph()))
            body += "".join(" %s+0x%x/0x%x\n" % (self.func(), self.r.randint(1, 999), 4000)
                            for _ in range(self.r.randint(10, 40)))
        else:
            subj = "[RFC] %s: %s" % (sub[1], self.words(3, 8))
            body = "%s\n\n%s\n\n%s\n" % (self.paragraph(), self.paragraph(), self.paragraph())
        ctype, cte, raw = self.encode_body(body)
        self.emit(self.headers(who, subj, self.msgid(who), sub[0], ctype=ctype, cte=cte,
                               agent=self.r.choice(AGENTS)).encode() + raw)

    # ---- driver ----
    def emit(self, data):
        if self.count < self.n:
            with open(os.path.join(self.dir, "%05d.eml" % self.count), "wb") as f:
                f.write(data)
        self.count += 1

    def run(self, n, out):
        self.n, self.dir, self.count = n, out, 0
        got = {"series": 0, "reply": 0, "discussion": 0, "misc": 0}
        want = {"series": 0.45, "reply": 0.35, "discussion": 0.10, "misc": 0.10}
        while self.count < n:
            # The kind furthest below its share goes next.
            kind = max(want, key=lambda k: want[k] - got[k] / max(1, self.count))
            before = self.count
            if kind == "series":
                self.series()
            elif kind == "reply":
                self.reply(fixup=self.r.random() < 0.04)
            elif kind == "discussion":
                self.discussion()
            else:
                self.misc()
            got[kind] += self.count - before


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: gen-lkml.py N DIR [SEED]")
    os.makedirs(sys.argv[2], exist_ok=True)
    Gen(int(sys.argv[3]) if len(sys.argv) == 4 else 20231114).run(int(sys.argv[1]), sys.argv[2])


main()
