/*
 * pw.h -- pointwise programs: the small SSA programs of ingot.Pointwise and of the epilogues of
 * ingot.FusedConv / ingot.FusedMatMul (docs/OPTIMIZER.md, "Pointwise programs").
 *
 * One list of op codes serves the IR, the CPU interpreter and the CUDA elementwise kernel, which
 * decodes the same numbers (src/cuda/kernels/kernels.h includes this header; plain C, no ingot types).
 */
#ifndef INGOT_OPS_PW_H
#define INGOT_OPS_PW_H

/* X(NAME, arity): arity counts register operands (LOAD reads an input instead). Append only: the
 * numbers are stored in engine files and decoded by the CUDA kernel. */
#define IG_PW_CODES(X)                                                         \
    X(LOAD, 0)                                                                 \
    X(COPY, 1)                                                                 \
    X(NEG, 1)                                                                  \
    X(ABS, 1)                                                                  \
    X(RECIP, 1)                                                                \
    X(SQRT, 1)                                                                 \
    X(EXP, 1)                                                                  \
    X(LOG, 1)                                                                  \
    X(ERF, 1)                                                                  \
    X(TANH, 1)                                                                 \
    X(SIGMOID, 1)                                                              \
    X(RELU, 1)                                                                 \
    X(LEAKY, 1)       /* k = alpha */                                          \
    X(CLIP, 1)        /* k = min, k2 = max */                                  \
    X(HARDSIGMOID, 1) /* k = alpha, k2 = beta */                               \
    X(HARDSWISH, 1)                                                            \
    X(GELU_ERF, 1)                                                             \
    X(GELU_TANH, 1)                                                            \
    X(SOFTPLUS, 1)                                                             \
    X(MISH, 1)                                                                 \
    X(ISNAN, 1)                                                                \
    X(NOT, 1)                                                                  \
    X(FLOOR, 1)                                                                \
    X(CEIL, 1)                                                                 \
    X(ROUND, 1)                                                                \
    X(TO_F16, 1)  /* round to fp16 and back (a Cast inside an fp32 program) */ \
    X(TO_BF16, 1) /* round to bf16 and back */                                 \
    X(TO_INT, 1)  /* truncate toward zero (NaN -> 0, saturating) */            \
    X(TO_BOOL, 1) /* != 0 */                                                   \
    X(ADD, 2)                                                                  \
    X(SUB, 2)                                                                  \
    X(MUL, 2)                                                                  \
    X(DIV, 2)                                                                  \
    X(POW, 2)                                                                  \
    X(MOD, 2)  /* integer Mod (sign of the divisor), fmod = 0 */               \
    X(FMOD, 2) /* C fmod (sign of the dividend) */                             \
    X(MAX, 2)                                                                  \
    X(MIN, 2)                                                                  \
    X(PRELU, 2)                                                                \
    X(EQ, 2)                                                                   \
    X(GT, 2)                                                                   \
    X(LT, 2)                                                                   \
    X(GE, 2)                                                                   \
    X(LE, 2)                                                                   \
    X(AND, 2)                                                                  \
    X(OR, 2)                                                                   \
    X(WHERE, 3)  /* a != 0 ? b : c */                                          \
    X(MULADD, 3) /* a * b + c */

enum ig_pw_code {
#define IG_PW_X_(name, arity) IG_PW_##name,
    IG_PW_CODES(IG_PW_X_)
#undef IG_PW_X_
        IG_PW_CODE_COUNT
};

/* Limits of one program: the CUDA elementwise kernel's (kernels.h checks they agree). */
#define IG_PW_MAX_IN  6  /* inputs */
#define IG_PW_MAX_OPS 16 /* instructions */
#define IG_PW_NREG    6  /* registers, loads included */

#endif /* INGOT_OPS_PW_H */
