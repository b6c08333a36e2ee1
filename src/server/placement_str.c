/* Placement strings (placement_str.h). */
#include "server/placement_str.h"

#include <stdint.h>
#include <string.h>

#include "common/err.h"

static bool part_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

bool placement_str_valid(const char *s, char *errmsg)
{
	size_t n = strlen(s), part_len = 0;
	uint32_t parts = 1;

	if (n == 0)
		return true;
	if (n > PLACEMENT_STR_MAX) {
		err_set(errmsg, DOCRAFT_EINVAL, "placement of %zu bytes (at most %d)", n,
			PLACEMENT_STR_MAX);
		return false;
	}
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (part_len == 0) {
				err_set(errmsg, DOCRAFT_EINVAL,
					"placement '%s': empty part (want cloud.region.zone)", s);
				return false;
			}
			if (i < n)
				parts++;
			part_len = 0;
		} else if (!part_char(s[i])) {
			err_set(errmsg, DOCRAFT_EINVAL,
				"placement '%s': byte 0x%02x at offset %zu (only A-Z a-z 0-9 _ - "
				"and dots)",
				s, (unsigned char)s[i], i);
			return false;
		} else {
			part_len++;
		}
	}
	if (parts != 3) {
		err_set(errmsg, DOCRAFT_EINVAL,
			"placement '%s': %u parts (want three: cloud.region.zone)", s, parts);
		return false;
	}
	return true;
}
