/* Checks of a CreateTabletRequest (tablet id, raft id and peers,
 * partition, table id, schema), shared by the tablet manager's create and
 * its reopen of a replica's meta.pb (manager.h). Pure: any thread.
 * Errors: DOCRAFT_EINVAL with errmsg naming the tablet (errmsg may be
 * NULL). */
#ifndef DOCRAFT_TSERVER_CREATE_CHECK_H
#define DOCRAFT_TSERVER_CREATE_CHECK_H

#include "docdb/schema.h"
#include "docraft.pb-c.h"

/* A tablet id is 1..LISTENER_TABLET_ID_MAX letters, digits, '_', '-' or
 * '.', not starting with '.' (it names a directory). */
int create_check_id(const char *id, char *errmsg);

/* Checks req (see manager_create) and builds its schema into *s, which the
 * caller owns on success (schema_free) and which is freed here on error.
 * self: this server's address, checked against the peer list of a
 * bootstrapping replica (NULL: not checked). */
int create_check_request(const Docraft__CreateTabletRequest *req, const char *self,
			 struct schema *s, char *errmsg);

#endif
