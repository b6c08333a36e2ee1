/* A line-at-a-time driver of the engine on a scratch store, for
 * differential runs against a real redis-server: each stdin line is one
 * command (blank-separated words, "" for an empty one), run in a txn of
 * its own 1 ms after the previous one and committed; its reply is printed
 * in yharness.h's readable form. Not a test by itself. */
#include <stdio.h>
#include <string.h>

#include "yharness.h"

static struct yh h;

static void run(void)
{
	char line[65536];
	int64_t ms = 1000;
	yh_open(&h, "yrepl");
	while (fgets(line, sizeof line, stdin) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '\0')
			continue;
		printf("%s\n", yh_cmd(&h, yh_ht_ms(ms++), line));
	}
	yh_close(&h);
}

TEST(repl) { run(); }

TEST_MAIN(T(repl))
