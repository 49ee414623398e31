int legacy(int x);

int legacy(int x)
{
	int old;

	return x - 1;
}
