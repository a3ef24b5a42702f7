/* reader.c -- PLACEHOLDER */
#include "onnx.h"
