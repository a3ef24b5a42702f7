/* infer.c -- PLACEHOLDER (lead is writing the driver) */
#include "op.h"
