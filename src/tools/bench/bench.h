/* docraft bench: YCSB-style closed-loop benchmark of docraft, etcd or Redis,
 * the `docraft bench` subcommand of the docraft CLI (src/tools/docraft.c).
 * Usage and output: bench.c's top comment and `docraft bench --help`. */
#ifndef DOCRAFT_TOOLS_BENCH_BENCH_H
#define DOCRAFT_TOOLS_BENCH_BENCH_H

#include "docraft/docraft.h"

/* Runs `docraft bench`: argv[0] is "bench", the rest its options. masters
 * and options are the CLI's global --masters / --timeout / --tablets / --rf
 * (bench's own --masters, --tablets and --rf override them). Prints progress
 * to stderr and the summary to stdout. Returns the exit status: 0 when the
 * run completed some operations and none failed, 1 otherwise, 2 for a
 * usage error. */
int bench_main(int argc, char **argv, const char *masters, const docraft_client_options *options);

#endif
