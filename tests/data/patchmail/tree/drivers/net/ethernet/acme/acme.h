/* SPDX-License-Identifier: GPL-2.0 */
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
