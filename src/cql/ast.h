/* The CQL syntax tree: what cql_parse (parser.h) produces.
 *
 * Plain C structs. Ownership: every node, array and string of a parse lives
 * in the arena of its struct cql_stmts and is released at once by cql_free;
 * nothing points into the parsed text (strings are NUL-terminated copies),
 * so the text may be freed right after cql_parse. Read-only after the parse:
 * may be shared between threads.
 *
 * Literals stay untyped (struct cql_literal): their type depends on the
 * column they meet, which only the schema knows. bind.h converts them to
 * struct pv for a column type. Identifiers are lower-cased unless they were
 * "quoted". Every name, literal and operator keeps its position for errors. */
#ifndef DOCRAFT_CQL_AST_H
#define DOCRAFT_CQL_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "docdb/schema.h"
#include "cql/lexer.h"

/* An identifier with where it was written. */
struct cql_ident {
	const char *name;
	struct cql_pos pos;
};

enum cql_lit_kind {
	CQL_LIT_NULL = 1,
	CQL_LIT_BOOL,
	CQL_LIT_INT,     /* v.i; int_overflow if beyond int64 */
	CQL_LIT_FLOAT,   /* v.f; NaN and Infinity included */
	CQL_LIT_STRING,  /* v.str: decoded bytes */
	CQL_LIT_UUID,    /* v.uuid, RFC 4122 byte order */
	CQL_LIT_BLOB,    /* v.str: decoded bytes */
	CQL_LIT_MAP,     /* v.coll: keys in items, values in vals */
	CQL_LIT_SET,     /* v.coll: items; `{}` is an empty set (binds to maps too) */
	CQL_LIT_LIST,    /* v.coll: items */
	CQL_LIT_IDENT,   /* a bare word where a value belongs (v.ident): the seeds'
			    VALUES (user1, …); bind.h decides what it may mean */
	CQL_LIT_FUNC,    /* v.func: uuid(), now(), currenttimestamp(), … */
	CQL_LIT_MARKER,  /* v.marker: `?` or `:name` */
};

struct cql_literal {
	enum cql_lit_kind kind;
	struct cql_pos pos; /* the whole literal, sign and brackets included */
	const char *src;    /* the literal as written (for messages) */
	union {
		bool b;
		struct {
			int64_t i;
			bool int_overflow; /* the value does not fit int64 */
		};
		double f;
		struct {
			const char *p; /* NUL-terminated (blobs too, for convenience) */
			size_t len;
		} str;
		uint8_t uuid[16];
		struct {
			struct cql_literal *items;
			struct cql_literal *vals; /* maps only */
			size_t n;
		} coll;
		const char *ident;
		struct {
			const char *name; /* lower-cased */
			struct cql_literal *args;
			size_t nargs;
		} func;
		struct {
			int index;        /* 0-based among the statement's markers */
			const char *name; /* :name without the colon; NULL for ? */
		} marker;
	} v;
};

/* A column type as written: a primitive, or a collection of primitives. An
 * unknown type name is not a syntax error (CREATE TABLE then fails in
 * cql_create_schema, pointing at it). */
struct cql_type {
	enum col_type type;       /* 0 when unknown */
	enum col_type elem_type;  /* collections: map key / set member / list element */
	enum col_type value_type; /* maps */
	const char *name;         /* as written, e.g. "map<text, text>", "jsonb" */
	struct cql_pos pos;
	struct cql_ident unknown; /* the unknown name and where (when type == 0
				     or an element type is 0) */
};

struct cql_coldef {
	struct cql_ident name;
	struct cql_type type;
	bool primary_key;         /* `col type PRIMARY KEY` */
	struct cql_pos pk_pos;
};

struct cql_order {
	struct cql_ident col;
	bool desc;
};

/* name = value options of WITH, other than CLUSTERING ORDER BY and
 * default_time_to_live (which have their own fields). */
struct cql_option {
	struct cql_ident name;
	struct cql_literal value;
};

struct cql_create_table {
	bool if_not_exists;
	struct cql_ident keyspace; /* name NULL unless ks.table */
	struct cql_ident table;
	struct cql_coldef *cols;
	size_t ncols;
	/* PRIMARY KEY ((h…), r…) clause; has_pk false if absent. The partition
	 * key of PRIMARY KEY (a, b) is just a. */
	bool has_pk;
	struct cql_pos pk_pos;
	struct cql_ident *hash;
	size_t nhash;
	struct cql_ident *range;
	size_t nrange;
	struct cql_order *clustering; /* WITH CLUSTERING ORDER BY */
	size_t nclustering;
	bool has_default_ttl;
	int64_t default_ttl_s;        /* 0..CQL_MAX_TTL_S */
	struct cql_option *options;
	size_t noptions;
};

struct cql_drop_table {
	bool if_exists;
	struct cql_ident keyspace;
	struct cql_ident table;
};

/* TTLs in seconds, 0..20 years as in Cassandra. */
#define CQL_MAX_TTL_S INT64_C(630720000)

struct cql_insert {
	struct cql_ident keyspace;
	struct cql_ident table;
	struct cql_ident *cols;
	struct cql_literal *values; /* as many as cols */
	size_t ncols;
	bool has_ttl;
	int64_t ttl_s;
	struct cql_pos ttl_pos;
};

enum cql_assign_op {
	CQL_ASSIGN_SET = 1, /* c = v: a value, NULL (delete), or a collection
			       literal (collection replace) */
	CQL_ASSIGN_ADD,     /* c = c + v: map put, set add, list append */
	CQL_ASSIGN_REMOVE,  /* c = c - v: map remove (v: a set of keys), set remove */
	CQL_ASSIGN_PREPEND, /* c = v + c: list prepend */
	CQL_ASSIGN_ELEM,    /* c[k] = v: one map entry */
};

struct cql_assign {
	struct cql_ident col;
	enum cql_assign_op op;
	struct cql_pos op_pos;   /* the '=' (SET, ELEM) or the '+'/'-'/'||' */
	bool concat;             /* ADD spelled `||` (YSQL, in seed 001) */
	struct cql_literal key;  /* ELEM only */
	struct cql_literal value;
};

enum cql_rel {
	CQL_REL_EQ = 1,
	CQL_REL_LT,
	CQL_REL_LE,
	CQL_REL_GT,
	CQL_REL_GE,
	CQL_REL_IN, /* value is a CQL_LIT_LIST */
};

struct cql_cond {
	struct cql_ident col;
	enum cql_rel rel;
	struct cql_pos rel_pos;
	struct cql_literal value;
};

struct cql_update {
	struct cql_ident keyspace;
	struct cql_ident table;
	bool has_ttl;
	int64_t ttl_s;
	struct cql_pos ttl_pos;
	struct cql_assign *assigns;
	size_t nassigns;
	struct cql_cond *where;
	size_t nwhere;
	/* IF col = value [AND ...] (a conditional write: every rel is
	 * CQL_REL_EQ, value may be NULL); none: unconditional. */
	struct cql_cond *ifs;
	size_t nifs;
};

/* DELETE col / DELETE m[k]. */
struct cql_delete_target {
	struct cql_ident col;
	bool has_key;
	struct cql_literal key;
};

struct cql_delete {
	struct cql_delete_target *targets; /* none: the whole row */
	size_t ntargets;
	struct cql_ident keyspace;
	struct cql_ident table;
	struct cql_cond *where;
	size_t nwhere;
};

struct cql_select {
	bool star;
	struct cql_ident *cols; /* when !star */
	size_t ncols;
	struct cql_ident keyspace;
	struct cql_ident table;
	struct cql_cond *where; /* may be empty */
	size_t nwhere;
	struct cql_order *order_by;
	size_t norder_by;
	bool has_limit;
	int64_t limit; /* >= 1 */
	struct cql_pos limit_pos;
	bool allow_filtering;
	bool has_as_of;
	uint64_t as_of; /* a HybridTime (common/hlc.h) */
	struct cql_pos as_of_pos;
};

enum cql_stmt_kind {
	CQL_STMT_CREATE_TABLE = 1,
	CQL_STMT_DROP_TABLE,
	CQL_STMT_INSERT,
	CQL_STMT_UPDATE,
	CQL_STMT_DELETE,
	CQL_STMT_SELECT,
	CQL_STMT_DESCRIBE, /* issue 17: DESCRIBE TABLES / DESCRIBE TABLE t */
};

/* DESCRIBE TABLES (every table) or DESCRIBE TABLE qname. */
struct cql_describe {
	bool tables;
	struct cql_ident keyspace;
	struct cql_ident table; /* DESCRIBE TABLE */
};

struct cql_stmt {
	enum cql_stmt_kind kind;
	struct cql_pos pos; /* from the first token to the last (';' excluded) */
	const char *src;    /* the statement's text, as written */
	int nmarkers;       /* bind markers in the statement */
	union {
		struct cql_create_table create;
		struct cql_drop_table drop;
		struct cql_insert insert;
		struct cql_update update;
		struct cql_delete del;
		struct cql_select select;
		struct cql_describe describe;
	} u;
};

struct cql_stmts {
	struct arena arena; /* owns everything below */
	struct cql_stmt *v;
	size_t n;
};

#endif
