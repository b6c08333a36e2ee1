/* Hex digits. Pure: any thread. */
#ifndef DOCRAFT_COMMON_HEX_H
#define DOCRAFT_COMMON_HEX_H

/* The value of hex digit c (0-9, a-f, A-F), or -1 for any other byte. */
static inline int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
