/*
 * opt.h -- the optimizer: graph rewrites between shape inference and the backends (docs/OPTIMIZER.md).
 *
 * ig__optimize runs the passes of opt.c's list in order over an inferred graph whose input shapes are
 * the declared (possibly symbolic) ones, so every rewrite holds for every shape the graph will run
 * with. After each pass that changed something the graph is compacted, sorted, re-inferred and
 * verified; a pass whose result fails is an INGOT_ERR_INTERNAL naming the pass and the node. opt
 * depends on ir and ops only: no backend, no CUDA header.
 */
#ifndef INGOT_OPT_H
#define INGOT_OPT_H

#include "../ops/op.h"

typedef struct ig_opt_options {
    bool enabled;            /* false: leave the graph as it is (the report lists every pass as skipped) */
    const char *disable;     /* comma-separated pass names to skip; NULL or "": none. Unknown names fail. */
    size_t fold_max_bytes;   /* largest value the fold pass computes (0: 1 GiB) */
    size_t infer_fold_bytes; /* fold_max_bytes of the re-inference after each pass (0: 64 KiB) */
} ig_opt_options;

typedef struct ig_opt_pass_report {
    const char *name;
    bool skipped;             /* disabled by the options */
    int32_t n_rewrites;       /* fusions or replacements made */
    int32_t n_nodes_removed;  /* nodes before minus nodes after */
    int32_t n_removed_values; /* intermediate tensors that no longer exist ... */
    int32_t *removed_values;  /* [n_removed_values] ... their value ids (ids of the input graph) */
    double ms;
} ig_opt_pass_report;

typedef struct ig_opt_report {
    int32_t n_passes;
    ig_opt_pass_report *passes; /* [n_passes], in the order they ran */
    int32_t nodes_before, nodes_after;
} ig_opt_report;

/* Optimize g in place. g must be sorted and inferred with fold_arena (which later inferences reuse;
 * the caller keeps it as long as g). rep may be NULL; otherwise the caller frees it with
 * ig__opt_report_free. */
ingot_status ig__optimize(ig_graph *g, ig_arena *fold_arena, const ig_opt_options *o, ig_opt_report *rep, ig_err *err);
void ig__opt_report_free(ig_opt_report *rep);

/* The passes, in the order they run (for help texts and option checks). */
int32_t ig__opt_pass_count(void);
const char *ig__opt_pass_name(int32_t i);

#endif /* INGOT_OPT_H */
