/* api.c -- PLACEHOLDER */
#include "../core/core.h"
