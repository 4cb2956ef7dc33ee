/* PLACEHOLDER until the hwcheck work lands. */
#include <stdio.h>

#include "sim/err.h"

int main(void)
{
    fprintf(stderr, "hwcheck: not implemented yet\n");
    return ERR_SYSTEM;
}
