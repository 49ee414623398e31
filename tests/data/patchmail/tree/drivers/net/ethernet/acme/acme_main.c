// SPDX-License-Identifier: GPL-2.0
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
