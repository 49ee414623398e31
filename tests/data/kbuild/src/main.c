int net_init(void);
int legacy(int x);

int main(void)
{
	return net_init() + legacy(1);
}
