/*
 * kstep.c -- the steps of the kernel families (IG_CU_KSTEP_KINDS in cuda_internal.h): reductions, ...
 * They share one layout (ig_cu_kstep: tensor ids and a union of the kernels' argument structs), so the
 * executor plans and launches every one of them through the three functions here, and a new kernel
 * family touches only this file, its lowering and its .cu file. The order of the tensor ids per kind is
 * fixed here, in ig__cu_kstep_bind.
 */
#include "cuda_internal.h"

bool ig__cu_is_kstep(int kind) { return kind >= IG_ST_REDUCTION && kind < IG_ST_KIND_COUNT; }

int ig__cu_kstep_tensors(const ig_cu_step *s, int32_t *ids)
{
    int n = 0;
    if (!ig__cu_is_kstep(s->kind)) return 0;
    for (int i = 0; i < IG_KSTEP_MAX_T; i++)
        if (s->u.k.t[i] >= 0) ids[n++] = s->u.k.t[i];
    return n;
}

#define PTR(i) (s->u.k.t[(i)] >= 0 ? P[s->u.k.t[(i)]] : NULL)

ig_cu_kstep ig__cu_kstep_bind(const ig_cu_step *s, void *const *P)
{
    ig_cu_kstep k = s->u.k;
    switch (s->kind) {
    case IG_ST_REDUCTION:
        k.a.red.x = PTR(0);
        k.a.red.y = PTR(1);
        k.a.red.part = PTR(2);
        break;
    case IG_ST_RESIZE:
        k.a.resize.x = PTR(0);
        k.a.resize.y = PTR(1);
        k.a.resize.tab = PTR(2);
        break;
    case IG_ST_GROUPNORM:
        k.a.gn.x = PTR(0);
        k.a.gn.y = PTR(1);
        k.a.gn.part = PTR(2);
        k.a.gn.stats = k.a.gn.part ? (char *)k.a.gn.part + (size_t)(k.a.gn.n * k.a.gn.c * k.a.gn.split) * 16 : NULL;
        k.a.gn.scale = PTR(3);
        k.a.gn.bias = PTR(4);
        break;
    case IG_ST_INDEX:
        k.a.ix.x = PTR(0);
        k.a.ix.idx = PTR(1);
        k.a.ix.upd = PTR(2);
        k.a.ix.y = PTR(3);
        break;
    case IG_ST_SELECT:
        k.a.sel.x = PTR(0);
        k.a.sel.values = PTR(1);
        k.a.sel.y = PTR(2);
        k.a.sel.idx = PTR(3);
        break;
    default: break;
    }
    return k;
}

cudaError_t ig__cu_kstep_launch(const ig_cu_step *s, void *const *P, cudaStream_t stream)
{
    ig_cu_kstep k = ig__cu_kstep_bind(s, P);
    switch (s->kind) {
    case IG_ST_REDUCTION: return ingot_cuda_reduction(&k.a.red, stream);
    case IG_ST_RESIZE: return ingot_cuda_resize(&k.a.resize, stream);
    case IG_ST_GROUPNORM: return ingot_cuda_groupnorm(&k.a.gn, stream);
    case IG_ST_INDEX: return ingot_cuda_index(&k.a.ix, stream);
    case IG_ST_SELECT: return ingot_cuda_select(&k.a.sel, stream);
    default: return cudaErrorInvalidValue;
    }
}
