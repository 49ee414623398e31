#!/usr/bin/env python3
"""
Builds the patchmail corpus (tests/data/patchmail) with the real git:
a small driver tree, a three-patch series with a cover letter and a
base, and single patches; then wraps git format-patch's output in the
headers vger.kernel.org mail carries, in the encodings mail clients
use.  The .eml files are committed; this script documents how they
were made and regenerates them (Message-IDs and dates are fixed; commit
ids are fixed by the fixed author and committer dates).

usage: generate.py OUTDIR
"""
import base64
import os
import quopri
import shutil
import subprocess
import sys
import tempfile

OUT = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="patchmail-corpus-")
REPO = os.path.join(WORK, "linux")

MARTA = ("Marta Kowalska", "marta.kowalska@example.com")
JOSE = ("José Müller", "jose.muller@example.es")
INES = ("Inês Duarte", "ines.duarte@example.pt")
REVIEWER = ("Tomasz Reviewer", "tomasz@example.org")

BASE_ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=WORK, TZ="UTC")


def git(*args, author=MARTA, date="2023-11-14T21:00:00+0100", stdin=None):
    env = dict(BASE_ENV, GIT_AUTHOR_NAME=author[0], GIT_AUTHOR_EMAIL=author[1],
               GIT_COMMITTER_NAME=MARTA[0], GIT_COMMITTER_EMAIL=MARTA[1],
               GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", "-C", REPO] + list(args), env=env, check=True,
                          input=stdin, stdout=subprocess.PIPE).stdout


def write(path, text):
    full = os.path.join(REPO, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def commit(message, author=MARTA, date="2023-11-14T21:00:00+0100"):
    git("add", "-A")
    git("commit", "-q", "-F", "-", author=author, date=date, stdin=message.encode())
    return git("rev-parse", "HEAD").decode().strip()


MAIN_C = r"""// SPDX-License-Identifier: GPL-2.0
/*
 * ACME Gigabit Ethernet driver
 *
 * Copyright (C) 2023 ACME Corporation
 */

#include <linux/clk.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/platform_device.h>

#include "acme.h"

static int acme_open(struct net_device *ndev)
{
	struct acme_priv *priv = netdev_priv(ndev);

	writel(ACME_CTRL_RX_EN | ACME_CTRL_TX_EN, priv->regs + ACME_CTRL);
	netif_start_queue(ndev);
	return 0;
}

static int acme_stop(struct net_device *ndev)
{
	struct acme_priv *priv = netdev_priv(ndev);

	netif_stop_queue(ndev);
	writel(0, priv->regs + ACME_CTRL);
	return 0;
}

static const struct net_device_ops acme_netdev_ops = {
	.ndo_open	= acme_open,
	.ndo_stop	= acme_stop,
};

static int acme_probe(struct platform_device *pdev)
{
	struct net_device *ndev;
	struct acme_priv *priv;
	int ret;

	ndev = devm_alloc_etherdev(&pdev->dev, sizeof(*priv));
	priv = netdev_priv(ndev);
	priv->regs = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(priv->regs))
		return PTR_ERR(priv->regs);

	priv->clk = devm_clk_get_enabled(&pdev->dev, NULL);
	if (IS_ERR(priv->clk)) {
		dev_err(&pdev->dev, "failed to get clock\n");
		return PTR_ERR(priv->clk);
	}

	ndev->netdev_ops = &acme_netdev_ops;
	ret = devm_register_netdev(&pdev->dev, ndev);
	return ret;
}

static struct platform_driver acme_driver = {
	.probe = acme_probe,
	.driver = {
		.name = "acme-eth",
	},
};
module_platform_driver(acme_driver);

MODULE_DESCRIPTION("ACME Gigabit Ethernet driver");
MODULE_LICENSE("GPL");
"""

ACME_H = """/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __ACME_H__
#define __ACME_H__

#define ACME_CTRL		0x00
#define ACME_CTRL_RX_EN		BIT(0)
#define ACME_CTRL_TX_EN		BIT(1)

struct acme_priv {
	void __iomem *regs;
	struct clk *clk;
};

#endif
"""

MAKEFILE = """# SPDX-License-Identifier: GPL-2.0
obj-$(CONFIG_ACME_ETH) += acme.o
acme-y := acme_main.o
"""


def build_tree():
    os.makedirs(REPO)
    subprocess.run(["git", "init", "-q", "-b", "master", REPO], env=BASE_ENV, check=True)
    git("config", "user.name", MARTA[0])
    git("config", "user.email", MARTA[1])
    write("drivers/net/ethernet/acme/acme_main.c", MAIN_C)
    write("drivers/net/ethernet/acme/acme.h", ACME_H)
    write("drivers/net/ethernet/acme/Makefile", MAKEFILE)
    c = {}
    c["base"] = commit("net: acme: add ACME Gigabit Ethernet driver\n\n"
                       "Signed-off-by: Marta Kowalska <marta.kowalska@example.com>\n",
                       date="2023-11-01T10:00:00+0100")
    main = MAIN_C.replace(
        "\tndev = devm_alloc_etherdev(&pdev->dev, sizeof(*priv));\n",
        "\tndev = devm_alloc_etherdev(&pdev->dev, sizeof(*priv));\n"
        "\tif (!ndev)\n\t\treturn -ENOMEM;\n\n")
    write("drivers/net/ethernet/acme/acme_main.c", main)
    c["1"] = commit(
        "net: acme: fix NULL dereference in acme_probe()\n\n"
        "devm_alloc_etherdev() returns NULL when it cannot allocate the\n"
        "net_device, and acme_probe() dereferences the result right away.\n"
        "Return -ENOMEM instead.\n\n"
        "Fixes: 0123456789ab (\"net: acme: add ACME Gigabit Ethernet driver\")\n"
        "Signed-off-by: Marta Kowalska <marta.kowalska@example.com>\n",
        date="2023-11-14T20:10:00+0100")
    main = main.replace(
        "\tif (IS_ERR(priv->clk)) {\n"
        "\t\tdev_err(&pdev->dev, \"failed to get clock\\n\");\n"
        "\t\treturn PTR_ERR(priv->clk);\n\t}\n",
        "\tif (IS_ERR(priv->clk))\n"
        "\t\treturn dev_err_probe(&pdev->dev, PTR_ERR(priv->clk), \"failed to get the "
        "ACME core clock (regs=%p)\\n\", priv->regs);\n")
    main = main.replace("\tret = devm_register_netdev(&pdev->dev, ndev);\n\treturn ret;\n",
                        "\tret = devm_register_netdev(&pdev->dev, ndev);\n"
                        "\tif (ret)\n"
                        "\t\treturn dev_err_probe(&pdev->dev, ret, \"failed to register "
                        "net device, ret=%d, ndev=%p\\n\", ret, ndev);\n"
                        "\treturn 0;\n")
    write("drivers/net/ethernet/acme/acme_main.c", main)
    c["2"] = commit(
        "net: acme: use dev_err_probe() for probe errors\n\n"
        "A missing clock is usually a deferred probe: dev_err_probe() keeps\n"
        "the log quiet for -EPROBE_DEFER and records the reason, so use it\n"
        "for the clock and for the registration error.\n\n"
        "Signed-off-by: Marta Kowalska <marta.kowalska@example.com>\n",
        date="2023-11-14T20:20:00+0100")
    write("drivers/net/ethernet/acme/acme_ethtool.c",
          "// SPDX-License-Identifier: GPL-2.0\n"
          "#include <linux/ethtool.h>\n#include <linux/netdevice.h>\n\n#include \"acme.h\"\n\n"
          "static const char acme_stats[][ETH_GSTRING_LEN] = {\n"
          "\t\"rx_packets\",\n\t\"tx_packets\",\n};\n\n"
          "static int acme_get_sset_count(struct net_device *ndev, int sset)\n{\n"
          "\treturn sset == ETH_SS_STATS ? ARRAY_SIZE(acme_stats) : -EOPNOTSUPP;\n}\n\n"
          "const struct ethtool_ops acme_ethtool_ops = {\n"
          "\t.get_sset_count = acme_get_sset_count,\n};\n")
    write("drivers/net/ethernet/acme/Makefile", MAKEFILE.replace("acme_main.o", "acme_main.o acme_ethtool.o"))
    write("drivers/net/ethernet/acme/acme.h", ACME_H.replace(
        "};\n\n#endif", "};\n\nextern const struct ethtool_ops acme_ethtool_ops;\n\n#endif"))
    c["3"] = commit(
        "net: acme: add ethtool statistics\n\n"
        "Report the packet counters through ethtool -S.\n\n"
        "Signed-off-by: Marta Kowalska <marta.kowalska@example.com>\n",
        date="2023-11-14T20:30:00+0100")
    main = main.replace(" * Copyright (C) 2023 ACME Corporation\n",
                        " * Copyright (C) 2023 ACME Corporation\n"
                        " * Copyright (C) 2023 José Müller <jose.muller@example.es>\n")
    write("drivers/net/ethernet/acme/acme_main.c", main)
    c["4"] = commit(
        "net: acme: add José Müller as copyright holder\n\n"
        "José Müller wrote the receive path; say so.\n\n"
        "Signed-off-by: José Müller <jose.muller@example.es>\n",
        author=JOSE, date="2023-11-15T09:00:00+0100")
    main = main.replace('"acme-eth"', 'KBUILD_MODNAME')
    write("drivers/net/ethernet/acme/acme_main.c", main)
    c["5"] = commit(
        "net: acme: use KBUILD_MODNAME as the driver name\n\n"
        "The module is called acme, not acme-eth: use KBUILD_MODNAME so that\n"
        "the two never disagree again.\n\n"
        "Signed-off-by: Inês Duarte <ines.duarte@example.pt>\n"
        "Signed-off-by: Marta Kowalska <marta.kowalska@example.com>\n",
        author=INES, date="2023-11-15T11:00:00+0100")
    return c


def split_patch(text):
    """format-patch output -> (From, Date, Subject, body): the folded
    subject unfolded, the body exactly as written."""
    head, body = text.split("\n\n", 1)
    lines = head.split("\n")[1:]  # drop the "From <sha> Mon Sep 17" line
    fields, name = {}, None
    for line in lines:
        if line[0] in " \t":
            fields[name] += line
        else:
            name, value = line.split(": ", 1)
            fields[name] = value
    return fields, body


def headers(msgid, subject, sender, date, to="netdev@vger.kernel.org",
            cc="linux-kernel@vger.kernel.org", irt=None, refs=None,
            ctype="text/plain; charset=UTF-8", cte="8bit", mailer="git-send-email 2.39.5",
            list_id="<netdev.vger.kernel.org>", extra=""):
    h = ("Return-Path: <netdev+bounces-{n}-archive=example.net@vger.kernel.org>\n"
         "Received: from sy.mirrors.kernel.org (sy.mirrors.kernel.org [147.75.48.161])\n"
         "\tby mx.example.net (Postfix) with ESMTPS id 4SVDvd0Zq7z9rxM\n"
         "\tfor <archive@example.net>; {date}\n"
         "Received: from vger.kernel.org (vger.kernel.org [23.128.96.18])\n"
         "\tby sy.mirrors.kernel.org (Postfix) with ESMTP id 2B1F6B20E4C\n"
         "\tfor <archive@example.net>; {date}\n").format(n=len(msgid or "") + 11, date=date)
    h += "From: " + sender + "\n"
    h += "To: " + to + "\n"
    if cc:
        h += "Cc: " + cc + "\n"
    h += "Subject: " + subject + "\n"
    h += "Date: " + date + "\n"
    h += "Message-Id: <" + msgid + ">\n" if msgid else ""
    if mailer:
        h += "X-Mailer: " + mailer + "\n"
    if irt:
        h += "In-Reply-To: <" + irt + ">\n"
    if refs:
        h += "References: " + "\n ".join("<%s>" % r for r in refs) + "\n"
    h += extra
    h += "Precedence: bulk\nX-Mailing-List: netdev@vger.kernel.org\n"
    h += "List-Id: " + list_id + "\n"
    h += ("List-Subscribe: <mailto:netdev+subscribe@vger.kernel.org>\n"
          "List-Unsubscribe: <mailto:netdev+unsubscribe@vger.kernel.org>\n")
    h += "MIME-Version: 1.0\n"
    if ctype:
        h += "Content-Type: " + ctype + "\n"
    if cte:
        h += "Content-Transfer-Encoding: " + cte + "\n"
    return h + "\n"


def emit(name, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def fmt_patch(*args):
    return git("format-patch", "--stdout", *args).decode("utf-8")


def main():
    os.makedirs(OUT, exist_ok=True)
    c = build_tree()
    marta = "%s <%s>" % MARTA
    cc = "Tomasz Reviewer <tomasz@example.org>, linux-kernel@vger.kernel.org"
    ids = ["20231114211320.3188529-%d-marta.kowalska@example.com" % i for i in range(4)]
    dates = ["Tue, 14 Nov 2023 22:13:%02d +0100" % (20 + i) for i in range(4)]

    # The tree the series applies to, and what each patch's diff must be.
    base_dir = os.path.join(OUT, "tree")
    shutil.rmtree(base_dir, ignore_errors=True)
    for path in ("drivers/net/ethernet/acme/acme_main.c", "drivers/net/ethernet/acme/acme.h",
                 "drivers/net/ethernet/acme/Makefile"):
        os.makedirs(os.path.dirname(os.path.join(base_dir, path)), exist_ok=True)
        with open(os.path.join(base_dir, path), "wb") as f:
            f.write(git("show", "%s:%s" % (c["base"], path)))
    for k in ("1", "2", "3", "4"):
        emit("patch-%s.diff" % k, git("show", "--format=", "--no-color", c[k]))
    with open(os.path.join(OUT, "tip-tree"), "w") as f:
        f.write(git("rev-parse", c["3"] + "^{tree}").decode())

    # The series: cover letter with base-commit, three inline patches.
    series = git("format-patch", "--cover-letter", "--base=" + c["base"],
                 "--subject-prefix=PATCH net-next", "-v2", "-o", os.path.join(WORK, "series"),
                 c["base"] + ".." + c["3"]).decode().split()
    for i, path in enumerate(series):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        fields, body = split_patch(text)
        if i == 0:
            body = body.replace("*** BLURB HERE ***",
                                "The ACME driver landed in net-next last week; this fixes the\n"
                                "NULL dereference syzbot found in probe, makes probe errors\n"
                                "quiet for deferred probing, and adds ethtool statistics.\n\n"
                                "Changes in v2:\n- use dev_err_probe() for the registration error too\n"
                                "- Link to v1: https://lore.kernel.org/r/20231110090000.1-0-marta.kowalska@example.com")
            fields["Subject"] = fields["Subject"].replace(
                "*** SUBJECT HERE ***", "net: acme: probe fixes and ethtool statistics")
        refs = [ids[0]] if i else None
        emit("series-v2-%d.eml" % i,
             headers(ids[i], fields["Subject"], marta, dates[i], cc=cc,
                     irt=ids[0] if i else None, refs=refs) + body)

    # Patch 2 of v1, sent quoted-printable (a client that encodes long lines).
    fields, body = split_patch(fmt_patch("--subject-prefix=PATCH net-next", "--start-number=2",
                                         "-1", c["2"]))
    fields["Subject"] = fields["Subject"].replace("[PATCH net-next]", "[PATCH net-next 2/3]")
    body = body.replace("registration error.\n\n",
                        "registration error.\n\nTested on the ACME EVB-2 – no more “deferred” spam.\n\n")
    qp = quopri.encodestring(body.encode("utf-8")).decode("ascii")
    emit("quoted-printable.eml",
         headers("20231110090000.1-2-marta.kowalska@example.com", fields["Subject"], marta,
                 "Fri, 10 Nov 2023 10:00:02 +0100", cc=cc, cte="quoted-printable",
                 irt="20231110090000.1-0-marta.kowalska@example.com",
                 refs=["20231110090000.1-0-marta.kowalska@example.com"],
                 mailer="Evolution 3.46.4-2") + qp)

    # José's patch, base64 in ISO-8859-1 with an encoded From.
    fields, body = split_patch(fmt_patch("-1", c["4"]))
    latin1 = base64.encodebytes(body.encode("iso-8859-1")).decode("ascii")
    emit("base64-latin1.eml",
         headers("87y1f3ab9z.fsf@example.es", fields["Subject"],
                 "=?iso-8859-1?q?Jos=E9_M=FCller?= <jose.muller@example.es>",
                 "Wed, 15 Nov 2023 09:00:00 +0100", to="Marta Kowalska <marta.kowalska@example.com>",
                 cc="netdev@vger.kernel.org", ctype='text/plain; charset="iso-8859-1"',
                 cte="base64", mailer="Gnus/5.13 (Gnus v5.13)") + latin1)

    # Inês's patch, sent by Marta: an in-body From, base and prerequisites.
    fields, body = split_patch(fmt_patch("--from=" + marta, "--base=" + c["base"], "-1", c["5"]))
    emit("in-body-from.eml",
         headers("20231115100000.3190001-1-marta.kowalska@example.com", fields["Subject"], marta,
                 "Wed, 15 Nov 2023 11:00:00 +0100", cc=cc) + body)

    # Patch 1 as an attachment, the whole format-patch file.
    patch1 = fmt_patch("-1", c["1"])
    boundary = "------------9Fq2Yv0dUxsU3cVjQ5Ghr1Ks"
    mixed = ("This is a multi-part message in MIME format.\n"
             "--%s\nContent-Type: text/plain; charset=UTF-8; format=flowed\n"
             "Content-Transfer-Encoding: 7bit\n\n"
             "Hi,\n\nmy mail client mangles inline patches, so the fix is attached.\n\n"
             "Thanks,\nMarta\n\n"
             "--%s\nContent-Type: text/x-patch; charset=UTF-8;\n"
             " name=\"0001-net-acme-fix-NULL-dereference-in-acme_probe.patch\"\n"
             "Content-Disposition: attachment;\n"
             " filename=\"0001-net-acme-fix-NULL-dereference-in-acme_probe.patch\"\n"
             "Content-Transfer-Encoding: 7bit\n\n%s\n--%s--\n") % (boundary, boundary, patch1, boundary)
    hdr = headers("5c1e0a3e-7d1b-4d8e-9a51-2f3c0e1d9b7a@example.com",
                  "[PATCH net] net: acme: fix NULL dereference in acme_probe()", marta,
                  "Tue, 14 Nov 2023 20:15:00 +0100", cc=cc,
                  ctype='multipart/mixed; boundary="%s"' % boundary, cte=None,
                  mailer=None, extra="User-Agent: Mozilla Thunderbird\n")
    emit("attached.eml", hdr + mixed)
    # The same mail cut off in the middle of the attachment.
    cut = (hdr + mixed)[: len(hdr) + mixed.index("@@") + 40]
    emit("truncated-multipart.eml", cut.replace("5c1e0a3e-7d1b", "5c1e0a3e-cut0"))

    # A review of patch 2: the diff quoted, comments between.
    fields, body = split_patch(open(series[2], encoding="utf-8").read())
    diff = body[body.index("diff --git"):body.index("\n-- \n") if "\n-- \n" in body else len(body)]
    quoted = "".join("> " + l + "\n" if l else ">\n" for l in diff.rstrip("\n").split("\n"))
    long_line = next(l for l in quoted.split("\n") if "PTR_ERR(priv->clk), \"failed" in l)
    quoted = quoted.replace(long_line + "\n", long_line + "\n\nNit: this line is longer than"
                            " 100 columns now.\n\n", 1)
    review = ("On Tue, Nov 14, 2023 at 10:13:22PM +0100, Marta Kowalska wrote:\n"
              "> A missing clock is usually a deferred probe: dev_err_probe() keeps\n"
              "> the log quiet for -EPROBE_DEFER and records the reason, so use it\n"
              "> for the clock and for the registration error.\n>\n"
              "> Signed-off-by: Marta Kowalska <marta.kowalska@example.com>\n> ---\n"
              + quoted + "\nOtherwise looks good:\n\n"
              "Reviewed-by: Tomasz Reviewer <tomasz@example.org>\n")
    emit("review-reply.eml",
         headers("ZVSd1u3JX4q2Kp1x@example.org", "Re: " + fields["Subject"],
                 "Tomasz Reviewer <tomasz@example.org>", "Wed, 15 Nov 2023 08:01:17 +0100",
                 to=marta, cc="netdev@vger.kernel.org, linux-kernel@vger.kernel.org",
                 irt=ids[2], refs=[ids[0], ids[2]], mailer=None,
                 extra="Content-Disposition: inline\nUser-Agent: Mutt/2.2.12 (2023-09-09)\n",
                 ctype="text/plain; charset=us-ascii", cte=None) + review)

    # A reply carrying an unquoted fixup diff on top of patch 3.
    path = os.path.join(REPO, "drivers/net/ethernet/acme/acme_ethtool.c")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace("\t\"tx_packets\",\n", "\t\"tx_packets\",\n\t\"rx_errors\",\n"))
    fixup = git("diff", "--no-color").decode("utf-8")
    git("checkout", "-q", "--", ".")
    emit("fixup.diff", fixup)
    fields, body = split_patch(open(series[3], encoding="utf-8").read())
    emit("fixup-reply.eml",
         headers("ZVSf2aBcDeFgHiJk@example.org", "Re: " + fields["Subject"],
                 "Tomasz Reviewer <tomasz@example.org>", "Wed, 15 Nov 2023 08:30:00 +0100",
                 to=marta, cc="netdev@vger.kernel.org", irt=ids[3], refs=[ids[0], ids[3]],
                 mailer=None, extra="User-Agent: Mutt/2.2.12 (2023-09-09)\n",
                 ctype="text/plain; charset=us-ascii", cte=None)
         + "On Tue, Nov 14, 2023 at 10:13:23PM +0100, Marta Kowalska wrote:\n"
           "> Report the packet counters through ethtool -S.\n\n"
           "The hardware counts receive errors too; something like this on top?\n\n"
         + fixup + "\n-- \nTomasz\n")

    # A patch without a Message-ID (a broken gateway dropped it).
    fields, body = split_patch(fmt_patch("-1", c["1"]))
    emit("no-message-id.eml",
         headers(None, fields["Subject"], marta, "Tue, 14 Nov 2023 20:10:00 +0100") + body)

    # A NUL inside a header name: GMime's parser reports it as critical.
    emit("nul-header.eml",
         headers("20231114201000.1-1-marta.kowalska@example.com", fields["Subject"], marta,
                 "Tue, 14 Nov 2023 20:10:00 +0100",
                 extra="X-Spam\x00Status: No\n").encode("utf-8") + body.encode("utf-8"))
    shutil.rmtree(WORK)


main()
