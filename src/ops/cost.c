/* cost.c -- PLACEHOLDER */
#include "op.h"
