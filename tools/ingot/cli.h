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

#endif
