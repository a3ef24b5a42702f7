/* pw.c -- pointwise programs (placeholder until the interpreter lands). */
#include "pw.h"
#include "op.h"
