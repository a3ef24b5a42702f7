/* cli.h -- the subcommands of the `ingot` tool; each lives in cmd_<name>.c and returns the exit code. */
#ifndef INGOT_CLI_H
#define INGOT_CLI_H

#include "ingot.h"

int ig__cmd_inspect(int argc, char **argv);
int ig__cmd_run(int argc, char **argv);
int ig__cmd_plan(int argc, char **argv);
int ig__cmd_bench(int argc, char **argv);

/* Shared helpers of the subcommands */
/* Parse a positive integer option value; prints an error and returns false on garbage. */
int ig__cli_parse_i64(const char *opt, const char *s, int64_t min, int64_t *out);
/* "[batch,3,224,224]" for a tensor info */
void ig__cli_format_shape(const ingot_tensor_info *t, char *buf, size_t n);
/* Load a model (printing the library's message on failure) and bind --batch when batch > 0. */
ingot_model *ig__cli_load_model(ingot_runtime *rt, const char *path, int64_t batch);

/* The optimizer flags every engine-building subcommand takes: --no-optimize, --disable-pass NAME[,NAME]
 * (repeatable; the names accumulate). */
typedef struct ig_cli_opt {
    int optimize;
    char disable[1024];
} ig_cli_opt;
#define IG_CLI_OPT_USAGE                                                       \
    "  --no-optimize      build the graph as imported (no optimizer passes)\n" \
    "  --disable-pass P   skip optimizer pass(es) P (comma-separated, repeatable; docs/OPTIMIZER.md)\n"
void ig__cli_opt_init(ig_cli_opt *o);
/* 1 when argv[*i] is one of the flags (its value consumed, *i advanced); 0 when it is not; -1 after
 * printing an error (a missing or too long value). */
int ig__cli_opt_arg(int argc, char **argv, int *i, ig_cli_opt *o);
void ig__cli_opt_apply(const ig_cli_opt *o, ingot_build_options *bo);

#endif
