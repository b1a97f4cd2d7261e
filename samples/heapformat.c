/* Formats built at run time in exactly-sized heap buffers: scanf and printf read a format to its
 * NUL and no further, so a format that ends at its object's last byte is not an overflow. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *exact(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    return p;
}

int main(void)
{
    char in[8] = {0};
    if (fread(in, 1, 3, stdin) == 0)
        return 3;
    char *scan = exact(in[0] == 'x' ? "x%x" : "%d");
    char *show = exact(in[0] == 'x' ? "hex %x\n" : "dec %d\n");
    int v = -1;
    int got = sscanf(in, scan, &v);
    if (got != 1)
        return 2;
    printf(show, v);
    free(scan);
    free(show);
    return v > 5;
}
