/* cli.h -- the subcommands of the `ingot` tool; each lives in cmd_<name>.c and returns the exit code. */
#ifndef INGOT_CLI_H
#define INGOT_CLI_H

#include "ingot.h"
#include "core/core.h" /* ig__now_ms */

#include <stdio.h>

int ig__cmd_inspect(int argc, char **argv);
int ig__cmd_run(int argc, char **argv);
int ig__cmd_plan(int argc, char **argv);
int ig__cmd_bench(int argc, char **argv);
int ig__cmd_build(int argc, char **argv);
int ig__cmd_profile(int argc, char **argv);
int ig__cmd_device(int argc, char **argv);
int ig__cmd_sweep(int argc, char **argv);

/* Shared helpers of the subcommands */
/* Parse a positive integer option value; prints an error and returns false on garbage. */
int ig__cli_parse_i64(const char *opt, const char *s, int64_t min, int64_t *out);
/* n bytes of random input of dtype t from *seed (malloc'ed; NULL when out of memory). */
void *ig__cli_random_bytes(ingot_dtype t, size_t bytes, uint64_t *seed);
/* A byte count: digits with an optional binary suffix K, M, G (KiB, MiB, GiB). */
int ig__cli_parse_bytes(const char *opt, const char *s, uint64_t *out);
/* Sorts the n timings v ascending (for percentiles after) and returns their median; 0 when n <= 0. */
double ig__cli_median(double *v, int64_t n);
/* "[batch,3,224,224]" for a tensor info */
void ig__cli_format_shape(const ingot_tensor_info *t, char *buf, size_t n);

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

/* ---- cli_open.c: open a model, bind its input shapes, build an engine ------------------------------
 *
 * Every subcommand goes through one ig_cli_target: ig__cli_open (runtime + model), ig__cli_bind
 * (--batch / --shapes / shapes of input files onto the model's inputs), ig__cli_build (the engine),
 * ig__cli_close. Today the target is an ONNX model; an engine file (.ingot) opens with model == NULL
 * and its engine already built, and the input queries below answer from whichever is there. */

#define IG_CLI_MAX_SHAPES 64

/* One --shapes entry: NAME:D0xD1x... (name and dims point into argv). */
typedef struct ig_cli_shape {
    const char *name;
    size_t name_len;
    int32_t rank;
    int64_t dims[INGOT_MAX_RANK];
} ig_cli_shape;

/* The shape options, as given: --batch N and --shapes NAME:DIMS[,NAME:DIMS] (repeatable). */
typedef struct ig_cli_shapes {
    int64_t batch;            /* 0: --batch not given */
    const char *rebuild_from; /* --rebuild-on-mismatch MODEL.onnx: rebuild a stale engine file from it */
    int n_shapes;
    ig_cli_shape shapes[IG_CLI_MAX_SHAPES]; /* [n_shapes] */
} ig_cli_shapes;

#define IG_CLI_SHAPES_USAGE                                                                                 \
    "  --batch N          bind each input's symbolic leading dim (the batch) to N; other dims are left\n"   \
    "                     alone (a dim named by the same symbol is the same dim and follows)\n"             \
    "  --shapes N:DIMS    whole input shapes, e.g. --shapes input_ids:4x128,mask:4x128 (repeatable);\n"     \
    "                     the symbols they fix apply to every input using them\n"                           \
    "  --rebuild-on-mismatch MODEL.onnx  an engine file built for another GPU or version is rebuilt from\n" \
    "                     MODEL.onnx and written back\n"

/* 1 when argv[*i] is --batch, --shapes or --rebuild-on-mismatch (value consumed, *i advanced), 0 when
 * not, -1 after printing an error (missing or malformed value). */
int ig__cli_shapes_arg(const char *cmd, int argc, char **argv, int *i, ig_cli_shapes *s);

typedef struct ig_cli_target {
    const char *cmd;  /* "ingot run": prefix of messages */
    const char *path; /* the file opened */
    ingot_runtime *rt;
    ingot_model *model;   /* the ONNX model; NULL for an engine file */
    ingot_engine *engine; /* after ig__cli_build */
    ig_cli_shapes shapes; /* filled by the subcommand's argument loop (ig__cli_shapes_arg) */
    int64_t n_inputs;
    ingot_tensor_info *decl; /* [n_inputs] the inputs as declared, before any binding */
    int64_t batch;           /* after ig__cli_bind: the leading dim of the first input of rank >= 1 as
                                bound (1 when none or still symbolic): the batch a run really has */
    char bound[1024];        /* after ig__cli_bind: what it bound beyond the given shapes ("" if nothing) */
    /* an engine file: the shapes ig__cli_bind resolved (the engine's default shapes, then --shapes and
     * --batch over them); [n_inputs], rank -1 until bound */
    int32_t *eng_rank;
    int64_t (*eng_dims)[INGOT_MAX_RANK];
    const char *rebuild_from;                /* --rebuild-on-mismatch MODEL.onnx: rebuild a stale engine file from it */
    const ingot_build_options *rebuild_opts; /* the options of that rebuild (NULL: the defaults) */
} ig_cli_target;

/* 1 for an engine file (by its first bytes), 0 for anything else (an ONNX model). */
int ig__cli_is_engine_file(const char *path);

void ig__cli_target_init(ig_cli_target *t, const char *cmd);
/* Create the runtime and load path: an ONNX model, or an engine file (then model stays NULL and the
 * engine is loaded; with --rebuild-on-mismatch, an engine file built for another machine or version is
 * rebuilt from that ONNX model and written back). Prints the library's message on failure and returns
 * 0; the runtime stays (t->rt) so the caller can look at ingot_runtime_errcode. */
int ig__cli_open(ig_cli_target *t, const char *path);

/* ig__cli_bind flags */
#define IG_CLI_BIND_DEFAULT_1 1 /* without --batch, bind symbolic leading dims to 1 (and say so) */
#define IG_CLI_BIND_CONCRETE  2 /* every input must end with a concrete shape: an unbound dim is an error */
#define IG_CLI_BIND_QUIET     4 /* keep the "bound ..." line in t->bound instead of printing it on stderr */

/* Bind the input shapes on the model and infer it: the shapes of `given` tensors (input files, matched
 * by name; may be NULL), then --shapes, then --batch for the remaining symbolic leading dims (or 1 with
 * IG_CLI_BIND_DEFAULT_1). A symbol takes one value: what fixes it for one input fixes it for all.
 * Says on stderr which dims it bound beyond the shapes given (unless IG_CLI_BIND_QUIET), warns when
 * --batch found no symbolic leading dim, and fails (printing why, returning 0) on an unknown input
 * name, a contradiction, or with IG_CLI_BIND_CONCRETE a dim left symbolic (naming input and dim).
 * May be called again (with other flags): every call starts from the declared shapes. */
int ig__cli_bind(ig_cli_target *t, int flags, const ingot_tensor *given, int64_t n_given);
/* Build t->engine with bo (prints the library's message and returns 0 on failure). An engine file's
 * engine is already there: its own options apply, and a bo asking for another backend or precision is
 * an error. */
int ig__cli_build(ig_cli_target *t, const ingot_build_options *bo);
/* Destroy what the target holds (engine, model, runtime) and the declared-input copy. */
void ig__cli_close(ig_cli_target *t);

/* The inputs and outputs of the target, bound shapes included. */
int64_t ig__cli_input_count(const ig_cli_target *t);
int64_t ig__cli_output_count(const ig_cli_target *t);
ingot_status ig__cli_input_info(const ig_cli_target *t, int64_t i, ingot_tensor_info *out);
ingot_status ig__cli_output_info(const ig_cli_target *t, int64_t i, ingot_tensor_info *out);
/* name, dtype, rank, dims and bytes of input i at its bound shape (data NULL); 0 if a dim is symbolic. */
int ig__cli_input_tensor(const ig_cli_target *t, int64_t i, ingot_tensor *out);

/* Print "<cmd>: INGOT_ERR_X: message" for the runtime's last failure. */
void ig__cli_print_rt_error(const ig_cli_target *t, const char *what);

/* ---- cmd_profile.c, cmd_device.c: what `ingot profile` and `ingot sweep` share (docs/DIAGNOSE.md) ---- */
struct ig_diag_report;
struct ig_diag_ceilings;
typedef struct ig_profile_opts {
    const char *cmd, *path;
    int fp16, cpu, cuda, remeasure, quiet;
    int64_t workspace; /* bytes; -1: the default */
    int64_t mem_limit; /* bytes the model may have (capacity judged against it); 0: what is free */
    ig_cli_opt opt;
    ig_cli_shapes shapes;
} ig_profile_opts;
/* Build, run and profile the model once into r (ig__profile_free releases it). Returns 0, 1 on failure
 * (printed), or 4 when it did not fit in memory (the message in oom, nothing printed). */
int ig__profile_run(const ig_profile_opts *o, struct ig_diag_report *r, char *oom, size_t n_oom);
void ig__profile_free(struct ig_diag_report *r);
/* The GPU's ceilings from the cache or measured now and cached (cmd_device.c); 0 after printing why. */
int ig__cli_gpu_ceilings(const char *cmd, int remeasure, struct ig_diag_ceilings *c);

#endif
