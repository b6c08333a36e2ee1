/* docraft error codes shared by the client library and the servers.
 *
 * Every docraft function that can fail returns an int: DOCRAFT_OK (0) on
 * success or one of the positive codes below. Long-lived objects also keep an
 * errmsg buffer with a human-readable reason for the last failure.
 *
 * The values are also the status codes of the RPC wire protocol (enum
 * Status in proto/rpc.proto): never renumber them, only append. */
#ifndef DOCRAFT_ERROR_H
#define DOCRAFT_ERROR_H

#if defined(__GNUC__) && __GNUC__ >= 4
#define DOCRAFT_API __attribute__((visibility("default")))
#else
#define DOCRAFT_API
#endif

enum docraft_error {
	DOCRAFT_OK = 0,
	DOCRAFT_EINVAL,      /* bad argument: wrong type, unknown column, ... */
	DOCRAFT_ENOTFOUND,   /* no such row / table / key */
	DOCRAFT_ECORRUPT,    /* stored or received bytes do not decode */
	DOCRAFT_EIO,         /* the storage engine failed (RocksDB, fs) */
	DOCRAFT_ENOSPC,      /* disk full */
	DOCRAFT_ENOMEM,      /* allocation failed */
	DOCRAFT_ETOOOLD,     /* read time below the history cutoff */
	DOCRAFT_ECLOCKSKEW,  /* remote hybrid time too far ahead */
	DOCRAFT_ETOOBIG,     /* value or frame larger than allowed */
	DOCRAFT_ECLOSED,     /* object is closed or shutting down */
	DOCRAFT_ENOTLEADER,  /* not the leader: retry at the leader (hint given) */
	DOCRAFT_ELEADERLOST, /* leadership lost mid-request: outcome unknown, the
				request may still commit; retry with the same id */
	DOCRAFT_EUNAVAILABLE,/* no leader / replica failed: retry later */
	DOCRAFT_EBUSY,       /* overloaded: back off and retry */
	DOCRAFT_ETIMEDOUT,   /* deadline passed: outcome unknown */
	DOCRAFT_ETABLETNOTFOUND, /* tablet not hosted by this server: refresh
				    its locations from the master and retry */
	DOCRAFT_ETABLENOTFOUND,  /* no such table (not retryable) */
	DOCRAFT_ECONDITION,  /* a conditional write's condition was false where
				the tablet applied it: nothing of it applied */
	DOCRAFT_EWRONGTABLET, /* a key outside the tablet's hash partition: the
				 caller's locations are stale; refresh them
				 and retry on the right tablet */
	DOCRAFT_ERROR_MAX
};

/* Static, never NULL; "unknown error" for codes out of range. */
DOCRAFT_API const char *docraft_strerror(int code);

/* Size of every errmsg buffer in the project. */
#define DOCRAFT_ERRMSG_SIZE 256

#endif
