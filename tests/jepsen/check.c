/* docraft-jepsen-check HISTORY [--json OUT] [--max-steps N] [--time-limit-ms N]
 *
 * Checks a docraft-jepsen history (HISTORY.md): the register ops for
 * linearizability (linearizable.h), the set ops with the set checker
 * (setcheck.h); either may be absent. Prints a summary and, last, one of
 *   verdict: valid      exit 0
 *   verdict: INVALID    exit 1
 *   verdict: unknown    exit 3 (a search budget ran out, or nothing to check)
 * and exits 2 when the history cannot be read or parsed (or on bad usage, or
 * when the JSON cannot be written).
 * --json OUT writes the same as one JSON object ("-": stdout).
 * --max-steps: the search budget per key (default 100 million);
 * --time-limit-ms: for the whole linearizability check (default: 60 s per
 * key, no total). Keys over budget are unknown, never valid. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "linearizable.h"
#include "setcheck.h"

enum { EXIT_VALID = 0, EXIT_INVALID = 1, EXIT_UNREADABLE = 2, EXIT_UNKNOWN = 3 };

/* Keys listed one by one in the summary when there are at most this many;
 * otherwise only the keys that are not valid, at most LIST_BAD_KEYS of them
 * (the JSON has every key). */
#define LIST_KEYS 16
#define LIST_BAD_KEYS 20

struct counts {
	size_t n[HISTORY_F_COUNT][4]; /* [f][type]: ok, fail, info (invoke unused) */
};

static void usage(void)
{
	fprintf(stderr, "usage: docraft-jepsen-check HISTORY [--json OUT] [--max-steps N] [--time-limit-ms N]\n");
}

static bool parse_num(const char *s, uint64_t *out)
{
	char *end;
	if (s == NULL || *s < '0' || *s > '9')
		return false;
	*out = strtoull(s, &end, 10);
	return *end == '\0';
}

static void json_str(FILE *fp, const char *s)
{
	if (s == NULL) {
		fputs("null", fp);
		return;
	}
	fputc('"', fp);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(fp, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", fp);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(fp, "\\u%04x", c);
		else
			fputc(c, fp);
	}
	fputc('"', fp);
}

static void json_list(FILE *fp, const char *name, const struct setcheck_list *l)
{
	fprintf(fp, "\"%s\":{\"count\":%zu,\"examples\":[", name, l->count);
	for (size_t i = 0; i < l->nexamples; i++)
		fprintf(fp, "%s%" PRId64, i ? "," : "", l->examples[i]);
	fputs("]}", fp);
}

static void print_list(const char *name, const struct setcheck_list *l)
{
	if (l->count == 0)
		return;
	printf("  %s (%zu):", name, l->count);
	for (size_t i = 0; i < l->nexamples; i++)
		printf(" %" PRId64, l->examples[i]);
	printf("%s\n", l->count > l->nexamples ? " ..." : "");
}

static const char *set_verdict(const struct setcheck_result *s)
{
	return s->valid ? "valid" : "INVALID";
}

static int write_json(const char *out, const char *path, const struct history *h, const struct counts *c,
		      bool has_reg, const struct lin_result *lin, const struct setcheck_result *set,
		      const char *verdict, const char *note)
{
	FILE *fp = strcmp(out, "-") == 0 ? stdout : fopen(out, "w");
	if (fp == NULL) {
		perror(out);
		return -1;
	}
	fputs("{\"history\":", fp);
	json_str(fp, path);
	if (h == NULL) {
		fputs(",\"verdict\":\"unreadable\",\"error\":", fp);
		json_str(fp, note);
		fputs("}\n", fp);
	} else {
		fprintf(fp, ",\"ops\":%zu,\"events\":%zu,\"finished\":%s,\"ignored_line\":%zu,\"counts\":{",
			h->nops, h->nevents, h->has_end ? "true" : "false", h->ignored_line);
		bool first = true;
		for (int f = 0; f < HISTORY_F_COUNT; f++) {
			const size_t *n = c->n[f];
			if (n[HISTORY_OK] + n[HISTORY_FAIL] + n[HISTORY_INFO] == 0)
				continue;
			fprintf(fp, "%s\"%s\":{\"ok\":%zu,\"fail\":%zu,\"info\":%zu}", first ? "" : ",",
				history_f_name((enum history_f)f), n[HISTORY_OK], n[HISTORY_FAIL], n[HISTORY_INFO]);
			first = false;
		}
		fputs("},\"registers\":", fp);
		if (!has_reg) {
			fputs("null", fp);
		} else {
			fprintf(fp, "{\"verdict\":\"%s\",\"keys_checked\":%zu,\"ops_checked\":%zu,\"invalid_keys\":%zu,"
				"\"unknown_keys\":%zu,\"keys\":[",
				lin_verdict_name(lin->verdict), lin->nkeys, lin->nops, lin->ninvalid, lin->nunknown);
			for (size_t i = 0; i < lin->nkeys; i++) {
				const struct lin_key_result *k = &lin->keys[i];
				fprintf(fp, "%s{\"key\":%" PRId64 ",\"verdict\":\"%s\",\"ops\":%zu,\"info\":%zu,"
					"\"info_pruned\":%zu,\"steps\":%" PRIu64 ",\"dominated\":%" PRIu64 ",\"memo_entries\":%zu,"
					"\"ms\":%.3f,"
					"\"explanation\":",
					i ? "," : "", k->key, lin_verdict_name(k->verdict), k->nops, k->ninfo, k->npruned,
					k->steps, k->dominated, k->cache_entries, k->ms);
				json_str(fp, k->explanation);
				fputc('}', fp);
			}
			fputs("]}", fp);
		}
		fputs(",\"set\":", fp);
		if (!set->present) {
			fputs("null", fp);
		} else {
			fprintf(fp, "{\"verdict\":\"%s\",\"adds\":%zu,\"adds_ok\":%zu,\"adds_fail\":%zu,\"adds_info\":%zu,"
				"\"reads\":%zu,\"reads_ok\":%zu,\"final_read\":%s,\"final_line\":%zu,\"final_size\":%zu,"
				"\"not_required\":%zu,",
				set_verdict(set), set->adds, set->adds_ok, set->adds_fail, set->adds_info, set->reads,
				set->reads_ok, set->has_final_read ? "true" : "false", set->final_line, set->final_size,
				set->not_required);
			json_list(fp, "lost", &set->lost);
			fputc(',', fp);
			json_list(fp, "unexpected", &set->unexpected);
			fputc(',', fp);
			json_list(fp, "failed_present", &set->failed_present);
			fputc(',', fp);
			json_list(fp, "duplicated", &set->duplicated);
			fputc('}', fp);
		}
		fprintf(fp, ",\"verdict\":\"%s\",\"note\":", verdict);
		json_str(fp, note);
		fputs("}\n", fp);
	}
	int bad = ferror(fp);
	if (fp != stdout)
		bad |= fclose(fp) != 0;
	else
		fflush(fp);
	if (bad) {
		fprintf(stderr, "%s: write error\n", out);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *json = NULL;
	struct lin_options opt = {0};
	char errmsg[HISTORY_ERRMSG_SIZE];
	struct history h;
	struct lin_result lin;
	struct setcheck_result set;
	struct counts c;
	int rv;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
			json = argv[++i];
		} else if (strcmp(argv[i], "--max-steps") == 0 && i + 1 < argc) {
			if (!parse_num(argv[++i], &opt.max_steps)) {
				usage();
				return EXIT_UNREADABLE;
			}
		} else if (strcmp(argv[i], "--time-limit-ms") == 0 && i + 1 < argc) {
			if (!parse_num(argv[++i], &opt.total_time_limit_ms)) {
				usage();
				return EXIT_UNREADABLE;
			}
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage();
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			usage();
			return EXIT_UNREADABLE;
		} else if (path == NULL) {
			path = argv[i];
		} else {
			usage();
			return EXIT_UNREADABLE;
		}
	}
	if (path == NULL) {
		usage();
		return EXIT_UNREADABLE;
	}

	rv = history_load(path, &h, errmsg);
	if (rv != 0) {
		fprintf(stderr, "docraft-jepsen-check: %s\n", errmsg);
		printf("verdict: unreadable\n");
		if (json != NULL)
			write_json(json, path, NULL, NULL, false, NULL, NULL, NULL, errmsg);
		return EXIT_UNREADABLE;
	}

	memset(&c, 0, sizeof c);
	bool has_reg = false;
	for (size_t i = 0; i < h.nops; i++) {
		c.n[h.ops[i].f][h.ops[i].type]++;
		has_reg |= h.ops[i].f <= HISTORY_DELETE;
	}
	if ((rv = lin_check(&h, &opt, &lin, errmsg)) != 0 || (rv = setcheck_check(&h, &set, errmsg)) != 0) {
		fprintf(stderr, "docraft-jepsen-check: %s\n", errmsg);
		if (rv == 0)
			lin_result_free(&lin);
		history_free(&h);
		return EXIT_UNREADABLE;
	}

	printf("history: %s\n", path);
	printf("ops: %zu (%zu events)\n", h.nops, h.nevents);
	if (h.ignored_line != 0)
		printf("note: the unterminated last line %zu does not parse and is ignored (%s)\n", h.ignored_line,
		       h.ignored_why);
	if (!h.has_end)
		printf("note: no '# end' line: the workload did not finish (open invokes count as info)\n");
	if (h.nops > 0)
		printf("  %-9s %8s %8s %8s\n", "f", "ok", "fail", "info");
	for (int f = 0; f < HISTORY_F_COUNT; f++) {
		const size_t *n = c.n[f];
		if (n[HISTORY_OK] + n[HISTORY_FAIL] + n[HISTORY_INFO] > 0)
			printf("  %-9s %8zu %8zu %8zu\n", history_f_name((enum history_f)f), n[HISTORY_OK],
			       n[HISTORY_FAIL], n[HISTORY_INFO]);
	}

	if (has_reg) {
		size_t ninfo = 0, npruned = 0;
		double ms = 0;
		for (size_t i = 0; i < lin.nkeys; i++) {
			ninfo += lin.keys[i].ninfo;
			npruned += lin.keys[i].npruned;
			ms += lin.keys[i].ms;
		}
		printf("registers: %zu key%s, %zu ops checked (%zu info; %zu unobservable info dropped), %.1f ms: %s\n",
		       lin.nkeys, lin.nkeys == 1 ? "" : "s", lin.nops, ninfo, npruned, ms, lin_verdict_name(lin.verdict));
		if (lin.ninvalid + lin.nunknown > 0)
			printf("  %zu key%s INVALID, %zu unknown\n", lin.ninvalid, lin.ninvalid == 1 ? "" : "s",
			       lin.nunknown);
		size_t listed = 0;
		for (size_t i = 0; i < lin.nkeys; i++) {
			const struct lin_key_result *k = &lin.keys[i];
			if (lin.nkeys > LIST_KEYS && k->verdict == LIN_VALID)
				continue;
			if (k->verdict != LIN_VALID && listed++ == LIST_BAD_KEYS) {
				printf("  ... (the other keys that are not valid: see --json)\n");
				break;
			}
			printf("  key %" PRId64 ": %s, %zu ops, %" PRIu64 " steps, %.1f ms\n", k->key,
			       lin_verdict_name(k->verdict), k->nops, k->steps, k->ms);
			if (k->explanation != NULL)
				printf("    %s\n", k->explanation);
		}
	} else {
		printf("registers: no register ops\n");
	}

	if (set.present) {
		printf("set: %zu adds (ok %zu, fail %zu, info %zu), %zu read-sets (%zu ok): %s\n", set.adds, set.adds_ok,
		       set.adds_fail, set.adds_info, set.reads, set.reads_ok, set_verdict(&set));
		if (set.has_final_read)
			printf("  final read (line %zu): %zu elements; lost %zu, unexpected %zu (of which failed adds %zu), "
			       "duplicated %zu; ok adds concurrent with or after it: %zu\n",
			       set.final_line, set.final_size, set.lost.count, set.unexpected.count,
			       set.failed_present.count, set.duplicated.count, set.not_required);
		else
			printf("  no final read (no read-set completed ok)\n");
		print_list("lost", &set.lost);
		print_list("unexpected", &set.unexpected);
		print_list("failed adds present", &set.failed_present);
		print_list("duplicated", &set.duplicated);
	} else {
		printf("set: no set ops\n");
	}

	const char *verdict, *note = NULL;
	int code;
	if ((has_reg && lin.verdict == LIN_INVALID) || (set.present && !set.valid)) {
		verdict = "INVALID";
		code = EXIT_INVALID;
	} else if (has_reg && lin.verdict == LIN_UNKNOWN) {
		verdict = "unknown";
		code = EXIT_UNKNOWN;
	} else if (!has_reg && !set.present) {
		verdict = "unknown";
		note = "no operations to check";
		code = EXIT_UNKNOWN;
		printf("nothing to check: the history has no operations\n");
	} else {
		verdict = "valid";
		code = EXIT_VALID;
	}
	if (json != NULL && write_json(json, path, &h, &c, has_reg, &lin, &set, verdict, note) != 0)
		code = EXIT_UNREADABLE;
	printf("verdict: %s\n", verdict);
	lin_result_free(&lin);
	history_free(&h);
	return code;
}
