/* opt.c -- the pass manager (placeholder until the passes land). */
#include "opt.h"

ingot_status ig__optimize(ig_graph *g, ig_arena *fold_arena, const ig_opt_options *o, ig_opt_report *rep, ig_err *err)
{
    (void)g;
    (void)fold_arena;
    (void)o;
    (void)err;
    if (rep) memset(rep, 0, sizeof *rep);
    return INGOT_OK;
}

void ig__opt_report_free(ig_opt_report *rep)
{
    if (!rep) return;
    for (int32_t i = 0; i < rep->n_passes; i++) ig__free(rep->passes[i].removed_values);
    ig__free(rep->passes);
    memset(rep, 0, sizeof *rep);
}

int32_t ig__opt_pass_count(void) { return 0; }
const char *ig__opt_pass_name(int32_t i)
{
    (void)i;
    return NULL;
}
