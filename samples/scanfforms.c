/* sscanf's directives as C99 (7.19.6.2) and glibc define them: ordinary bytes that must match,
   white space, %n, widths, * (no assignment), %[...] sets, %c, %s, %i's bases, %% and the return
   value (EOF when the input ends before the first assignment); one call through vsscanf. Against glibc natively. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
static int scan(const char *s, const char *fmt, ...) {     /* through a va_list: vsscanf */
    va_list ap;
    va_start(ap, fmt);
    int r = vsscanf(s, fmt, ap);
    va_end(ap);
    return r;
}
int main(void) {
    char buf[8] = {0};
    if (read(0, buf, 4) < 0) return 9;
    int a = -7, b = -7, n = -7;
    int r1 = sscanf(buf, "%d-%2x%n", &a, &b, &n);
    char c = '?', set[8] = "?";
    int r2 = sscanf(buf, " %c%[0-7x]", &c, set);
    int i = -7, k = -7;
    int r3 = scan(buf, "%*d%i", &i);
    char two[4] = "?";
    int r4 = sscanf(buf, "%2s%%%n", two, &k);
    int v = -7, m = -7;
    int r5 = sscanf(buf, "%i%n", &v, &m);      /* glibc consumes the 'x' of a lone "0x" */
    printf("%d %d %d %d|%d %c %s|%d %d|%d %s %d|%d %d %d\n", r1, a, b, n, r2, c, set, r3, i, r4, two, k, r5, v, m);
    return (r1 + 1) * 4 + r3 + 1;
}
