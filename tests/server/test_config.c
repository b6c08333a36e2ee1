/* server/config.h: the declarative flag parser of both servers.
 *
 *   argv_forms                --name value, --name=value, every kind
 *   defaults_and_given        defaults apply; given marks file and argv only
 *   file_then_command_line    a config file, its comments and spellings,
 *                             and the command line winning over it
 *   errors_name_flag_and_place  range, kind, unknown, missing value,
 *                             required, stray argument; "--name" or FILE:LINE
 *   file_errors               unreadable file, a line without '=', --config
 *                             and --help inside a file
 *   help_wins                 --help and -h, wherever they stand
 *   usage_from_the_table      the usage text is generated from the table
 *   split_list                comma lists for --masters */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "docraft/error.h"
#include "server/config.h"
#include "test.h"

static struct {
	char address[32];
	char data[64];
	unsigned n;
	unsigned ms;
	unsigned mb;
	bool on;
	int level;
	bool ms_given;
	char called[64];
} V;

/* A CONFIG_CALL family: accepts "call-a" with any value but "bad". */
static int call_set(void *dst, const char *name, const char *value, char *errmsg)
{
	if (strcmp(value, "bad") == 0) {
		snprintf(errmsg, DOCRAFT_ERRMSG_SIZE, "%s: not this", name);
		return DOCRAFT_EINVAL;
	}
	snprintf(dst, sizeof V.called, "%s=%s", name, value);
	return 0;
}

static const struct config_flag flags[] = {
	{.name = "address", .arg = "IP:PORT", .kind = CONFIG_STRING, .dst = V.address,
	 .cap = sizeof V.address, .required = true, .help = "where (required)"},
	{.name = "data", .arg = "DIR", .kind = CONFIG_STRING, .dst = V.data, .cap = sizeof V.data,
	 .def = "/default/dir", .help = "data directory"},
	{.name = "count", .arg = "N", .kind = CONFIG_UINT, .dst = &V.n, .min = 1, .max = 10,
	 .what = "a count", .def = "3", .help = "how many"},
	{.name = "wait-ms", .arg = "MS", .kind = CONFIG_MS, .dst = &V.ms, .min = 1,
	 .given = &V.ms_given, .help = "how long"},
	{.name = "cache-mb", .arg = "MB", .kind = CONFIG_MB, .dst = &V.mb, .max = 64,
	 .help = "how big"},
	{.name = "feature", .arg = "on|off", .kind = CONFIG_BOOL, .dst = &V.on, .def = "on",
	 .help = "a switch"},
	{.name = "log-level", .arg = "LEVEL", .kind = CONFIG_LOG_LEVEL, .dst = &V.level,
	 .help = "a level"},
	{.name = "call-a", .arg = "X", .kind = CONFIG_CALL, .dst = V.called, .set = call_set,
	 .help = "parsed elsewhere"},
	{.name = "config", .arg = "FILE", .kind = CONFIG_FILE, .help = "a file"},
	{.name = "help", .kind = CONFIG_HELP, .help = "this text"},
};

static const struct config_spec spec = {
	.synopsis = "prog --address IP:PORT [options]",
	.about = "Does things.",
	.footer = "Bye.\n",
	.flags = flags,
	.n_flags = sizeof flags / sizeof flags[0],
};

static char errmsg[DOCRAFT_ERRMSG_SIZE];

static void reset(void)
{
	memset(&V, 0, sizeof V);
	V.level = -1;
	errmsg[0] = '\0';
}

/* config_parse of a NULL-terminated argument list (argv[0] added). */
#define PARSE(...)                                                                     \
	({                                                                             \
		char *argv_[] = {(char *)"prog", __VA_ARGS__, NULL};                   \
		config_parse(&spec, (int)(sizeof argv_ / sizeof argv_[0]) - 1, argv_, \
			     errmsg);                                                  \
	})

#define CHECK_ERR(rv, text)                                                               \
	do {                                                                              \
		CHECK_EQ_INT((rv), DOCRAFT_EINVAL);                                       \
		CHECK_MSG(strstr(errmsg, (text)) != NULL, "'%s' lacks '%s'", errmsg, (text)); \
	} while (0)

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	fputs(text, f);
	fclose(f);
}

TEST(argv_forms)
{
	reset();
	CHECK_OK(PARSE("--address", "1.2.3.4:5", "--count=7", "--wait-ms", "250", "--cache-mb=0",
		       "--feature", "off", "--log-level=debug", "--call-a", "x"));
	CHECK_EQ_STR(V.address, "1.2.3.4:5");
	CHECK_EQ_INT(V.n, 7);
	CHECK_EQ_INT(V.ms, 250);
	CHECK_EQ_INT(V.mb, 0);
	CHECK(!V.on);
	CHECK_EQ_INT(V.level, LOG_LVL_DEBUG);
	CHECK_EQ_STR(V.called, "call-a=x");
	reset();
	CHECK_OK(PARSE("--address=a", "--feature=true", "--count", "10", "--count", "1"));
	CHECK(V.on);
	CHECK_EQ_INT(V.n, 1); /* the last one */
	reset();
	CHECK_OK(PARSE("--address=a", "--feature", "false", "--log-level", "3"));
	CHECK(!V.on);
	CHECK_EQ_INT(V.level, 3);
}

TEST(defaults_and_given)
{
	reset();
	V.mb = 42; /* no default: the caller's value stays */
	CHECK_OK(PARSE("--address", "a"));
	CHECK_EQ_STR(V.data, "/default/dir");
	CHECK_EQ_INT(V.n, 3);
	CHECK(V.on);
	CHECK_EQ_INT(V.mb, 42);
	CHECK(!V.ms_given);
	CHECK_EQ_INT(V.level, -1);
	reset();
	CHECK_OK(PARSE("--address", "a", "--wait-ms", "1"));
	CHECK(V.ms_given);
}

TEST(file_then_command_line)
{
	char path[64];

	snprintf(path, sizeof path, "/tmp/docraft-test-config-%d", (int)getpid());
	write_file(path, "# a comment\n"
			 "\n"
			 "  address = 9.9.9.9:9   # trailing comment\n"
			 "--count=4\n"
			 "wait_ms = 77\r\n"
			 "cache-mb=\t8\n"
			 "feature = off\n");
	reset();
	CHECK_OK(PARSE("--config", path));
	CHECK_EQ_STR(V.address, "9.9.9.9:9");
	CHECK_EQ_INT(V.n, 4);
	CHECK_EQ_INT(V.ms, 77);
	CHECK(V.ms_given);
	CHECK_EQ_INT(V.mb, 8);
	CHECK(!V.on);
	/* The command line wins, wherever --config stands. */
	reset();
	CHECK_OK(PARSE("--count", "9", "--feature=on", "--config", path, "--address", "x:1"));
	CHECK_EQ_INT(V.n, 9);
	CHECK(V.on);
	CHECK_EQ_STR(V.address, "x:1");
	CHECK_EQ_INT(V.ms, 77);
	/* A required flag may come from the file alone. */
	write_file(path, "address = only:1\n");
	reset();
	CHECK_OK(PARSE("--config=" "/dev/null", "--config", path));
	CHECK_EQ_STR(V.address, "only:1");
	unlink(path);
}

TEST(errors_name_flag_and_place)
{
	char path[64], want[128];

	reset();
	CHECK_ERR(PARSE("--address", "a", "--count", "0"), "--count: '0' is not a count (1..10)");
	reset();
	CHECK_ERR(PARSE("--address", "a", "--count", "11"), "--count: '11' is not a count (1..10)");
	reset();
	CHECK_ERR(PARSE("--address", "a", "--count", "-1"), "is not a count");
	reset();
	CHECK_ERR(PARSE("--address", "a", "--count", "3x"), "is not a count");
	reset();
	CHECK_ERR(PARSE("--address", "a", "--wait-ms", "0"),
		  "--wait-ms: '0' is not a number of milliseconds (1..3600000)");
	reset();
	CHECK_ERR(PARSE("--address", "a", "--cache-mb", "65"),
		  "--cache-mb: '65' is not a size in MiB (0..64)");
	reset();
	CHECK_ERR(PARSE("--address", "a", "--feature", "maybe"),
		  "--feature takes on or off, not 'maybe'");
	reset();
	CHECK_ERR(PARSE("--address", "a", "--log-level", "loud"),
		  "--log-level: unknown level 'loud'");
	reset();
	CHECK_ERR(PARSE("--address", "a", "--call-a", "bad"), "--call-a: not this");
	reset();
	CHECK_ERR(PARSE("--address", ""), "--address: empty or too long");
	reset();
	CHECK_ERR(PARSE("--address", "0123456789012345678901234567890123456789"),
		  "--address: empty or too long");
	reset();
	CHECK_ERR(PARSE("--address", "a", "--nope", "1"), "unknown option '--nope'");
	reset();
	CHECK_ERR(PARSE("--address", "a", "--count"), "--count needs a value");
	reset();
	CHECK_ERR(PARSE("--count", "2"), "--address is required");
	reset();
	CHECK_ERR(PARSE("stray"), "unexpected argument 'stray'");
	/* From a file: FILE:LINE. */
	snprintf(path, sizeof path, "/tmp/docraft-test-config-%d", (int)getpid());
	write_file(path, "address = a\n# two\ncount = 0\n");
	reset();
	snprintf(want, sizeof want, "%s:3: count: '0' is not a count (1..10)", path);
	CHECK_ERR(PARSE("--config", path), want);
	write_file(path, "nope = 1\n");
	reset();
	snprintf(want, sizeof want, "%s:1: unknown option 'nope'", path);
	CHECK_ERR(PARSE("--config", path), want);
	/* The file is read before the command line is applied: its error
	 * comes first even if the command line would fix the value. */
	write_file(path, "feature = perhaps\n");
	reset();
	snprintf(want, sizeof want, "%s:1: feature takes on or off, not 'perhaps'", path);
	CHECK_ERR(PARSE("--config", path, "--feature", "on", "--address", "a"), want);
	unlink(path);
}

TEST(file_errors)
{
	char path[64], want[128];

	snprintf(path, sizeof path, "/tmp/docraft-test-config-%d", (int)getpid());
	unlink(path);
	reset();
	snprintf(want, sizeof want, "--config %s: No such file or directory", path);
	CHECK_ERR(PARSE("--config", path), want);
	write_file(path, "address = a\njust words\n");
	reset();
	snprintf(want, sizeof want, "%s:2: expected 'name = value'", path);
	CHECK_ERR(PARSE("--config", path), want);
	write_file(path, "config = /etc/other\n");
	reset();
	snprintf(want, sizeof want, "%s:1: 'config' is not allowed in a config file", path);
	CHECK_ERR(PARSE("--config", path), want);
	write_file(path, "help = 1\n");
	reset();
	CHECK_ERR(PARSE("--config", path), "'help' is not allowed in a config file");
	/* A line past the buffer is refused, not cut into two lines. */
	static char big[20000];
	memset(big, 'x', sizeof big - 2);
	memcpy(big, "address = ", 10);
	big[sizeof big - 2] = '\n';
	write_file(path, big);
	reset();
	snprintf(want, sizeof want, "%s:1: line longer than", path);
	CHECK_ERR(PARSE("--config", path), want);
	unlink(path);
}

TEST(help_wins)
{
	reset();
	CHECK_EQ_INT(PARSE("--help"), CONFIG_HELP_SHOWN);
	reset();
	CHECK_EQ_INT(PARSE("--nope", "1", "--count", "0", "--help"), CONFIG_HELP_SHOWN);
	reset();
	CHECK_EQ_INT(PARSE("-h"), CONFIG_HELP_SHOWN);
	reset();
	CHECK_EQ_INT(PARSE("--config", "/no/such/file", "--help"), CONFIG_HELP_SHOWN);
}

TEST(usage_from_the_table)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(f != NULL);
	config_usage(&spec, f);
	fclose(f);
	CHECK_EQ_STR(text, "usage: prog --address IP:PORT [options]\n"
			   "\n"
			   "Does things.\n"
			   "\n"
			   "options:\n"
			   "  --address IP:PORT            where (required)\n"
			   "  --data DIR                   data directory\n"
			   "  --count N                    how many\n"
			   "  --wait-ms MS                 how long\n"
			   "  --cache-mb MB                how big\n"
			   "  --feature on|off             a switch\n"
			   "  --log-level LEVEL            a level\n"
			   "  --call-a X                   parsed elsewhere\n"
			   "  --config FILE                a file\n"
			   "  --help                       this text\n"
			   "\n"
			   "Bye.\n");
	free(text);
}

TEST(split_list)
{
	char s[] = " a:1 , b:2,,c:3 ,";
	char many[] = "1,2,3,4";
	char none[] = " , ,";
	char *list[3];

	CHECK_EQ_INT(config_split_list(s, list, 3), 3);
	CHECK_EQ_STR(list[0], "a:1");
	CHECK_EQ_STR(list[1], "b:2");
	CHECK_EQ_STR(list[2], "c:3");
	CHECK_EQ_INT(config_split_list(many, list, 3), 4); /* more than max */
	CHECK_EQ_STR(list[2], "3");
	CHECK_EQ_INT(config_split_list(none, list, 3), 0);
}

TEST_MAIN(T(argv_forms), T(defaults_and_given), T(file_then_command_line),
	  T(errors_name_flag_and_place), T(file_errors), T(help_wins), T(usage_from_the_table),
	  T(split_list))
