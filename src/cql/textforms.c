/* The text forms of CQL dates, timestamps and uuids (bind.h:
 * cql_parse_date, cql_parse_timestamp, cql_parse_uuid), as string literals
 * and command-line arguments write them.
 *
 * Design. Hand-written scanners over (s, len), no locale and no libc time
 * functions: a date is turned into days with H. Hinnant's civil-from-days
 * arithmetic (proleptic Gregorian, any year 0000..9999), a timestamp adds
 * the time of day, up to microseconds (digits past the sixth are read and
 * dropped, at most nine), and the zone offset. Every malformed input is
 * DOCRAFT_EINVAL with the first 40 bytes of it in errmsg. Pure: any thread. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/hex.h"
#include "cql/bind.h"

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;
	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

struct scan {
	const char *s;
	size_t len;
	size_t i;
};

static bool scan_digits(struct scan *sc, size_t n, unsigned *out)
{
	unsigned v = 0;
	if (sc->len - sc->i < n)
		return false;
	for (size_t k = 0; k < n; k++) {
		char c = sc->s[sc->i + k];
		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (unsigned)(c - '0');
	}
	sc->i += n;
	*out = v;
	return true;
}

static bool scan_char(struct scan *sc, char c)
{
	if (sc->i < sc->len && sc->s[sc->i] == c) {
		sc->i++;
		return true;
	}
	return false;
}

static bool scan_date(struct scan *sc, int64_t *days)
{
	static const unsigned mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	unsigned y, m, d, max;
	if (!scan_digits(sc, 4, &y) || !scan_char(sc, '-') || !scan_digits(sc, 2, &m) ||
	    !scan_char(sc, '-') || !scan_digits(sc, 2, &d))
		return false;
	if (m < 1 || m > 12 || d < 1)
		return false;
	max = mdays[m - 1];
	if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
		max = 29;
	if (d > max)
		return false;
	*days = days_from_civil((int64_t)y, m, d);
	return true;
}

int cql_parse_date(const char *s, size_t len, uint32_t *date, char *errmsg)
{
	struct scan sc = {s, len, 0};
	int64_t days;
	if (!scan_date(&sc, &days) || sc.i != len)
		return err_set(errmsg, DOCRAFT_EINVAL, "'%.*s' is not a date (YYYY-MM-DD)",
			       (int)(len > 40 ? 40 : len), s);
	*date = (uint32_t)(days + (INT64_C(1) << 31));
	return 0;
}

int cql_parse_timestamp(const char *s, size_t len, int64_t *us, char *errmsg)
{
	struct scan sc = {s, len, 0};
	int64_t days, secs, frac = 0, zone = 0;
	unsigned h = 0, mi = 0, se = 0;
	if (!scan_date(&sc, &days))
		goto bad;
	if (sc.i + 1 < len && (s[sc.i] == ' ' || s[sc.i] == 'T' || s[sc.i] == 't') &&
	    s[sc.i + 1] >= '0' && s[sc.i + 1] <= '9') {
		sc.i++;
		if (!scan_digits(&sc, 2, &h) || !scan_char(&sc, ':') || !scan_digits(&sc, 2, &mi))
			goto bad;
		if (scan_char(&sc, ':')) {
			if (!scan_digits(&sc, 2, &se))
				goto bad;
			if (scan_char(&sc, '.')) {
				size_t nd = 0;
				while (sc.i < len && s[sc.i] >= '0' && s[sc.i] <= '9') {
					if (nd < 6)
						frac = frac * 10 + (s[sc.i] - '0');
					nd++;
					sc.i++;
				}
				if (nd == 0 || nd > 9)
					goto bad;
				for (; nd < 6; nd++)
					frac *= 10;
			}
		}
		if (h > 23 || mi > 59 || se > 59)
			goto bad;
	}
	if (sc.i < len && s[sc.i] == ' ')
		sc.i++;
	if (sc.i < len) {
		if (s[sc.i] == 'Z' || s[sc.i] == 'z') {
			sc.i++;
		} else if (s[sc.i] == '+' || s[sc.i] == '-') {
			int sign = s[sc.i] == '-' ? -1 : 1;
			unsigned zh, zm = 0;
			sc.i++;
			if (!scan_digits(&sc, 2, &zh))
				goto bad;
			if (sc.i < len) {
				scan_char(&sc, ':');
				if (!scan_digits(&sc, 2, &zm))
					goto bad;
			}
			if (zh > 23 || zm > 59)
				goto bad;
			zone = sign * (int64_t)(zh * 3600 + zm * 60);
		} else {
			goto bad;
		}
	}
	if (sc.i != len)
		goto bad;
	secs = days * 86400 + h * 3600 + mi * 60 + se - zone;
	*us = secs * 1000000 + frac;
	return 0;
bad:
	return err_set(errmsg, DOCRAFT_EINVAL,
		       "'%.*s' is not a timestamp (YYYY-MM-DD[ HH:MM[:SS[.ffffff]]][Z|+HH:MM])",
		       (int)(len > 40 ? 40 : len), s);
}

int cql_parse_uuid(const char *s, size_t len, uint8_t out[16], char *errmsg)
{
	size_t k = 0;
	if (len != 36)
		goto bad;
	for (size_t i = 0; i < 36;) {
		int hi, lo;
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				goto bad;
			i++;
			continue;
		}
		hi = hex_digit(s[i]);
		lo = hex_digit(s[i + 1]);
		if (hi < 0 || lo < 0 || (i < 8 && i + 1 >= 8))
			goto bad;
		out[k++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	return 0;
bad:
	return err_set(errmsg, DOCRAFT_EINVAL, "'%.*s' is not a uuid", (int)(len > 40 ? 40 : len),
		       s);
}
