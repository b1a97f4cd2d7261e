/* A library call that fails with errno (unsetenv of an empty name: EINVAL), run from a blank state
 * at main, which has no errno location. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    int r = unsetenv("");
    printf("unset %d\n", r);
    return 0;
}
