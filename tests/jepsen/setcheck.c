#include "setcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct add {
	int64_t elem;
	bool required;  /* ok, completed before the final read was invoked */
	bool attempted; /* ok or info */
	bool failed;
};

static int cmp_add(const void *a, const void *b)
{
	const struct add *x = a, *y = b;
	return (x->elem > y->elem) - (x->elem < y->elem);
}

static void note(struct setcheck_list *l, int64_t e)
{
	if (l->nexamples < SETCHECK_EXAMPLES)
		l->examples[l->nexamples++] = e;
	l->count++;
}

int setcheck_check(const struct history *h, struct setcheck_result *res, char *errmsg)
{
	const struct history_op *fin = NULL;
	struct add *adds;
	size_t n = 0;
	memset(res, 0, sizeof *res);
	for (size_t i = 0; i < h->nops; i++) {
		const struct history_op *o = &h->ops[i];
		if (o->f == HISTORY_ADD) {
			res->adds++;
			res->adds_ok += o->type == HISTORY_OK;
			res->adds_fail += o->type == HISTORY_FAIL;
			res->adds_info += o->type == HISTORY_INFO;
		} else if (o->f == HISTORY_READ_SET) {
			res->reads++;
			if (o->type != HISTORY_OK)
				continue;
			res->reads_ok++;
			if (fin == NULL || o->complete_ns > fin->complete_ns ||
			    (o->complete_ns == fin->complete_ns && o->complete_line > fin->complete_line))
				fin = o;
		}
	}
	res->present = res->adds + res->reads > 0;
	if (!res->present) {
		res->valid = true;
		return 0;
	}
	adds = malloc((res->adds + 1) * sizeof *adds);
	if (adds == NULL) {
		if (errmsg != NULL)
			snprintf(errmsg, HISTORY_ERRMSG_SIZE, "set check: out of memory");
		return HISTORY_ENOMEM;
	}
	for (size_t i = 0; i < h->nops; i++) {
		const struct history_op *o = &h->ops[i];
		if (o->f != HISTORY_ADD)
			continue;
		adds[n].elem = o->value.v;
		adds[n].attempted = o->type != HISTORY_FAIL;
		adds[n].failed = o->type == HISTORY_FAIL;
		adds[n].required = false;
		if (o->type == HISTORY_OK) {
			if (fin != NULL && o->complete_ns >= fin->invoke_ns)
				res->not_required++;
			else
				adds[n].required = true;
		}
		n++;
	}
	qsort(adds, n, sizeof *adds, cmp_add);
	/* Merge the adds of one element. */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m > 0 && adds[m - 1].elem == adds[i].elem) {
			adds[m - 1].required |= adds[i].required;
			adds[m - 1].attempted |= adds[i].attempted;
			adds[m - 1].failed |= adds[i].failed;
		} else {
			adds[m++] = adds[i];
		}
	}
	if (fin != NULL) {
		res->has_final_read = true;
		res->final_line = fin->complete_line;
		const int64_t *el = fin->elems;
		size_t ne = fin->nelems, i = 0, j = 0;
		while (i < m || j < ne) {
			if (j < ne && j > 0 && el[j] == el[j - 1]) {
				if (j < 2 || el[j - 2] != el[j])
					note(&res->duplicated, el[j]);
				j++;
				continue;
			}
			if (j == ne || (i < m && adds[i].elem < el[j])) {
				if (adds[i].required)
					note(&res->lost, adds[i].elem);
				i++;
			} else if (i == m || el[j] < adds[i].elem) {
				note(&res->unexpected, el[j]);
				res->final_size++;
				j++;
			} else {
				if (!adds[i].attempted) {
					note(&res->unexpected, el[j]);
					note(&res->failed_present, el[j]);
				}
				res->final_size++;
				i++;
				j++;
			}
		}
	}
	free(adds);
	res->valid = res->has_final_read && res->lost.count == 0 && res->unexpected.count == 0 &&
		     res->duplicated.count == 0;
	return 0;
}
