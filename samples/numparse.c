/* The strtol family as C11 7.22.1.4 describes it, on stdin: leading white space, a sign, base 0's
   0x/0 prefixes, the end pointer, saturation with ERANGE, strtoul's negation, atoi. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void) {
    char buf[24] = {0};
    if (read(0, buf, sizeof buf - 1) < 0) return 9;
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 0);
    if (end == buf) {                                  /* no subject sequence */
        unsigned long u = strtoul(buf + 1, &end, 16);
        printf("none %lu %d\n", u % 3, atoi(buf + 1) & 3);
        return 1;
    }
    if (errno == ERANGE) { puts(v == LONG_MAX ? "too big" : "too small"); return 2; }
    long used = end - buf;
    if (buf[0] == ' ' || buf[0] == '\t' || buf[0] == '\n') printf("space ");
    if (v < 0) printf("neg ");
    if (v >= 16 && v < 64) printf("hexish ");
    printf("%ld %ld\n", v % 5, used);
    return v == 8 ? 3 : 0;
}
