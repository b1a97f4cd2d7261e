/* The string copies and their fortified forms. Built at -O0 (plain strcpy, stpcpy, strcat,
 * strncpy, strncat) and as Debian builds (-O2 -D_FORTIFY_SOURCE=2 -fstack-protector-strong:
 * __stpcpy_chk, __strncpy_chk, __strcpy_chk...). Reads up to 6 bytes; everything printed depends
 * only on where the input's first NUL is, so the inputs over {0, 'a'} per byte give every outcome.
 * Copying a string of 4 or more bytes into p.a (4 bytes) spills into p.b at -O0; the fortified
 * build aborts there (glibc's __chk_fail: SIGABRT). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct pair { char a[4]; char b[8]; };

int main(void)
{
    char in[8] = {0};
    ssize_t n = read(0, in, 6);
    if (n < 0)
        return 2;
    in[n] = 0;
    char buf[16];
    char *end = stpcpy(buf, in);
    strcat(buf, "!");
    char pad[8];
    memset(pad, 'x', sizeof pad);
    strncpy(pad, in, sizeof pad);          /* NUL-padded to 8 bytes */
    int zeros = 0;
    for (int i = 0; i < 8; i++)
        zeros += pad[i] == 0;
    char tail[12] = "ab";
    strncat(tail, in, 3);
    struct pair p;
    memset(&p, '-', sizeof p);
    p.b[7] = 0;
    strcpy(p.a, in);
    printf("%zu %d %d %zu %zu\n", strlen(buf), (int)(end - buf), zeros, strlen(tail), strlen(p.b));
    return 0;
}
