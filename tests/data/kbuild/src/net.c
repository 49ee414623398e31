int net_init(void);

int net_init(void)
{
	int ready = 1;

	return ready - 1;
}
