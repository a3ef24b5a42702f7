/*
 * pw.h -- pointwise programs: the small SSA programs of ingot.Pointwise and of the epilogues of
 * ingot.FusedConv / ingot.FusedMatMul (docs/OPTIMIZER.md, "Pointwise programs").
 *
 * One list of op codes serves the IR, the CPU interpreter and the CUDA elementwise kernel, which
 * decodes the same numbers (src/cuda/kernels/kernels.h includes this header). The first part (codes,
 * limits, the program and register-form structs) is plain C the CUDA compiler reads too; the
 * functions after it are for the host (they need ingot's graph and tensor types).
 *
 * Two forms of a program:
 *   - SSA (ig_pw_prog, what the IR stores): instruction j computes value n_in + j from operands that
 *     name program inputs (0 .. n_in-1), earlier instructions (n_in .. n_in+j-1), nothing (-1) or the
 *     instruction's constant k (-2). The result is the last instruction (input 0 when there is none).
 *   - registers (ig_pw_reg_op, what the CUDA kernel runs): LOAD puts an input in a register at its
 *     first use, every other op reads registers or k and writes register dst (ig__pw_to_regs).
 *
 * Semantics of each code (fp32 programs compute in float, int_math ones in int64), as the CPU kernels
 * of the corresponding ONNX ops compute them (unary.c, binary.c): comparisons, AND/OR/NOT/ISNAN and
 * TO_BOOL give 1 or 0; a value is "true" when != 0 (NaN is true). MAX/MIN propagate NaN; MOD is
 * Python's remainder (sign of the divisor), FMOD C's fmod (sign of the dividend); integer DIV truncates,
 * and division or MOD by zero gives 0. POW by exactly 2 is x * x. TO_INT truncates toward zero with
 * NaN -> 0 and saturation at the int64 range (identity in int programs). FLOOR/CEIL/ROUND (half to
 * even) are identities in int programs. In int programs k and k2 are converted to int64 saturating.
 * SIN .. ATANH are libm's fp32 functions (the calls unary.c makes); SIGN is exact on integers; ELU,
 * SELU, CELU, SOFTSIGN, THRELU, SHRINK follow the ONNX formulas (exp through expm1); ISINF gives 1 for
 * +inf when k != 0 and for -inf when k2 != 0.
 */
#ifndef INGOT_OPS_PW_H
#define INGOT_OPS_PW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
    X(MULADD, 3) /* a * b + c */                                               \
    X(SIN, 1)                                                                  \
    X(COS, 1)                                                                  \
    X(TAN, 1)                                                                  \
    X(ASIN, 1)                                                                 \
    X(ACOS, 1)                                                                 \
    X(ATAN, 1)                                                                 \
    X(SINH, 1)                                                                 \
    X(COSH, 1)                                                                 \
    X(ASINH, 1)                                                                \
    X(ACOSH, 1)                                                                \
    X(ATANH, 1)                                                                \
    X(SIGN, 1) /* -1, 0 or 1 (NaN stays) */                                    \
    X(ELU, 1)  /* k = alpha */                                                 \
    X(SELU, 1) /* k = alpha, k2 = gamma */                                     \
    X(CELU, 1) /* k = alpha */                                                 \
    X(SOFTSIGN, 1)                                                             \
    X(THRELU, 1) /* ThresholdedRelu: k = alpha */                              \
    X(SHRINK, 1) /* k = bias, k2 = lambd */                                    \
    X(ISINF, 1)  /* k = detect_positive, k2 = detect_negative (0 or 1) */

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

/* SSA operands besides value numbers. */
#define IG_PW_NONE (-1) /* no operand */
#define IG_PW_K    (-2) /* the instruction's constant k */

/* Register-form operands besides registers 0 .. IG_PW_NREG-1. */
#define IG_PW_REF_K    IG_PW_NREG /* the op's constant k */
#define IG_PW_REF_NONE 255

/* Register operands of a code (-1 for a number outside the list). */
static inline int ig__pw_arity(int code)
{
    switch (code) {
#define IG_PW_X_(name, arity) \
    case IG_PW_##name: return arity;
        IG_PW_CODES(IG_PW_X_)
#undef IG_PW_X_
    default: return -1;
    }
}

/* One SSA instruction: code, operands a, b, c (value numbers, IG_PW_NONE or IG_PW_K), constants. */
typedef struct ig_pw_inst {
    uint8_t code;
    int16_t a, b, c;
    float k, k2;
} ig_pw_inst;

typedef struct ig_pw_prog {
    int32_t n_in, n_ops;
    bool int_math; /* compute in int64 (every input and the output integer or bool) instead of fp32 */
    ig_pw_inst op[IG_PW_MAX_OPS];
} ig_pw_prog;

/* One register-form op: LOAD reads input a into dst; any other op reads registers / IG_PW_REF_K /
 * IG_PW_REF_NONE in a, b, c and writes register dst. */
typedef struct ig_pw_reg_op {
    uint8_t code, a, b, c, dst;
    float k, k2;
} ig_pw_reg_op;

#ifndef __CUDACC__
#include "op.h"

/* ---- building programs ---- */

/* An empty program of n_in inputs (its result is input 0 until an instruction is added). */
void ig__pw_init(ig_pw_prog *p, int32_t n_in, bool int_math);
/* Append one instruction; its value number, or -1 when the program already has IG_PW_MAX_OPS. No other
 * check: ig__pw_check validates. */
int16_t ig__pw_emit(ig_pw_prog *p, int code, int16_t a, int16_t b, int16_t c, float k, float k2);
/* The value number holding the program's result: the last instruction's, input 0 when there is none. */
int16_t ig__pw_result(const ig_pw_prog *p);
/* Everything ig__pw_decode checks of a program in memory (codes, arity, references, limits, codes
 * allowed in int programs); the message is prefixed by `what` (e.g. "node 'x' (Pointwise)"). */
ingot_status ig__pw_check(const ig_pw_prog *p, const char *what, ig_err *err);
/* Can code run exactly in an int64 program? */
bool ig__pw_code_int_ok(int code);

/* ---- the attributes: `<prefix>ops` (INTS, code a b c per instruction), `<prefix>params` (FLOATS,
 * k k2 per instruction), `int_math` (INT 0/1, absent 0) ---- */

/* Read and validate node n's program of n_in inputs (prefix "" for Pointwise, "epilogue_" for
 * FusedConv/FusedMatMul). Absent ops: a program of no instructions. Every malformed attribute (wrong
 * type, counts, a code out of range, an operand that refers forward or outside the inputs, too many
 * instructions or inputs) fails with INGOT_ERR_MODEL_INVALID naming the node, the attribute and the
 * instruction: the attributes come from files. */
ingot_status ig__pw_decode(const ig_graph *g, const ig_node *n, const char *prefix, int32_t n_in, ig_pw_prog *p,
                           ig_err *err);
/* Write p's `<prefix>ops` and `<prefix>params` into attribute slots slot and slot + 1 of n (int_math is
 * the caller's: it is one attribute of the node, not of the program). */
ingot_status ig__pw_encode(ig_graph *g, ig_node *n, int32_t slot, const char *prefix, const ig_pw_prog *p, ig_err *err);

/* ---- translating ONNX elementwise nodes (the optimizer's pointwise passes and the CUDA backend) ---- */

/* Value v is a build-time constant of exactly one element whose value k holds exactly (float k):
 * it can be folded into an instruction's k. */
bool ig__pw_scalar_const(const ig_graph *g, int32_t v, double *k);
/* Can node n (inferred) join a chain of this math type (the optimizer's question)? The op is one of Sqrt
 * Erf Exp Log Neg Abs Reciprocal Tanh Sigmoid Relu LeakyRelu Clip (constant bounds) HardSigmoid HardSwish
 * Gelu Softplus Mish IsNaN Not Cast Add Sub Mul Div Pow Mod Max Min PRelu Equal Greater Less
 * GreaterOrEqual LessOrEqual And Or Where Identity Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh
 * Floor Ceil Round Sign Elu Selu Celu Softsign ThresholdedRelu Shrink IsInf; in fp32 programs every input
 * and output is float32/16, bfloat16 or bool (a Cast's input may also be an integer); in int programs every one is an
 * integer (not uint64) or bool, and the op is exact on integers mid-chain: Max Min Mod Relu Clip,
 * comparisons, And Or Not Where Sign, widening Casts and Identity on any integer type; Add Sub Mul Div Neg
 * Abs Pow PRelu only on int32/int64 (narrower types wrap where int64 does not). Shapes are the caller's
 * business. */
bool ig__pw_node_ok(const ig_graph *g, const ig_node *n, bool int_math);
/* Append node n's instructions to p (whose int_math says the math type). in_ref[i]: the value number
 * holding input i, or IG_PW_K when input i is a scalar constant (ig__pw_scalar_const) to fold into k.
 * Translates any node of the ops above whose attributes are valid, also where ig__pw_node_ok says no
 * (the CUDA backend runs single nodes: a narrowing Cast or an int8 Add is exact as a program's last
 * node, and a Clip with bounds known only at run time becomes MAX/MIN of those inputs). Emits at least
 * one instruction (Max of three inputs: two MAXes; two different constants in one instruction: a COPY
 * of one first). *result: the value holding the node's output. On failure (an op or attribute it
 * cannot translate, a bad reference, a "constant" that is not one, more than IG_PW_MAX_OPS
 * instructions) p is unchanged and the message names the node. */
ingot_status ig__pw_append_node(const ig_graph *g, const ig_node *n, const int16_t *in_ref, ig_pw_prog *p,
                                int16_t *result, ig_err *err);

/* ---- register allocation (shared with the CUDA backend) ---- */

/* The register form of p into ops[max_ops]: returns the op count and the register holding the result,
 * or -1 when more than IG_PW_NREG registers or more than max_ops ops would be needed. Instructions the
 * result does not depend on are dropped; a register is free after its value's last use (so it can be
 * that instruction's destination). A program of no instructions is one LOAD of input 0. */
int ig__pw_to_regs(const ig_pw_prog *p, ig_pw_reg_op *ops, int max_ops, int *result_reg);
/* p fits IG_PW_NREG registers and IG_PW_MAX_OPS + IG_PW_MAX_IN register ops. */
bool ig__pw_regs_ok(const ig_pw_prog *p);

/* ---- the CPU interpreter ---- */

/* Does t broadcast (numpy rules, one way) to rank/dims? */
bool ig__pw_broadcasts(const ig_tensor *t, int32_t rank, const int64_t *dims);
/* out = p(in[0], ..., in[n_in-1]) over out's shape, each input broadcast to it (the caller checks with
 * ig__pw_broadcasts), read in any dtype and converted on load (bool as 0/1, ints exactly in int
 * programs); the result is stored in out's dtype as Cast converts (fp16/bf16 to nearest even, ints by
 * truncation with NaN -> 0, saturating). out may share its bytes with an input of out's shape (the
 * fused ops apply their epilogue in place). Threaded over pool (NULL: serial). */
void ig__pw_apply(struct ig_pool *pool, const ig_pw_prog *p, const ig_tensor *const *in, int32_t n_in, ig_tensor *out);

/* ---- printing ---- */

/* "ADD", "GELU_TANH", ...; "?" outside the list. */
const char *ig__pw_code_name(int code);
/* One line, e.g. "x0,x1 -> t0=ADD(x0,x1) t1=CLIP(t0;0,6)" ("[int] " first for int programs); returns
 * the length the whole text needs, as snprintf. */
int ig__pw_format(const ig_pw_prog *p, char *buf, size_t n);

#endif /* __CUDACC__ */

#endif /* INGOT_OPS_PW_H */
