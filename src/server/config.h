/* A server's flags, declared once in a table: parsing of the command line
 * and of a --config file, and the usage text, for docraft-tserver and
 * docraft-master alike.
 *
 * A program describes each flag by one struct config_flag (name, kind,
 * where its value goes, default, help line) and calls config_parse. The
 * forms accepted:
 *
 *   command line   --name value   or   --name=value   (-h is --help)
 *   config file    name = value   one a line; '#' starts a comment, blank
 *                                 lines are skipped; a leading "--" and '_'
 *                                 for '-' are accepted in names
 *
 * Order: every default first, then the file named by the CONFIG_FILE flag,
 * then the command line, so that flags given on the command line win over
 * the file. A flag given twice keeps its last value.
 *
 * Errors name the flag and where its value came from: "--name: ..." for
 * the command line, "FILE:LINE: name: ..." for the file. Nothing here
 * prints or exits: the caller (server/skeleton.h) does, so the parser can
 * be tested alone. Pure: no loop, no global state; any thread, one parse at
 * a time per table (the table points at where values go). */
#ifndef DOCRAFT_SERVER_CONFIG_H
#define DOCRAFT_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum config_kind {
	/* char[cap] at dst: a non-empty string shorter than cap. */
	CONFIG_STRING,
	/* unsigned at dst, in min..max, a usage error naming `what` ("a
	 * count") otherwise. */
	CONFIG_UINT,
	/* CONFIG_UINT of milliseconds: what defaults to "a number of
	 * milliseconds", max (when 0) to CONFIG_MS_MAX. */
	CONFIG_MS,
	/* CONFIG_UINT of MiB: what defaults to "a size in MiB". */
	CONFIG_MB,
	/* bool at dst: on|off (true|false accepted too). */
	CONFIG_BOOL,
	/* int at dst: a log level of common/log.h (error, warn, info, debug,
	 * trace or 0-4). */
	CONFIG_LOG_LEVEL,
	/* set(dst, name, value, errmsg) decides: 0, DOCRAFT_EINVAL with
	 * errmsg (which should name the flag), or DOCRAFT_ENOTFOUND (treated
	 * as an unknown flag). For families of flags parsed elsewhere
	 * (rpc_server_options_set). */
	CONFIG_CALL,
	/* --config FILE: the file to read; not allowed inside a file. */
	CONFIG_FILE,
	/* --help (and -h): config_parse returns CONFIG_HELP_SHOWN at once. */
	CONFIG_HELP,
};

#define CONFIG_MS_MAX 3600000u /* one hour */

/* config_parse's answer to --help. */
#define CONFIG_HELP_SHOWN (-1) /* apart from every DOCRAFT_E* code */

/* One flag. The table is the program's: config_parse only reads it and
 * writes through dst (and given). */
struct config_flag {
	const char *name;   /* without "--" */
	const char *arg;    /* what its value is, for the usage ("MS"); NULL: takes none */
	enum config_kind kind;
	void *dst;          /* where the value goes (the kind says its type) */
	size_t cap;         /* CONFIG_STRING: size of the buffer at dst */
	unsigned long min, max; /* CONFIG_UINT/MS/MB: the accepted range */
	const char *what;   /* CONFIG_UINT/MS/MB: what the number is, for errors */
	/* Parsed like a given value before anything else; NULL: dst keeps
	 * what the caller put there. */
	const char *def;
	bool required;      /* "--name is required" when never given (nor defaulted) */
	bool *given;        /* if not NULL: set true when a file or argv gives it */
	int (*set)(void *dst, const char *name, const char *value, char *errmsg); /* CONFIG_CALL */
	const char *help;   /* one line of the usage */
};

/* What config_usage prints around the flags:
 *
 *   usage: <synopsis>
 *
 *   <about>            (if not NULL)
 *
 *   options:
 *     --name ARG       help
 *     ...
 *
 *   <footer>           (if not NULL)                                      */
struct config_spec {
	const char *synopsis;
	const char *about;
	const char *footer;
	const struct config_flag *flags;
	size_t n_flags;
};

/* Applies the defaults, the config file and argv[1..argc) to the table's
 * destinations (order above). Returns 0; CONFIG_HELP_SHOWN when --help (or
 * -h) is among the arguments (nothing but defaults applied); or
 * DOCRAFT_EINVAL with errmsg (DOCRAFT_ERRMSG_SIZE) saying which flag, from
 * where, and why: an argument that is not a flag, a flag without its
 * value, an unknown flag, a value out of range, a config file that cannot
 * be read or has a line without '=', a required flag missing. Values set
 * before an error stay set. Blocking (reads the file): start-up only. */
int config_parse(const struct config_spec *spec, int argc, char *const *argv, char *errmsg);

/* Prints the usage (layout above) to f: one line per flag, in table order,
 * "--name ARG" in a column of 28 then the help. */
void config_usage(const struct config_spec *spec, FILE *f);

/* Splits the comma-separated list s in place into list[] (blanks around
 * items trimmed, empty items skipped). Returns the number of items, or
 * more than max if there are more (list[] then holds the first max). */
size_t config_split_list(char *s, char **list, size_t max);

#endif
