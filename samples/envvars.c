/* Values passed through the environment: setenv (with and without overwrite), putenv of a
 * buffer the program changes afterwards, unsetenv, clearenv and names setenv refuses. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char slot[] = "SLOT=?";

int main(void)
{
    char in[4] = {0};
    if (fread(in, 1, 3, stdin) != 3)
        return 9;
    char first[2] = {in[0], 0};
    setenv("FIRST", first, 1);
    setenv("FIRST", in[1] == 'k' ? "kept" : "other", in[1] == 'k' ? 0 : 1);
    putenv(slot);
    slot[5] = in[2];                                /* putenv keeps the caller's string */
    const char *f = getenv("FIRST"), *s = getenv("SLOT");
    int bad = setenv("A=B", "x", 1) == -1 && errno == EINVAL;
    printf("%s %s %d\n", f, s, bad);
    if (strcmp(f, "q") == 0 && s[0] == 'z')
        return 1;
    unsetenv("FIRST");
    if (in[0] == 'c')
        clearenv();
    printf("%s %s\n", getenv("FIRST") ? "set" : "unset", getenv("SLOT") ? "slot" : "gone");
    return 0;
}
