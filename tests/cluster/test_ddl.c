/* DDL through the docraft CLI on a real cluster (one docraft-master on
 * 127.0.0.1, three docraft-tservers on 127.0.0.1-3), as a new user would:
 *
 *   create_96_tablets   CREATE TABLE of 96 tablets RF 3 succeeds on the first
 *                       try. The master answers only once every replica was
 *                       asked to create itself, which takes longer than the
 *                       CLI's attempt timeout (2 s here: --timeout 60000 keeps
 *                       retrying): the CLI retries with the same request id
 *                       and gets the first result, never "table already
 *                       exists" for the table it just created. The table then
 *                       takes writes and reads; DROP TABLE works once, a
 *                       second DROP is "not found".
 *   not_enough_tservers CREATE TABLE with RF 5 on three tservers: the master
 *                       answers UNAVAILABLE, the CLI retries until its
 *                       deadline and then prints why ("not enough live
 *                       tservers: 3 live, replication factor 5").
 *
 * MASTER, TSERVER and DOCRAFT name the executables (meson sets them); logs
 * are in <tmp>/<name>.log, their tails shown when a case fails. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "docraft/docraft.h"
#include "proc.h"
#include "test.h"

#include "cluster.h"

TEST(create_96_tablets)
{
	struct tablet t[128];
	int rv, n;

	cluster_up("ddl-96");
	rv = CLI(120000, "--timeout", "60000", "--tablets", "96", "--rf", "3", "-e",
		 "CREATE TABLE t96 (k text, v int, PRIMARY KEY (k));");
	CHECK_MSG(rv == 0 && strstr(cluster_cli_errors(), "exists") == NULL, "CREATE TABLE exited %d:\n%s",
		  rv, cluster_cli_errors());
	n = tablets_of("t96", t, 128);
	CHECK_MSG(n == 96, "t96 has %d tablets:\n%s", n, C.out);
	rv = CLI(60000, "--timeout", "30000", "-e",
		 "INSERT INTO t96 (k, v) VALUES ('a', 1);\n"
		 "SELECT * FROM t96 WHERE k = 'a';");
	CHECK_MSG(rv == 0 && strstr(C.out, "(1 rows)") != NULL, "write/read exited %d:\n%s", rv,
		  C.out);
	rv = CLI(60000, "--timeout", "30000", "-e", "DROP TABLE t96;");
	CHECK_MSG(rv == 0, "DROP TABLE exited %d:\n%s", rv, C.out);
	rv = CLI(60000, "--timeout", "30000", "-e", "DROP TABLE t96;");
	CHECK_MSG(rv != 0 && strstr(cluster_cli_errors(), "not found") != NULL,
		  "second DROP exited %d:\n%s", rv, cluster_cli_errors());
	cluster_down();
}

TEST(not_enough_tservers)
{
	int rv;

	cluster_up("ddl-rf5");
	rv = CLI(30000, "--timeout", "3000", "--tablets", "2", "--rf", "5", "-e",
		 "CREATE TABLE t5 (k text, v int, PRIMARY KEY (k));");
	CHECK_MSG(rv != 0 && strstr(cluster_cli_errors(), "not enough live tservers: 3 live, "
						  "replication factor 5") != NULL,
		  "CREATE TABLE RF 5 exited %d:\n%s", rv, cluster_cli_errors());
	test_note("the CLI said: %s", cluster_cli_errors());
	cluster_down();
}

TEST_MAIN(T(create_96_tablets), T(not_enough_tservers))
