/* main: the framed binary's entry point. */
#include "common/common.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("framed %s\n", FRAMED_VERSION);
    return 0;
}
