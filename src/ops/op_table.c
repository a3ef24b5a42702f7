/* op_table.c -- collects every descriptor named in op_list.h, and looks ops up by name and opset. */
#include "op.h"

const ig_op_def *const ig__op_table[IG_OP_COUNT] = {
#define INGOT_OP(onnx_name, cname, family) [IG_OP_##cname] = &ig__op_##cname,
#include "op_list.h"
#undef INGOT_OP
};

static const char *const op_names[] = {
#define INGOT_OP(onnx_name, cname, family) #onnx_name,
#include "op_list.h"
#undef INGOT_OP
};
_Static_assert(sizeof op_names / sizeof op_names[0] == IG_OP_COUNT, "op_list.h and the table disagree");

static bool is_default_domain(const char *d) { return !d || !d[0] || !strcmp(d, "ai.onnx"); }

const ig_op_def *ig__op_find(const char *domain, const char *op_type, int64_t opset, bool *too_old)
{
    if (too_old) *too_old = false;
    for (int i = 0; i < IG_OP_COUNT; i++) {
        const ig_op_def *d = ig__op_table[i];
        if (strcmp(op_names[i], op_type) != 0) continue;
        if (is_default_domain(domain) != is_default_domain(d->domain)) continue;
        if (!is_default_domain(domain) && strcmp(domain, d->domain) != 0) continue;
        if (opset < d->since) {
            if (too_old) *too_old = true;
            return NULL;
        }
        return d;
    }
    /* the ingot domain also carries ONNX ops at a later opset than the model's (an engine file's graph,
     * src/onnx/export.c): ONNX's definition, whatever the opset */
    if (domain && !strcmp(domain, "ingot"))
        for (int i = 0; i < IG_OP_COUNT; i++)
            if (!strcmp(op_names[i], op_type) && is_default_domain(ig__op_table[i]->domain)) return ig__op_table[i];
    return NULL;
}
