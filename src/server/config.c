/* The flag table's parser. See config.h for the contract.
 *
 * Design. One function applies one value to one flag (apply); the three
 * sources (defaults, the config file, argv) only find the flag and say
 * where the value came from, a prefix every message starts with: "--" on
 * the command line (so "--name: ..."), "FILE:LINE: " in the file,
 * "default of --" for the table's own defaults (a programming error, but
 * reported like the others). argv is read twice: first for --help and
 * --config alone (so that --help wins over any other mistake and the file
 * can be read before the flags that override it), then to apply. */
#include "server/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"

#define NAME_MAX_LEN 64
#define LINE_MAX_LEN 8192
#define WHERE_MAX_LEN 4200

static const struct config_flag *find(const struct config_spec *spec, const char *name)
{
	for (size_t i = 0; i < spec->n_flags; i++)
		if (strcmp(spec->flags[i].name, name) == 0)
			return &spec->flags[i];
	return NULL;
}

static int parse_uint(const struct config_flag *f, const char *v, const char *where,
		      unsigned *out, char *errmsg)
{
	unsigned long max = f->max, x;
	const char *what = f->what;
	char *end;

	if (f->kind == CONFIG_MS) {
		max = max != 0 ? max : CONFIG_MS_MAX;
		what = what != NULL ? what : "a number of milliseconds";
	} else if (f->kind == CONFIG_MB) {
		what = what != NULL ? what : "a size in MiB";
	}
	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno != 0 || *v < '0' || *v > '9' || *end != '\0' || x < f->min || x > max)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s%s: '%s' is not %s (%lu..%lu)", where,
			       f->name, v, what != NULL ? what : "a whole number", f->min, max);
	*out = (unsigned)x;
	return 0;
}

/* Applies value v to flag f; where: the message prefix (design note). */
static int apply(const struct config_flag *f, const char *v, const char *where, char *errmsg)
{
	switch (f->kind) {
	case CONFIG_STRING: {
		size_t n = strlen(v);
		if (n == 0 || n >= f->cap)
			return err_set(errmsg, DOCRAFT_EINVAL, "%s%s: empty or too long", where,
				       f->name);
		memcpy(f->dst, v, n + 1);
		return 0;
	}
	case CONFIG_UINT:
	case CONFIG_MS:
	case CONFIG_MB:
		return parse_uint(f, v, where, f->dst, errmsg);
	case CONFIG_BOOL:
		if (strcmp(v, "on") == 0 || strcmp(v, "true") == 0)
			*(bool *)f->dst = true;
		else if (strcmp(v, "off") == 0 || strcmp(v, "false") == 0)
			*(bool *)f->dst = false;
		else
			return err_set(errmsg, DOCRAFT_EINVAL, "%s%s takes on or off, not '%s'",
				       where, f->name, v);
		return 0;
	case CONFIG_LOG_LEVEL: {
		int level = log_parse_level(v);
		if (level < 0)
			return err_set(errmsg, DOCRAFT_EINVAL, "%s%s: unknown level '%s'", where,
				       f->name, v);
		*(int *)f->dst = level;
		return 0;
	}
	case CONFIG_CALL: {
		char why[DOCRAFT_ERRMSG_SIZE];
		int rv = f->set(f->dst, f->name, v, why);
		if (rv == DOCRAFT_ENOTFOUND)
			return err_set(errmsg, DOCRAFT_EINVAL, "%sunknown option '%s'", where,
				       f->name);
		if (rv != 0)
			return err_set(errmsg, DOCRAFT_EINVAL, "%s%s", where, why);
		return 0;
	}
	case CONFIG_FILE:
	case CONFIG_HELP:
		break;
	}
	return 0;
}

/* The flag named name from where, or an "unknown option" error. */
static const struct config_flag *known(const struct config_spec *spec, const char *name,
				       const char *where, char *errmsg)
{
	const struct config_flag *f = find(spec, name);
	if (f == NULL) {
		if (strcmp(where, "--") == 0)
			err_set(errmsg, DOCRAFT_EINVAL, "unknown option '--%s'", name);
		else
			err_set(errmsg, DOCRAFT_EINVAL, "%sunknown option '%s'", where, name);
	}
	return f;
}

static void mark(const struct config_spec *spec, const struct config_flag *f, bool *given)
{
	given[f - spec->flags] = true;
	if (f->given != NULL)
		*f->given = true;
}

static char *trim(char *s)
{
	char *e;
	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

static int load_file(const struct config_spec *spec, const char *path, bool *given,
		     char *errmsg)
{
	char line[LINE_MAX_LEN], where[WHERE_MAX_LEN];
	unsigned lineno = 0;
	int rv = 0;
	FILE *file = fopen(path, "r");

	if (file == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "--config %s: %s", path, strerror(errno));
	while (rv == 0 && fgets(line, sizeof line, file) != NULL) {
		char *hash = strchr(line, '#'), *s, *eq, *k, *v;
		const struct config_flag *f;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(file)) {
			rv = err_set(errmsg, DOCRAFT_EINVAL, "%s:%u: line longer than %d bytes", path,
				     lineno, LINE_MAX_LEN - 2);
			break;
		}
		if (hash != NULL)
			*hash = '\0';
		s = trim(line);
		if (*s == '\0')
			continue;
		snprintf(where, sizeof where, "%s:%u: ", path, lineno);
		eq = strchr(s, '=');
		if (eq == NULL) {
			rv = err_set(errmsg, DOCRAFT_EINVAL, "%sexpected 'name = value'", where);
			break;
		}
		*eq = '\0';
		k = trim(s);
		v = trim(eq + 1);
		if (strncmp(k, "--", 2) == 0)
			k += 2;
		for (char *p = k; *p != '\0'; p++)
			if (*p == '_')
				*p = '-';
		if ((f = known(spec, k, where, errmsg)) == NULL) {
			rv = DOCRAFT_EINVAL;
		} else if (f->kind == CONFIG_FILE || f->kind == CONFIG_HELP) {
			rv = err_set(errmsg, DOCRAFT_EINVAL, "%s'%s' is not allowed in a config file",
				     where, k);
		} else if ((rv = apply(f, v, where, errmsg)) == 0) {
			mark(spec, f, given);
		}
	}
	fclose(file);
	return rv;
}

/* The flag at argv[*i] (--name value or --name=value): its name in name,
 * its value in *value (NULL for one that takes none), *i past it. */
static int flag_at(const struct config_spec *spec, int argc, char *const *argv, int *i,
		   char name[NAME_MAX_LEN], const char **value, char *errmsg)
{
	const char *a = argv[*i], *eq;
	const struct config_flag *f;

	if (strcmp(a, "-h") == 0) {
		snprintf(name, NAME_MAX_LEN, "help");
		*value = NULL;
		return 0;
	}
	if (strncmp(a, "--", 2) != 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "unexpected argument '%s'", a);
	a += 2;
	eq = strchr(a, '=');
	if ((eq != NULL ? (size_t)(eq - a) : strlen(a)) >= NAME_MAX_LEN)
		return err_set(errmsg, DOCRAFT_EINVAL, "unknown option '%s'", argv[*i]);
	if (eq != NULL) {
		memcpy(name, a, (size_t)(eq - a));
		name[eq - a] = '\0';
		*value = eq + 1;
		return 0;
	}
	snprintf(name, NAME_MAX_LEN, "%s", a);
	f = find(spec, name);
	if (f != NULL && f->arg == NULL) {
		*value = NULL;
		return 0;
	}
	if (*i + 1 >= argc)
		return err_set(errmsg, DOCRAFT_EINVAL, "--%s needs a value", name);
	*value = argv[++*i];
	return 0;
}

int config_parse(const struct config_spec *spec, int argc, char *const *argv, char *errmsg)
{
	bool *given = xcalloc(spec->n_flags + 1, sizeof *given);
	char name[NAME_MAX_LEN];
	const char *value, *file = NULL;
	int rv = 0;

	for (size_t k = 0; rv == 0 && k < spec->n_flags; k++)
		if (spec->flags[k].def != NULL)
			rv = apply(&spec->flags[k], spec->flags[k].def, "default of --", errmsg);
	/* First --help and --config, then the file, then the flags over it. */
	for (int i = 1; rv == 0 && i < argc; i++) {
		const struct config_flag *f;
		if ((rv = flag_at(spec, argc, argv, &i, name, &value, errmsg)) != 0)
			break;
		f = find(spec, name);
		if (f != NULL && f->kind == CONFIG_HELP) {
			free(given);
			return CONFIG_HELP_SHOWN;
		}
		if (f != NULL && f->kind == CONFIG_FILE)
			file = value;
	}
	if (rv == 0 && file != NULL)
		rv = load_file(spec, file, given, errmsg);
	for (int i = 1; rv == 0 && i < argc; i++) {
		const struct config_flag *f;
		if ((rv = flag_at(spec, argc, argv, &i, name, &value, errmsg)) != 0)
			break;
		if ((f = known(spec, name, "--", errmsg)) == NULL)
			rv = DOCRAFT_EINVAL;
		else if (f->kind != CONFIG_FILE && (rv = apply(f, value, "--", errmsg)) == 0)
			mark(spec, f, given);
	}
	for (size_t k = 0; rv == 0 && k < spec->n_flags; k++)
		if (spec->flags[k].required && !given[k] && spec->flags[k].def == NULL)
			rv = err_set(errmsg, DOCRAFT_EINVAL, "--%s is required", spec->flags[k].name);
	free(given);
	return rv;
}

void config_usage(const struct config_spec *spec, FILE *f)
{
	fprintf(f, "usage: %s\n\n", spec->synopsis);
	if (spec->about != NULL)
		fprintf(f, "%s\n\n", spec->about);
	fprintf(f, "options:\n");
	for (size_t i = 0; i < spec->n_flags; i++) {
		const struct config_flag *fl = &spec->flags[i];
		char left[NAME_MAX_LEN * 2];
		snprintf(left, sizeof left, "--%s%s%s", fl->name, fl->arg != NULL ? " " : "",
			 fl->arg != NULL ? fl->arg : "");
		fprintf(f, "  %-28s %s\n", left, fl->help);
	}
	if (spec->footer != NULL)
		fprintf(f, "\n%s", spec->footer);
}

size_t config_split_list(char *s, char **list, size_t max)
{
	char *save = NULL;
	size_t n = 0;

	for (char *p = strtok_r(s, ",", &save); p != NULL; p = strtok_r(NULL, ",", &save)) {
		p = trim(p);
		if (*p == '\0')
			continue;
		if (n < max)
			list[n] = p;
		n++;
	}
	return n;
}
