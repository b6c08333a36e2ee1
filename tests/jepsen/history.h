/* A docraft-jepsen history (format: tests/jepsen/HISTORY.md), parsed,
 * validated and paired.
 *
 * history_parse never trusts its input: every line is checked field by field
 * (numbers without overflow, the fields each f allows, completions matching
 * their invoke, one operation at a time per process, time never going back
 * within a process, no reuse of a process after an `info`), and the first
 * problem is returned as HISTORY_EPARSE with "line N: ..." in errmsg. The
 * one exception is an unterminated, malformed last line (a writer killed
 * mid-line, see struct history): ignored and reported in ignored_line.
 *
 * The result has two views:
 *   events: every line that is not a comment, sorted by time_ns (stable: equal
 *           times keep file order);
 *   ops:    invokes paired with their completion (per process, in file
 *           order), sorted by invoke time (stable). An invoke that has no
 *           completion when the file ends becomes an `info` op (completed
 *           false): it may or may not have taken effect. */
#ifndef DOCRAFT_JEPSEN_HISTORY_H
#define DOCRAFT_JEPSEN_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HISTORY_ERRMSG_SIZE 256

/* Return codes (0 is success). */
enum {
	HISTORY_EIO = 1, /* the file could not be read */
	HISTORY_EPARSE,  /* malformed input; errmsg names the line */
	HISTORY_ENOMEM,
};

enum history_type { HISTORY_INVOKE, HISTORY_OK, HISTORY_FAIL, HISTORY_INFO };

enum history_f {
	HISTORY_READ,
	HISTORY_WRITE,
	HISTORY_CAS,
	HISTORY_DELETE,
	HISTORY_ADD,
	HISTORY_READ_SET,
	HISTORY_F_COUNT
};

/* One value field: `-` (NONE), `nil` (NIL) or an integer (INT). */
enum history_val_kind { HISTORY_VAL_NONE, HISTORY_VAL_NIL, HISTORY_VAL_INT };
struct history_val {
	enum history_val_kind kind;
	int64_t v; /* when kind == HISTORY_VAL_INT */
};

struct history_event {
	uint64_t time_ns;
	int64_t process;
	enum history_type type;
	enum history_f f;
	bool has_key; /* register ops: the key; set ops: `-` */
	int64_t key;
	struct history_val value, value2;
	/* read-set ok: the elements, sorted ascending (duplicates kept: the
	 * set checker reports them); owned by the event. */
	int64_t *elems;
	size_t nelems;
	size_t line; /* 1-based line number in the file */
};

struct history_op {
	int64_t process;
	enum history_f f;
	bool has_key;
	int64_t key;
	/* The completion: HISTORY_OK, HISTORY_FAIL or HISTORY_INFO. */
	enum history_type type;
	bool completed; /* false: no completion in the file (type is INFO) */
	uint64_t invoke_ns;
	uint64_t complete_ns; /* when completed */
	/* The invoke's values; for an ok read, value is what it returned
	 * (NIL or INT). */
	struct history_val value, value2;
	const int64_t *elems; /* read-set ok: points into the completion event */
	size_t nelems;
	size_t invoke_line, complete_line; /* complete_line 0 when !completed */
};

struct history {
	struct history_event *events; /* sorted by time_ns, stable */
	size_t nevents;
	struct history_op *ops; /* sorted by invoke_ns, stable */
	size_t nops;
	/* A writer killed mid-line leaves an unterminated last line: when it
	 * does not parse it is ignored (not an error), and said here. A last
	 * line without '\n' that parses is kept. */
	size_t ignored_line; /* 0: none */
	char ignored_why[HISTORY_ERRMSG_SIZE];
	bool has_end; /* a "# end ..." comment: the workload finished */
};

/* Parses text (len bytes, need not be NUL-terminated) into h. On error h is
 * left empty (nothing to free) and errmsg (HISTORY_ERRMSG_SIZE bytes, may be
 * NULL) says what and where. */
int history_parse(const char *text, size_t len, struct history *h, char *errmsg);

/* Reads the file at path and parses it; HISTORY_EIO if it cannot be read.
 * Parse errors are prefixed with the path. */
int history_load(const char *path, struct history *h, char *errmsg);

void history_free(struct history *h);

/* "read", "write", "cas", "delete", "add", "read-set". */
const char *history_f_name(enum history_f f);
/* "invoke", "ok", "fail", "info". */
const char *history_type_name(enum history_type t);
/* Formats a value as "nil", "-" or the integer into buf (>= 24 bytes). */
const char *history_val_str(struct history_val v, char *buf, size_t size);

#endif
