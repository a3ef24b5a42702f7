/* main.c -- PLACEHOLDER */
#include "ingot.h"
int main(void) { return 0; }
